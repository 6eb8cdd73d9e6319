//! One training step as a graph of operations ([`StepBuilder`]): one GPU per pipeline stage,
//! standing for its tensor-, context- and data-parallel peers; kernels are priced by the compute
//! model, collectives by the network, and the engine schedules the graph.
//!
//! Each stage runs its schedule's passes (`schedule`) over its layers' operations (`layer`), full
//! recomputation re-running a layer's forward before its backward; stages hand activations and
//! gradients on with point-to-point sends. Data-parallel gradients are reduced in buckets beside
//! the last backward (ZeRO 1/2: reduce-scatter, then all-gather the updated weights; ZeRO 3:
//! gathers one layer ahead, or matrix by matrix with `param_gather = "on-demand"`, `on_demand`).
//! Tensor-parallel collectives sit at Megatron-LM's `f` and `g` and block the compute stream
//! unless overlapped; context and expert parallelism exchange keys and values and routed tokens.
//! Each kind of communication has its own lane; a collective beside compute slows its kernels
//! (`exec::Contention`). Optimizer offload moves the step to the host or an optimizer node.
//!
//! Ignored: the embedding's backward scatter, data loading. See docs/TRAINING.md#the-step-graph

mod collectives;
mod context_attention;
mod gradients;
mod on_demand;
mod optimizer;
mod passes;

pub use on_demand::{HOST_LOOP_PER_RANK_S, MAX_REUSE_DISTANCE, most_gathered_params};

use super::comm::Comm;
use super::policy::OptimizerOffload;
use super::sequences;
use super::setup::TrainingConfig;
use crate::collective::CollectiveOp;
use crate::engine::SimTime;
use crate::exec::{Counter, Graph, LaneId, LaneUse, Op, OpId, OpKind};
use crate::hw::{ComputeModel, Kernel, KernelCost};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Name of the point-to-point sends between pipeline stages (waits for them are the bubble).
pub const PIPELINE_SEND: &str = "pp_send";

/// Gradient bucket size, bytes: PyTorch DDP's default of 25 MiB.
pub const BUCKET_BYTES: f64 = 25.0 * 1024.0 * 1024.0;
/// Gradients are reduced in fp32, Megatron-LM's default (`parallel.grad_dtype` may say 16 bits:
/// `Training::grad_bytes`).
pub const GRAD_BYTES: f64 = 4.0;

/// The kind of kernel a compute-lane operation of this graph runs, for saying which compute tier
/// priced what, as an index of [`KERNEL_CLASSES`]: "GEMM", "attention" (the fused attention
/// kernels) or "memory-bound" (elementwise kernels and the optimizer step). None for
/// communication.
pub fn kernel_class(op: &Op) -> Option<usize> {
    match op.kind {
        OpKind::Communication => None,
        OpKind::Memory => Some(2),
        OpKind::Compute if op.name.starts_with("attention") => Some(1),
        OpKind::Compute => Some(0),
    }
}

/// The kinds of kernel [`kernel_class`] tells apart, by its index.
pub const KERNEL_CLASSES: [&str; 3] = ["GEMM", "attention", "memory-bound"];

/// A collective or send of the graph: its operation, its stage, its communicator and which of
/// the distinct collectives priced it (`links::CommUse`, `NOT_PRICED` when none did).
pub type Collective = (OpId, u32, Comm, u32);

/// A collective whose duration no distinct priced collective gave.
pub const NOT_PRICED: u32 = u32::MAX;

/// The lanes of one pipeline stage's GPU, and where its work stands.
#[derive(Clone, Debug)]
pub struct Stage {
    /// Global rank of the GPU that stands for the stage.
    pub rank: u32,
    pub compute: LaneId,
    pub tensor: Option<LaneId>,
    pub data: LaneId,
    pub send: Option<LaneId>,
    /// ZeRO-3's parameter all-gathers, on a stream of their own (as FSDP runs them).
    pub gather: Option<LaneId>,
    /// Expert-parallel all-to-alls (they block compute, like tensor-parallel collectives).
    pub expert: Option<LaneId>,
    /// Context-parallel key and value exchanges.
    pub context: Option<LaneId>,
    /// Optimizer offload: copies between the GPU and host memory over PCIe.
    pub host_link: Option<LaneId>,
    /// Optimizer offload: the host CPUs' (or the optimizer node's) optimizer work.
    pub offload: Option<LaneId>,
    /// The optimizer step, once built.
    pub optimizer: Option<OpId>,
    /// The last operation on the compute stream, which the next one follows.
    last: Option<OpId>,
    /// Gradient bytes waiting for the next data-parallel bucket, and expert gradients waiting
    /// for the next bucket of the expert-data-parallel group.
    pending: f64,
    pending_expert: f64,
    buckets: Vec<OpId>,
}

