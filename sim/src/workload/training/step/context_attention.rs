//! Attention over a sequence split across the context-parallel group: an all-gather of keys and
//! values, or ring attention's blocks with the next block's exchange overlapped.

use super::StepBuilder;
use crate::collective::CollectiveOp;
use crate::exec::OpId;
use crate::hw::Kernel;
use crate::workload::training::comm::Comm;
use crate::workload::training::layer::context_attention_kernel;
use crate::workload::training::policy::ContextAlgorithm;

impl StepBuilder<'_> {
    /// Attention over a sequence split across the context-parallel group (`forward` or its
    /// backward). The all-gather variant gathers every rank's keys and values first (and
    /// reduce-scatters their gradients after the backward); ring attention computes one block per
    /// ring step while the next block's keys and values (and, backward, their gradients) travel to
    /// the neighbour, so the exchange hides behind the blocks' compute.
    pub(super) fn context_attention(
        &mut self,
        kernel: Kernel,
        forward: bool,
        layer: u32,
        micro: u32,
        model_flops: bool,
    ) {
        let s = self.setup;
        let m = &s.model;
        let Kernel::Attention {
            q_len,
            head_dim,
            dtype,
            ..
        } = kernel
        else {
            unreachable!("context attention splits an attention kernel")
        };
        let lane = self.stage().context.expect("a context lane when cp > 1");
        // Keys and values of this rank's tokens (its share of the KV heads under tensor
        // parallelism).
        let local_kv = 2.0
            * (s.micro_batch as f64 * q_len as f64)
            * (m.kv_heads / s.tp) as f64
            * head_dim as f64
            * dtype.bytes();
        let name = if forward {
            "attention"
        } else {
            "attention_bwd"
        };
        match s.cp_algorithm {
            ContextAlgorithm::AllGather => {
                let full = local_kv * s.cp as f64;
                let secs = self.collective_seconds(Comm::Context, CollectiveOp::AllGather, full);
                let after = self.compute_deps();
                let id = self.comm_op(
                    lane,
                    "cp_kv_all_gather",
                    secs,
                    full,
                    &after,
                    Some(Comm::Context),
                );
                self.set_last(id);
                let (k, _) = context_attention_kernel(kernel, s.cp, s.cp_algorithm, !forward);
                self.kernel(name, k, Some(layer), micro, model_flops);
                if !forward {
                    let secs =
                        self.collective_seconds(Comm::Context, CollectiveOp::ReduceScatter, full);
                    let after = self.compute_deps();
                    let id = self.comm_op(
                        lane,
                        "cp_dkv_reduce_scatter",
                        secs,
                        full,
                        &after,
                        Some(Comm::Context),
                    );
                    self.set_last(id);
                }
            }
            ContextAlgorithm::Ring => {
                let (block, _) = context_attention_kernel(kernel, s.cp, s.cp_algorithm, !forward);
                // Backward passes carry the keys and values and their gradients.
                let bytes = if forward { local_kv } else { 2.0 * local_kv };
                let secs =
                    self.collective_seconds(Comm::ContextPeer, CollectiveOp::SendRecv, bytes);
                let mut pass: Option<OpId> = None;
                for step in 0..s.cp {
                    let previous_pass = pass;
                    if step + 1 < s.cp {
                        let after: Vec<OpId> = match previous_pass {
                            Some(p) => vec![p],
                            None => self.compute_deps_peek(),
                        };
                        pass = Some(self.comm_op(
                            lane,
                            "cp_ring_pass",
                            secs,
                            bytes,
                            &after,
                            Some(Comm::ContextPeer),
                        ));
                    }
                    if let Some(p) = previous_pass {
                        self.waiting_on.push(p);
                    }
                    self.kernel(name, block, Some(layer), micro, model_flops);
                }
            }
        }
    }
}
