//! Gradient buckets: finished gradients reduced across the data-parallel (or expert) group once a
//! bucket fills, and with optimizer offload each reduced shard's copy to the host or update.

use super::BUCKET_BYTES;
use super::StepBuilder;
use crate::collective::CollectiveOp;
use crate::exec::OpId;
use crate::workload::training::comm::Comm;
use crate::workload::training::policy::OptimizerOffload;

impl StepBuilder<'_> {
    /// Adds `bytes` of finished gradients to the current stage's bucket, reducing it across the
    /// data-parallel group once it is full (or when `flush`); `expert` gradients go to a bucket
    /// of their own, reduced across the replicas that hold the same experts.
    pub(super) fn gradients(&mut self, bytes: f64, flush: bool, expert: bool) {
        let (replicas, comm) = if expert {
            (
                self.setup.gradient_ranks() / self.setup.ep,
                Comm::ExpertData,
            )
        } else {
            (self.setup.gradient_ranks(), Comm::Data)
        };
        // Without replicas there is nothing to reduce, but an offloaded optimizer still needs
        // the gradients in host memory (ZeRO-Offload on one GPU).
        let alone = replicas < 2;
        if alone && self.setup.optimizer_offload != OptimizerOffload::Host {
            return;
        }
        let stage = self.stage();
        let pending = if expert {
            &mut stage.pending_expert
        } else {
            &mut stage.pending
        };
        *pending += bytes;
        let total = *pending;
        if total <= 0.0 || (!flush && total < BUCKET_BYTES) {
            return;
        }
        *pending = 0.0;
        if alone {
            let after = self.last();
            self.offload_bucket(after.as_slice(), total, 1);
            return;
        }
        let op = if self.setup.zero >= 1 {
            CollectiveOp::ReduceScatter
        } else {
            CollectiveOp::AllReduce
        };
        let secs = self.collective_seconds(comm, op, total);
        let after = self.last();
        let lane = self.stage().data;
        let id = self.comm_op(
            lane,
            "grad_reduce",
            secs,
            total,
            after.as_slice(),
            Some(comm),
        );
        self.stage().buckets.push(id);
        self.offload_bucket(&[id], total, replicas);
    }

    /// Optimizer offload: what follows the reduction `reduced` of a bucket of `total` gradient
    /// bytes over `replicas` (or, alone, the bucket's last kernel): its shard's copy to the
    /// host, or the optimizer node's update of it.
    fn offload_bucket(&mut self, reduced: &[OpId], total: f64, replicas: u32) {
        let s = self.setup;
        match s.optimizer_offload {
            OptimizerOffload::Gpu => {}
            OptimizerOffload::Host => {
                let shard = total / replicas as f64;
                let secs = s.topology.host_copy_seconds(shard);
                let lane = self.stage().host_link.expect("a host lane when offloading");
                let id = self.comm_op(lane, "grad_to_host", secs, shard, reduced, None);
                self.stage().buckets.push(id);
            }
            OptimizerOffload::Network => {
                // The node's share of the step for this bucket's parameters: every micro-batch
                // reduces its gradients, so each carries 1/accumulation of the update.
                let params = total / s.grad_bytes / s.accumulation as f64;
                let state = params * s.optimizer.state_bytes(s, 0) / s.stage_params(0);
                let id = self.host_op("optimizer_node_update", params, state, reduced);
                self.stage().buckets.push(id);
            }
        }
    }
}
