//! The local pass over one chunk that ends a ring collective, after the ring's last transfer.
//!
//! Between GPUs of different processes (one process per GPU, as torchrun and mpirun start them)
//! NCCL's P2P transport delivers every step into an intermediate receive buffer on the receiving
//! GPU. Most steps copy out of that buffer while they forward the same data, behind the transfer,
//! but the ring's last operation has nothing left to send: all-reduce and all-gather end with
//! the receive of one chunk, copied from the buffer into the output ("make final copy from buffer
//! to dest", `directRecv` in NCCL's `src/device/all_reduce.h`), and each rank does it alone, after
//! its last transfer, with the links idle. When the ranks share one process (nccl-tests run as
//! `all_reduce_perf -g N`), NCCL's "P2P direct" mode writes straight into the peers' outputs and
//! that copy disappears. A reduce-scatter's last operation reduces the received chunk with the
//! rank's own into the output (`recvReduceCopy`) in either mode.
//!
//! Modelled: that one pass per rank over its chunk of S/n bytes (S the nccl-tests size, n ranks)
//! at the GPU's streaming rate, memory bandwidth x its kernels' memory fraction (0.85 for the
//! catalog's GPUs, `hw::roofline::Efficiency::DEFAULT`; a device's own otherwise,
//! `GpuSpec::copy_bandwidth`), shared by the bytes each byte of output costs: 2 for a
//! copy (read, write), 3 for a reduction (two reads, a write). It is paid once per collective
//! however many loops NCCL splits it into: every loop ends with the pass over its own chunk, and
//! the chunks add up to S/n. Its weight is largest on 2 GPUs, where the ring's transfers are 2
//! chunks: the pass then adds 369 / (2 x 1,424) = 13% on 8 H100 behind NVSwitch (ring bus
//! bandwidth 369 GB/s, copy rate 1,424 GB/s), 2% on 8 of them.
//!
//! Ignored: that NCCL runs its channels on a few of the GPU's SMs (we assume they still reach the
//! streaming rate); the same tail of broadcast, reduce, tree, NVLS and MPI-style schedules (their
//! chunks are pipelined, so the last one is small, or they are not NCCL's); compression (the
//! pass is over the decompressed output).

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
