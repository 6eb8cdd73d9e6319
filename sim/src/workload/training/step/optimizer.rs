//! The weight update that ends the step: the last gradient buckets, then the optimizer step on the
//! GPU, the host CPUs or the optimizer node, and ZeRO 1/2's all-gather of the updated weights.

use super::StepBuilder;
use crate::collective::CollectiveOp;
use crate::engine::SimTime;
use crate::exec::{Op, OpId, OpKind};
use crate::workload::training::comm::Comm;
use crate::workload::training::policy::OptimizerOffload;
use std::borrow::Cow;

impl StepBuilder<'_> {
    /// Stage `st`'s weight update: its last gradient buckets, then the optimizer step.
    pub(super) fn update(&mut self, st: usize) {
        self.at = st;
        self.gradients(0.0, true, false);
        self.gradients(0.0, true, true);
        self.optimizer(st as u32);
    }

    /// The optimizer step of the current stage on its share of the parameters, after its last
    /// kernel and every gradient bucket; with ZeRO the updated weights are then all-gathered.
    fn optimizer(&mut self, stage: u32) {
        let s = self.setup;
        let m = &s.model;
        let params = s.stage_params(stage);
        let shards = if s.zero >= 1 {
            s.gradient_ranks() as f64
        } else {
            1.0
        };
        let deps: Vec<OpId> = self
            .last()
            .into_iter()
            .chain(self.stage().buckets.iter().copied())
            .collect();
        let opt = match s.optimizer_offload {
            OptimizerOffload::Gpu => self.gpu_optimizer(stage, shards, &deps),
            OptimizerOffload::Host => {
                let state = s.optimizer.state_bytes(s, stage) / shards;
                let cpu = self.host_op("optimizer_step_cpu", params / shards, state, &deps);
                let bytes = params / shards * m.dtype.bytes();
                let secs = s.topology.host_copy_seconds(bytes);
                let lane = self.stage().host_link.expect("a host lane when offloading");
                self.comm_op(lane, "weights_to_gpu", secs, bytes, &[cpu], None)
            }
            // The node's updates ran as the buckets arrived; the step ends with the last.
            OptimizerOffload::Network => *deps.last().expect("ZeRO-3 reduces every step"),
        };
        self.stage().optimizer = Some(opt);
        self.set_last(opt);
        if matches!(s.zero, 1 | 2) && s.gradient_ranks() > 1 {
            // All-gather the updated 16-bit weights (ZeRO-3 gathers them layer by layer at the
            // next step instead).
            let bytes = params * m.dtype.bytes();
            let secs = self.collective_seconds(Comm::Data, CollectiveOp::AllGather, bytes);
            let lane = self.stage().data;
            self.comm_op(
                lane,
                "param_all_gather",
                secs,
                bytes,
                &[opt],
                Some(Comm::Data),
            );
        }
    }

    /// The optimizer step on the GPU's compute stream over its 1/`shards` of stage `stage`'s
    /// parameters, after `deps`.
    fn gpu_optimizer(&mut self, stage: u32, shards: f64, deps: &[OpId]) -> OpId {
        let s = self.setup;
        let params = s.stage_params(stage);
        let step = s
            .optimizer
            .step_kernel(params / shards, s.optimizer.state_bytes(s, stage) / shards);
        let mut cost = self.compute.cost(&step).expect("fp32 arithmetic exists");
        // GaLore's projections (and its SVD's share) ahead of the step, folded into it.
        for (k, share) in s.optimizer.projection_kernels(s, stage) {
            let c = self.compute.cost(&k).expect("fp32 arithmetic exists");
            cost.seconds += share * c.seconds;
            cost.flops += share * c.flops;
            cost.bytes += share * c.bytes;
        }
        let lane = self.stage().compute;
        let opt = self.graph.add(
            Op {
                name: Cow::Borrowed("optimizer_step"),
                lane,
                kind: OpKind::Memory,
                duration: SimTime::from_secs_f64(cost.seconds),
                flops: cost.flops,
                bytes: cost.bytes,
                tier: cost.tier.name(),
                layer: None,
                micro_batch: None,
                model_flops: false,
                chain: None,
            },
            deps,
        );
        // (GaLore's projections folded into the step are drawn at the step's power.)
        self.graph.counters[self.at].values.push((opt, cost.watts));
        opt
    }

    /// The optimizer step over `params` parameters with `state` bytes of state on the host CPUs
    /// or the optimizer node (`s.host`; a server's host shared by its GPUs), after `after`.
    pub(super) fn host_op(
        &mut self,
        name: &'static str,
        params: f64,
        state: f64,
        after: &[OpId],
    ) -> OpId {
        let s = self.setup;
        let host = s.optimizer_host().expect("a host when offloading");
        let (seconds, flops, bytes) = s.optimizer.host_step(&host, params, state);
        let lane = self
            .stage()
            .offload
            .expect("an offload lane when offloading");
        self.graph.add(
            Op {
                name: Cow::Borrowed(name),
                lane,
                kind: OpKind::Memory,
                duration: SimTime::from_secs_f64(seconds),
                flops,
                bytes,
                tier: "host",
                layer: None,
                micro_batch: None,
                model_flops: false,
                chain: None,
            },
            after,
        )
    }
}
