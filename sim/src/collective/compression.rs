//! Compression of a collective's payload: what it does to the bytes on the wire and what the
//! compressor and decompressor cost in time.
//!
//! The wire carries the payload divided by `ratio`. The codec runs either once (the whole buffer
//! compressed before the collective and decompressed after it) or at every step (`per_hop`: each
//! rank decompresses what it received, reduces, and compresses what it sends on, as ZCCL and
//! C-Coll do). A per-step codec is added to the step's transfer time by default. With `overlap`
//! (NCCLZ's entropy coding inside the NCCL primitives) it is pipelined with the transfer in slices:
//! slice i+1 is coded while slice i is on the wire, so a step of k slices takes the larger of its
//! transfer and its codec time plus one slice of the smaller (a two-stage pipeline's fill,
//! max(a, b) + min(a, b) / k).
//!
//! Seconds; bytes are of the uncompressed payload; throughputs in bytes of uncompressed data per
//! second. Ignored: the codec's competition with the reduction and with other kernels for the
//! GPU's SMs and memory bandwidth, kernel launches per slice, and how compressible the data is
//! (the ratio is a parameter); the slice's share of the step latency is not split out (the
//! transfer time is one stage as priced).

/// NCCL's pipelining unit for the Simple protocol's ring: a channel's 4 MiB buffer
/// (`DEFAULT_BUFFSIZE`) in `NCCL_STEPS` = 8 steps of 512 KiB, two steps a slice
/// (`ALLREDUCE_SLICESTEPS` = `NCCL_STEPS` / 4): 1 MiB (NCCL's src/include/collectives.h and
/// device.h). The default slice of an overlapped codec that lives inside NCCL's primitives.
pub const NCCL_SLICE_BYTES: u64 = 1 << 20;

/// Optional compression of a collective's payload.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Compression {
    /// Original bytes over compressed bytes (> 1 shrinks).
    pub ratio: f64,
    /// Bytes of input compressed per second, and decompressed per second.
    pub compress_bytes_per_s: f64,
    pub decompress_bytes_per_s: f64,
    /// Decompress, reduce and recompress at every step (else once at each end).
    pub per_hop: bool,
    /// Pipeline each step's codec with its transfer in slices of this many (uncompressed) bytes
    /// (NCCLZ); None adds the codec time to the step. Per-hop compression only: a codec run once
    /// at the ends has no step to overlap with (the scenario layer refuses the combination, and
    /// here it is ignored).
    pub overlap_slice_bytes: Option<f64>,
}

impl Compression {
    /// Bytes on the wire per byte of payload.
    pub fn wire_factor(&self) -> f64 {
        1.0 / self.ratio
    }

    /// Seconds to compress and to decompress `bytes` of payload.
    pub fn codec_seconds(&self, bytes: f64) -> f64 {
        bytes / self.compress_bytes_per_s + bytes / self.decompress_bytes_per_s
    }

    /// One step of the collective whose transfer takes `transfer` seconds and whose largest
    /// transfer carries `chunk` bytes of payload: the transfer alone unless the codec runs per
    /// hop; then the transfer plus decompressing and recompressing the chunk, or with overlap
    /// the larger of the two plus one slice of the smaller.
    pub fn step_seconds(&self, transfer: f64, chunk: f64) -> f64 {
        if !self.per_hop {
            return transfer;
        }
        let codec = self.codec_seconds(chunk);
        match self.overlap_slice_bytes {
            None => transfer + codec,
            Some(slice) => {
                let slices = (chunk / slice).ceil().max(1.0);
                transfer.max(codec) + transfer.min(codec) / slices
            }
        }
    }

    /// Seconds added once to a collective of `bytes` (nccl-tests' size): the whole buffer
    /// compressed and decompressed when the codec runs at the ends, nothing when it runs per hop.
    pub fn ends_seconds(&self, bytes: f64) -> f64 {
        if self.per_hop {
            0.0
        } else {
            self.codec_seconds(bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_hop(overlap_slice_bytes: Option<f64>) -> Compression {
        Compression {
            ratio: 8.0,
            compress_bytes_per_s: 100e9,
            decompress_bytes_per_s: 100e9,
            per_hop: true,
            overlap_slice_bytes,
        }
    }

    #[test]
    fn a_step_adds_its_codec_unless_it_overlaps() {
        // 100 MB: 1 ms to compress, 1 ms to decompress.
        let chunk = 100e6;
        assert!((per_hop(None).step_seconds(0.010, chunk) - 0.012).abs() < 1e-12);
        // Ten slices of 10 MB: the transfer (10 ms) hides the codec but for one slice of it.
        let piped = per_hop(Some(10e6)).step_seconds(0.010, chunk);
        assert!((piped - (0.010 + 0.002 / 10.0)).abs() < 1e-12, "{piped}");
        // A codec slower than the wire is what remains, plus one slice of the transfer.
        let slow = per_hop(Some(10e6)).step_seconds(0.001, chunk);
        assert!((slow - (0.002 + 0.001 / 10.0)).abs() < 1e-12, "{slow}");
        // One slice as large as the chunk pipelines nothing: the sum again.
        let whole = per_hop(Some(1e9)).step_seconds(0.010, chunk);
        assert!((whole - 0.012).abs() < 1e-12, "{whole}");
    }

    #[test]
    fn once_at_the_ends_costs_the_whole_buffer_and_no_step() {
        let z = Compression {
            ratio: 4.0,
            compress_bytes_per_s: 200e9,
            decompress_bytes_per_s: 400e9,
            per_hop: false,
            overlap_slice_bytes: None,
        };
        assert_eq!(z.step_seconds(0.5, 1e9), 0.5);
        assert!((z.ends_seconds(1e9) - (0.005 + 0.0025)).abs() < 1e-12);
        assert_eq!(per_hop(None).ends_seconds(1e9), 0.0);
        assert_eq!(z.wire_factor(), 0.25);
    }
}