impl Stage {
    /// Every lane of the stage's GPU.
    pub fn lanes(&self) -> impl Iterator<Item = LaneId> {
        [
            Some(self.compute),
            self.tensor,
            Some(self.data),
            self.send,
            self.gather,
            self.expert,
            self.context,
            self.host_link,
            self.offload,
        ]
        .into_iter()
        .flatten()
    }
}

/// Builds the step graph: one GPU per pipeline stage, standing for its tensor-parallel peers and
/// data-parallel replicas, with durations priced by `compute` and the network.
pub struct StepBuilder<'a> {
    pub setup: &'a TrainingConfig,
    pub compute: &'a ComputeModel,
    graph: Graph,
    stages: Vec<Stage>,
    /// The stage the kernel and collective helpers write to.
    at: usize,
    /// Dependencies of the next kernel beyond the stream order: a received activation or
    /// gradient, gathered parameters.
    waiting_on: Vec<OpId>,
    /// ZeRO-3: the all-gather of each layer's parameters in the current pass.
    gathers: BTreeMap<u32, OpId>,
    /// An overlapped collective the kernel after next waits for (see `overlapped_sync`).
    deferred: Option<OpId>,
    /// Bytes of a micro-batch's tokens on one tensor-parallel group, each copied for its `top_k`
    /// experts (what an expert-parallel all-to-all moves for the group).
    routed_bytes: f64,
    priced: Vec<(u32, Comm, CollectiveOp, f64, f64)>,
    /// The current micro-batch's attention as one kernel per sequence or chunk (`[sequences]`);
    /// empty when the layer's attention kernel prices itself.
    attention_parts: Vec<Kernel>,
    /// How many operations each priced collective became (same order as `priced`).
    uses: Vec<u32>,
    /// Every collective and send: its operation, stage and communicator.
    collectives: Vec<Collective>,
    /// The last kernels priced, oldest first (`kernel_cost`).
    kernel_costs: Vec<(Kernel, KernelCost)>,
}

/// Kernels `kernel_cost` keeps: more than one layer's forward and backward passes hold.
const KERNELS_KEPT: usize = 64;

