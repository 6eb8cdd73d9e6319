//! The host of a server: its CPUs and their memory, as a place to keep and compute things
//! (weights streamed to the GPUs, operators run beside them, optimizer states and steps).
//!
//! Modelled: the CPUs' dense arithmetic peak (FLOP/s, all sockets together, in the format
//! they compute the model's weights in), the host memory's bandwidth (bytes/s, all channels of
//! all sockets) and capacity (bytes). A CPU kernel costs the longer of its arithmetic and its
//! memory traffic at fixed achieved fractions of those peaks ([`CPU_FLOPS_FRACTION`],
//! [`CPU_MEMORY_FRACTION`]). The host is shared evenly by the GPUs of its server that use it
//! ([`HostSpec::share`]).
//!
//! Ignored: NUMA (a socket reading the other socket's memory), caches (every byte of a weight
//! comes from DRAM once per use), thread start-up and synchronisation, and the GPUs' own DMA
//! traffic competing with the CPU for memory bandwidth (PCIe reads are far below DRAM's rate).
//! [`HostSpec::DEFAULT`] is a DGX H100's host (two Xeon Platinum 8480C, DDR5-4800, 2 TB);
//! its arithmetic and sources: docs/CALIBRATION.md#host-side-figures

/// Fraction of the CPUs' vector peak that GEMMs and fused optimizer loops reach (oneDNN and
/// DeepSpeed's CPU Adam reach 50-70% of AVX-512 peak on large operands; we take the middle).
pub const CPU_FLOPS_FRACTION: f64 = 0.6;

/// Fraction of the DRAM peak a streaming kernel reaches (STREAM triad on dual-socket Sapphire
/// Rapids: about 70% of the DDR5 channels' rate).
pub const CPU_MEMORY_FRACTION: f64 = 0.7;

/// One server's host: CPUs and memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSpec {
    /// Dense arithmetic peak of all sockets, FLOP/s.
    pub flops: f64,
    /// Memory bandwidth of all sockets, bytes/s.
    pub memory_bandwidth: f64,
    /// Memory capacity, bytes.
    pub memory_bytes: f64,
}

impl HostSpec {
    /// A dual-socket Xeon Platinum 8480C with 2 TB of DDR5-4800 (DGX H100's host; see the
    /// module documentation for the arithmetic).
    pub const DEFAULT: HostSpec = HostSpec {
        flops: 2.0 * 56.0 * 64.0 * 2.0e9,
        memory_bandwidth: 2.0 * 8.0 * 38.4e9,
        memory_bytes: 2.0e12,
    };

    /// What one of `users` GPUs sharing this host gets of its CPUs and memory bandwidth
    /// (capacity is not divided: callers check the server's total against it).
    pub fn share(&self, users: u32) -> HostSpec {
        let n = users.max(1) as f64;
        HostSpec {
            flops: self.flops / n,
            memory_bandwidth: self.memory_bandwidth / n,
            memory_bytes: self.memory_bytes,
        }
    }

    /// Seconds of a CPU kernel doing `flops` arithmetic over `bytes` of host memory traffic: the
    /// longer of the two at their achieved fractions.
    pub fn seconds(&self, flops: f64, bytes: f64) -> f64 {
        let compute = flops / (self.flops * CPU_FLOPS_FRACTION);
        let memory = bytes / (self.memory_bandwidth * CPU_MEMORY_FRACTION);
        compute.max(memory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_host_is_the_dgx_h100s() {
        let h = HostSpec::DEFAULT;
        assert!((h.flops - 14.336e12).abs() < 1e6);
        assert!((h.memory_bandwidth - 614.4e9).abs() < 1e3);
        assert_eq!(h.memory_bytes, 2.0e12);
    }

    #[test]
    fn a_kernel_is_bound_by_the_slower_of_arithmetic_and_memory() {
        let h = HostSpec::DEFAULT;
        // Decode-like: 1 GB of weights, 2 FLOPs per 2-byte weight: memory-bound.
        let decode = h.seconds(1e9, 1e9);
        assert!((decode - 1e9 / (614.4e9 * 0.7)).abs() < 1e-12);
        // Prefill-like: 1,000 tokens over the same weights: arithmetic-bound.
        let prefill = h.seconds(1e12, 1e9);
        assert!((prefill - 1e12 / (14.336e12 * 0.6)).abs() < 1e-12);
        assert!(prefill > 40.0 * decode);
    }

    #[test]
    fn a_shared_host_gives_each_gpu_its_part() {
        let h = HostSpec::DEFAULT.share(8);
        assert!((h.memory_bandwidth - 76.8e9).abs() < 1e3);
        assert_eq!(h.memory_bytes, 2.0e12);
        assert!(
            (HostSpec::DEFAULT.share(8).seconds(0.0, 1e9)
                - 8.0 * HostSpec::DEFAULT.seconds(0.0, 1e9))
            .abs()
                < 1e-12
        );
    }
}
