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
mod kernel_prices;
mod on_demand;
mod optimizer;
mod passes;
mod priced;

pub use on_demand::{HOST_LOOP_PER_RANK_S, MAX_REUSE_DISTANCE, most_gathered_params};

use super::comm::Comm;
use super::policy::OptimizerOffload;
use super::sequences;
use super::setup::TrainingConfig;
use crate::collective::CollectiveOp;
use crate::engine::SimTime;
use crate::exec::{Counter, Graph, LaneId, LaneUse, Op, OpId, OpKind, Part};
use crate::hw::{ComputeModel, Kernel};
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
pub fn kernel_class(kind: OpKind, name: &str) -> Option<usize> {
    match kind {
        OpKind::Communication => None,
        OpKind::Memory => Some(2),
        OpKind::Compute if name.starts_with("attention") => Some(1),
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
    /// The last operation added to the compute stream (`StepBuilder::last` adds `run` first).
    tail: Option<OpId>,
    /// Kernels bound for the compute stream, back to back, not yet added: they become one
    /// operation, a chain of them (`exec::chain`), when something must follow the last. Each
    /// with the value it sets the GPU's board power to; the first as an operation (its lane,
    /// layer, micro-batch and FLOP accounting are the chain's), and what it waits for.
    run: Vec<Part>,
    first: Option<Op>,
    run_deps: Vec<OpId>,
    /// The run's last part, when it is a blocking tensor-parallel collective: its name and
    /// price (it becomes an operation of its own if nothing follows it in the chain).
    trailing: Option<(&'static str, f64)>,
    /// Whether blocking tensor-parallel collectives run inside the chains around them: their
    /// group stays inside one server, and one GPU stands for every rank.
    fold: bool,
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
    priced: priced::Priced,
    /// The current micro-batch's attention as one kernel per sequence or chunk (`[sequences]`);
    /// empty when the layer's attention kernel prices itself.
    attention_parts: Vec<Kernel>,
    /// Every collective and send: its operation, stage and communicator.
    collectives: Vec<Collective>,
    /// Whether kernels run back to back become chains: not when each kernel draws its own
    /// jitter (`[[perturb]] jitter`).
    fuse: bool,
    /// Every kernel priced so far.
    kernel_prices: kernel_prices::KernelPrices,
}

impl<'a> StepBuilder<'a> {
    pub fn new(setup: &'a TrainingConfig, compute: &'a ComputeModel) -> Self {
        let mut graph = Graph::new();
        // Collectives hold some of the SMs while they run; the compute stream beside them slows.
        const COLLECTIVE: LaneUse = LaneUse::Collectives;
        graph.contention = setup.contention().1;
        let mut stages = (0..setup.pp)
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
                    tail: None,
                    run: Vec::new(),
                    first: None,
                    run_deps: Vec::new(),
                    trailing: None,
                    fold: false,
                    pending: 0.0,
                    pending_expert: 0.0,
                    buckets: Vec::new(),
                }
            })
            .collect::<Vec<Stage>>();
        for stage in &mut stages {
            stage.fold = setup.jitter_gpus.is_empty()
                && setup.ranks == super::policy::Ranks::Stage
                && !setup.tp_comm_overlap
                && !setup.tp_dgrad_overlap
                && setup.in_one_server(stage.rank, Comm::Tensor);
            if let (Some(tensor), true) = (stage.tensor, stage.fold) {
                graph.lanes[stage.compute as usize].carried = Some(tensor);
            }
        }
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
            priced: priced::Priced::default(),
            attention_parts: Vec::new(),
            collectives: Vec::new(),
            kernel_prices: kernel_prices::KernelPrices::default(),
            fuse: setup.jitter_gpus.is_empty(),
        }
    }

    fn stage(&mut self) -> &mut Stage {
        &mut self.stages[self.at]
    }

    /// Dependencies of the next operation on the compute stream.
    fn compute_deps(&mut self) -> Vec<OpId> {
        let last = self.last();
        last.into_iter().chain(self.waiting_on.drain(..)).collect()
    }

    /// The last operation on the current stage's compute stream, the kernels not yet added
    /// added first.
    fn last(&mut self) -> Option<OpId> {
        self.flush(false);
        self.stage().tail
    }

    /// [`Self::last`], its last kernel an operation of its own (a collective starts with it).
    fn last_alone(&mut self) -> Option<OpId> {
        self.flush(true);
        self.stage().tail
    }

    /// `id` is now the last operation on the compute stream, which the next kernel follows.
    fn set_last(&mut self, id: OpId) {
        debug_assert!(self.stage().first.is_none(), "kernels were left behind");
        self.stage().tail = Some(id);
    }

    /// Adds the current stage's waiting kernels to the graph: one operation, or a chain of them
    /// (its last kernel a second operation when `alone`).
    fn flush(&mut self, alone: bool) {
        let at = self.at;
        let Some(first) = self.stages[at].first.take() else {
            return;
        };
        let mut run = std::mem::take(&mut self.stages[at].run);
        let mut deps = std::mem::take(&mut self.stages[at].run_deps);
        let trailing = self.stages[at]
            .trailing
            .take()
            .map(|t| (t, run.pop().expect("a part")));
        debug_assert!(
            !(alone && trailing.is_some()),
            "no overlapped syncs where syncs fold"
        );
        let single = if alone && run.len() > 1 {
            run.pop()
        } else {
            None
        };
        let mut id = self.add_run(&first, &run, &deps);
        if let Some(k) = single {
            id = self.add_run(&first, std::slice::from_ref(&k), &[id]);
        }
        if let Some(((name, secs), sync)) = trailing {
            let lane = self.stages[at]
                .tensor
                .expect("a folded sync has a tensor lane");
            id = self.comm_op(lane, name, secs, sync.bytes, &[id], Some(Comm::Tensor));
        }
        // (the buffers are kept for the next run)
        run.clear();
        deps.clear();
        let stage = &mut self.stages[at];
        (stage.run, stage.run_deps, stage.tail) = (run, deps, Some(id));
    }

    /// The kernels `run` as one operation after `deps` (the first kernel's lane, layer,
    /// micro-batch and FLOP accounting are `first`'s), a chain when they are several.
    fn add_run(&mut self, first: &Op, run: &[Part], deps: &[OpId]) -> OpId {
        let at = self.at;
        let mut op = Op {
            name: run[0].name.clone(),
            kind: run[0].kind,
            duration: SimTime::ZERO,
            flops: 0.0,
            bytes: 0.0,
            tier: run[0].tier,
            ..first.clone()
        };
        for k in run {
            op.duration += k.duration;
            op.flops += k.flops;
            op.bytes += k.bytes;
            if k.kind == OpKind::Compute {
                op.kind = OpKind::Compute;
            }
        }
        let value = match run {
            [alone] => alone.value,
            _ => {
                op.chain = Some(self.graph.add_chain(run));
                run.iter().any(|k| k.value.is_some()).then_some(0.0)
            }
        };
        let id = self.graph.add(op, deps);
        if let Some(v) = value {
            self.graph.counters[at].values.push((id, v));
        }
        id
    }

    fn kernel(
        &mut self,
        name: &'static str,
        kernel: Kernel,
        layer: Option<u32>,
        micro_batch: u32,
        model_flops: bool,
    ) {
        let mut cost =
            if matches!(kernel, Kernel::Attention { .. }) && !self.attention_parts.is_empty() {
                sequences::parts_cost(self.compute, &self.attention_parts, &kernel)
            } else {
                self.kernel_prices.get(self.compute, &kernel)
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
        self.compute_op(
            Op {
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
                chain: None,
            },
            Some(cost.watts),
        );
    }

    /// Adds `op` to the compute stream after its last operation and whatever it waits on, setting
    /// the GPU's board power to `value` while it runs: it joins the kernels before it in a chain
    /// when it waits on nothing else and is of their layer, micro-batch and FLOP accounting.
    fn compute_op(&mut self, op: Op, value: Option<f64>) {
        let joins = self.fuse
            && self.waiting_on.is_empty()
            && self.stages[self.at].first.as_ref().is_some_and(|k| {
                (k.layer, k.micro_batch, k.model_flops)
                    == (op.layer, op.micro_batch, op.model_flops)
            });
        if !joins {
            let last = self.last();
            let stage = &mut self.stages[self.at];
            stage.run_deps.extend(last);
            stage.run_deps.append(&mut self.waiting_on);
            stage.first = Some(op.clone());
        }
        let stage = self.stage();
        stage.run.push(Part::of(op, value));
        stage.trailing = None;
        if !self.fuse {
            self.flush(false);
        }
        if let Some(d) = self.deferred.take() {
            self.waiting_on.push(d);
        }
    }

    /// Compression or decompression of a layer's saved activations on the compute stream, at
    /// the compressor's throughput (`[compression.activations]`); nothing when there is none.
    fn codec(&mut self, name: &'static str, seconds: f64, layer: u32, micro_batch: u32) {
        if seconds <= 0.0 {
            return;
        }
        let lane = self.stage().compute;
        self.compute_op(
            Op {
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
                chain: None,
            },
            None,
        );
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
                chain: None,
            },
            after,
        );
        if let Some(comm) = comm {
            // The distinct collective this one's duration came from: the same GPU and
            // communicator at the same price, else the latest on them.
            let base = self.stages[self.at].rank;
            let priced = self
                .priced
                .source(base, comm, seconds)
                .unwrap_or(NOT_PRICED);
            self.collectives.push((id, self.at as u32, comm, priced));
        }
        id
    }

    /// Seconds of `op` over a communicator of the current stage's GPU, priced on the topology with
    /// the scenario's network tier and NCCL's algorithm and protocol choice, beside the stage's
    /// other groups running it at the same moment.
    fn collective_seconds(&mut self, comm: Comm, op: CollectiveOp, bytes: f64) -> f64 {
        let base = self.stages[self.at].rank;
        if let Some(secs) = self.priced.reuse(base, comm, op, bytes) {
            return secs;
        }
        let secs = self
            .setup
            .shared_collective_seconds(base, comm, op, bytes, self.setup.tier);
        self.priced.insert(base, comm, op, bytes, secs);
        secs
    }

    /// The dependencies the next compute operation will have, without consuming them.
    fn compute_deps_peek(&mut self) -> Vec<OpId> {
        let last = self.last();
        last.into_iter()
            .chain(self.waiting_on.iter().copied())
            .collect()
    }

    /// Builds the whole step.
    pub fn build(self) -> (Graph, Vec<Stage>) {
        let (graph, stages, _, _) = self.build_counting();
        (graph, stages)
    }
}