impl<'a> StepBuilder<'a> {
    pub fn new(setup: &'a TrainingConfig, compute: &'a ComputeModel) -> Self {
        let mut graph = Graph::new();
        // Collectives hold some of the SMs while they run; the compute stream beside them slows.
        const COLLECTIVE: LaneUse = LaneUse::Collectives;
        graph.contention = setup.contention().1;
        let stages = (0..setup.pp)
            .map(|st| {
                let rank = setup.stage_rank(st);
                let group = format!("GPU {rank} (stage {st})");
                let group = if setup.pp == 1 {
                    "GPU 0".to_string()
                } else {
                    group
                };
                Stage {
                    rank,
                    compute: graph.add_lane_using("compute", group.clone(), LaneUse::Kernels),
                    data: graph.add_lane_using("data-parallel comm", group.clone(), COLLECTIVE),
                    tensor: (setup.tp > 1).then(|| {
                        graph.add_lane_using("tensor-parallel comm", group.clone(), COLLECTIVE)
                    }),
                    send: (setup.pp > 1)
                        .then(|| graph.add_lane_using("pipeline send", group.clone(), COLLECTIVE)),
                    gather: (setup.zero == 3 && setup.gradient_ranks() > 1).then(|| {
                        graph.add_lane_using("parameter all-gather", group.clone(), COLLECTIVE)
                    }),
                    expert: (setup.ep > 1).then(|| {
                        graph.add_lane_using("expert-parallel comm", group.clone(), COLLECTIVE)
                    }),
                    context: (setup.cp > 1).then(|| {
                        graph.add_lane_using("context-parallel comm", group.clone(), COLLECTIVE)
                    }),
                    host_link: (setup.optimizer_offload == OptimizerOffload::Host)
                        .then(|| graph.add_lane("host copies", group.clone())),
                    offload: match setup.optimizer_offload {
                        OptimizerOffload::Gpu => None,
                        OptimizerOffload::Host => Some(graph.add_lane("host CPUs", group.clone())),
                        OptimizerOffload::Network => {
                            Some(graph.add_lane("optimizer node", group.clone()))
                        }
                    },
                    optimizer: None,
                    last: None,
                    pending: 0.0,
                    pending_expert: 0.0,
                    buckets: Vec::new(),
                }
            })
            .collect::<Vec<Stage>>();
        // Each stage GPU's board power: idle between kernels, each kernel's own draw while it
        // runs (`hw::clock`); communication kernels are not priced apart (idle power).
        for stage in &stages {
            graph.counters.push(Counter {
                name: "board power",
                unit: "W",
                lane: stage.compute,
                base: crate::hw::power::idle_watts(&setup.gpu),
                values: Vec::new(),
            });
        }
        StepBuilder {
            setup,
            compute,
            graph,
            stages,
            at: 0,
            waiting_on: Vec::new(),
            gathers: BTreeMap::new(),
            deferred: None,
            routed_bytes: setup.model.moe.as_ref().map_or(0.0, |moe| {
                (setup.micro_batch * setup.model.seq_len / setup.cp) as f64
                    * moe.top_k as f64
                    * setup.model.hidden as f64
                    * setup.model.dtype.bytes()
            }),
            priced: Vec::new(),
            attention_parts: Vec::new(),
            uses: Vec::new(),
            collectives: Vec::new(),
            kernel_costs: Vec::new(),
        }
    }

    fn stage(&mut self) -> &mut Stage {
        &mut self.stages[self.at]
    }

    /// Dependencies of the next operation on the compute stream.
    fn compute_deps(&mut self) -> Vec<OpId> {
        let last = self.stage().last;
        last.into_iter().chain(self.waiting_on.drain(..)).collect()
    }

    fn kernel(
        &mut self,
        name: &'static str,
        kernel: Kernel,
        layer: Option<u32>,
        micro_batch: u32,
        model_flops: bool,
    ) -> OpId {
        let mut cost =
            if matches!(kernel, Kernel::Attention { .. }) && !self.attention_parts.is_empty() {
                sequences::parts_cost(self.compute, &self.attention_parts, &kernel)
            } else {
                self.kernel_cost(&kernel)
            };
        // With every rank simulated, the straggler is one GPU (`ranks`), not its whole stage.
        if self.at as u32 + 1 == self.setup.pp && self.setup.ranks == super::policy::Ranks::Stage {
            cost.seconds *= self.setup.straggler_slowdown;
        }
        let kind = if matches!(kernel, Kernel::Memory { .. } | Kernel::Elementwise { .. }) {
            OpKind::Memory
        } else {
            OpKind::Compute
        };
        let lane = self.stage().compute;
        let id = self.compute_op(Op {
            name: Cow::Borrowed(name),
            lane,
            kind,
            duration: SimTime::from_secs_f64(cost.seconds),
            flops: cost.flops,
            bytes: cost.bytes,
            tier: cost.tier.name(),
            layer,
            micro_batch: Some(micro_batch),
            model_flops,
        });
        self.graph.counters[self.at].values.push((id, cost.watts));
        id
    }

    /// `kernel`'s price, from the kernels priced lately when it is one of them: a step repeats
    /// the same few kernels layer after layer, micro-batch after micro-batch.
    fn kernel_cost(&mut self, kernel: &Kernel) -> KernelCost {
        if let Some(&(_, cost)) = self.kernel_costs.iter().find(|(k, _)| k == kernel) {
            return cost;
        }
        let cost = self
            .compute
            .cost(kernel)
            .expect("the set-up checked that the GPU computes in the model's format");
        if self.kernel_costs.len() == KERNELS_KEPT {
            self.kernel_costs.remove(0);
        }
        self.kernel_costs.push((*kernel, cost));
        cost
    }

