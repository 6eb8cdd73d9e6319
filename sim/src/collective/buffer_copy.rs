//! The local pass over one chunk that ends a ring collective, after the ring's last transfer.
//!
//! Between GPUs of different processes NCCL's P2P transport lands every step in a receive buffer
//! on the receiving GPU. Most steps copy out of it behind the transfer, but the ring's last
//! operation has nothing left to send: in all-reduce and all-gather each rank copies its last
//! chunk into the output alone, with the links idle. When the ranks share one process (`direct`)
//! NCCL writes straight into the peers' outputs and the copy disappears; a reduce-scatter reduces
//! its last received chunk with its own into the output in either mode.
//!
//! Modelled: one pass per rank over S/n bytes (S the nccl-tests size, n ranks) at the GPU's
//! streaming rate (`GpuSpec::copy_bandwidth`), 2 bytes of traffic per output byte for a copy, 3
//! for a reduction, once per collective (NCCL's loops each end with their own chunk, and the
//! chunks add up to S/n). Units: bytes, bytes/s, seconds. Ignored: NCCL's few SMs, the tails of
//! non-ring schedules, compression (the pass is over the decompressed output). Sources and
//! figures: docs/NETWORK.md#the-rings-final-copy.

use super::algorithm::Algorithm;
use super::op::CollectiveOp;

/// Seconds of the final local pass of `op` priced with `algorithm` over `ranks` ranks, for a
/// nccl-tests size of `bytes`, on GPUs that stream copies at `copy_bandwidth` bytes/s of traffic.
/// `direct` says the ranks share one process (no receive buffers between them).
pub fn seconds(
    op: CollectiveOp,
    algorithm: Algorithm,
    ranks: u32,
    bytes: f64,
    copy_bandwidth: f64,
    direct: bool,
) -> f64 {
    if algorithm != Algorithm::Ring || ranks < 2 || copy_bandwidth <= 0.0 {
        return 0.0;
    }
    // Bytes of memory traffic per byte of output.
    let traffic = match op {
        CollectiveOp::AllReduce | CollectiveOp::AllGather if !direct => 2.0,
        CollectiveOp::ReduceScatter => 3.0,
        _ => return 0.0,
    };
    let chunk = bytes / ranks as f64;
    chunk * traffic / copy_bandwidth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chunk_at_the_streaming_rate_and_nothing_in_direct_mode() {
        // An H100's copies: 0.85 x 3,350 GB/s.
        let hbm = 0.85 * 3350e9;
        let t = seconds(CollectiveOp::AllReduce, Algorithm::Ring, 8, 8e9, hbm, false);
        // 1 GB read and written.
        assert!((t - 2e9 / hbm).abs() < 1e-12, "{t}");
        assert_eq!(
            seconds(CollectiveOp::AllReduce, Algorithm::Ring, 8, 8e9, hbm, true),
            0.0
        );
        // A reduce-scatter reduces its last chunk in either mode: three bytes per byte.
        let rs = seconds(
            CollectiveOp::ReduceScatter,
            Algorithm::Ring,
            8,
            8e9,
            hbm,
            true,
        );
        assert!((rs - 1.5 * t).abs() < 1e-12);
        // Other algorithms, point-to-point and single ranks pay nothing.
        assert_eq!(
            seconds(CollectiveOp::AllReduce, Algorithm::Tree, 8, 8e9, hbm, false),
            0.0
        );
        assert_eq!(
            seconds(
                CollectiveOp::SendRecv,
                Algorithm::Direct,
                2,
                8e9,
                hbm,
                false
            ),
            0.0
        );
        assert_eq!(
            seconds(CollectiveOp::AllReduce, Algorithm::Ring, 1, 8e9, hbm, false),
            0.0
        );
    }
}