    /// Adds `op` to the compute stream after its last operation and whatever it waits on.
    fn compute_op(&mut self, op: Op) -> OpId {
        // (without a vector of its own: most kernels depend on the one before alone)
        let mut deps = std::mem::take(&mut self.waiting_on);
        deps.extend(self.stage().last);
        deps.rotate_right(usize::from(self.stage().last.is_some()));
        let id = self.graph.add(op, &deps);
        deps.clear();
        self.waiting_on = deps;
        self.stage().last = Some(id);
        if let Some(d) = self.deferred.take() {
            self.waiting_on.push(d);
        }
        id
    }

    /// Compression or decompression of a layer's saved activations on the compute stream, at
    /// the compressor's throughput (`[compression.activations]`); nothing when there is none.
    fn codec(&mut self, name: &'static str, seconds: f64, layer: u32, micro_batch: u32) {
        if seconds <= 0.0 {
            return;
        }
        let lane = self.stage().compute;
        self.compute_op(Op {
            name: Cow::Borrowed(name),
            lane,
            kind: OpKind::Memory,
            duration: SimTime::from_secs_f64(seconds),
            flops: 0.0,
            bytes: 0.0,
            tier: "compressor throughput",
            layer: Some(layer),
            micro_batch: Some(micro_batch),
            model_flops: false,
        });
    }

    fn comm_op(
        &mut self,
        lane: LaneId,
        name: &'static str,
        seconds: f64,
        bytes: f64,
        after: &[OpId],
        comm: Option<Comm>,
    ) -> OpId {
        let id = self.graph.add(
            Op {
                name: Cow::Borrowed(name),
                lane,
                kind: OpKind::Communication,
                duration: SimTime::from_secs_f64(seconds),
                flops: 0.0,
                bytes,
                tier: self.setup.tier.name(),
                layer: None,
                micro_batch: None,
                model_flops: true,
            },
            after,
        );
        if let Some(comm) = comm {
            // The distinct collective this one's duration came from: the same GPU and
            // communicator at the same price, else the latest on them.
            let base = self.stages[self.at].rank;
            let on =
                |&(r, c, _, _, _): &(u32, Comm, CollectiveOp, f64, f64)| r == base && c == comm;
            let priced = self
                .priced
                .iter()
                .rposition(|p| on(p) && p.4 == seconds)
                .or_else(|| self.priced.iter().rposition(on))
                .map_or(NOT_PRICED, |i| i as u32);
            self.collectives.push((id, self.at as u32, comm, priced));
        }
        id
    }

    /// Seconds of `op` over a communicator of the current stage's GPU, priced on the topology with
    /// the scenario's network tier and NCCL's algorithm and protocol choice, beside the stage's
    /// other groups running it at the same moment.
    fn collective_seconds(&mut self, comm: Comm, op: CollectiveOp, bytes: f64) -> f64 {
        let base = self.stages[self.at].rank;
        if let Some(i) = self
            .priced
            .iter()
            .position(|(r, c, o, b, _)| *r == base && *c == comm && *o == op && *b == bytes)
        {
            self.uses[i] += 1;
            return self.priced[i].4;
        }
        let secs = self
            .setup
            .shared_collective_seconds(base, comm, op, bytes, self.setup.tier);
        self.priced.push((base, comm, op, bytes, secs));
        self.uses.push(1);
        secs
    }

    /// The dependencies the next compute operation will have, without consuming them.
    fn compute_deps_peek(&self) -> Vec<OpId> {
        let stage = &self.stages[self.at];
        stage
            .last
            .into_iter()
            .chain(self.waiting_on.iter().copied())
            .collect()
    }

    /// Builds the whole step.
    pub fn build(self) -> (Graph, Vec<Stage>) {
        let (graph, stages, _, _) = self.build_counting();
        (graph, stages)
    }
}
