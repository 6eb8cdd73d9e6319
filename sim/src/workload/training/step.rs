//! One training step as a graph of operations: one GPU per pipeline stage, standing for its
//! tensor-, context- and data-parallel peers.
//!
//! Each stage runs its schedule's passes (`schedule`): a forward runs the embedding on the first
//! chunk, each layer's operations (`layer`), and the output projection and loss on the last; a
//! backward runs them in reverse, full recomputation re-running a layer's forward just before its
//! backward. Stages hand activations and gradients to each other with point-to-point sends.
//! Gradients are reduced across replicas in buckets during the last micro-batch's backward, on a
//! lane that overlaps the remaining backward (as PyTorch DDP and Megatron-LM do); the optimizer
//! step waits for every bucket. ZeRO 1/2 reduce-scatter instead and all-gather the updated weights;
//! ZeRO 3 gathers each layer's weights before use (one layer ahead) and reduce-scatters its
//! gradients every micro-batch; `param_gather = "on-demand"` gathers and reduces weight matrix
//! by weight matrix in the compute stream's path instead (`on_demand`).
//!
//! Tensor-parallel collectives sit where `layer` puts Megatron-LM's `f` and `g`: `f` before a
//! column-split GEMM (identity forward, all-reduce backward), `g` after a row-split one (all-reduce
//! forward, identity backward); with sequence parallelism the all-reduces become all-gathers and
//! reduce-scatters of the same bytes. They block the compute stream, as Megatron-LM runs them by
//! default, unless `tp_comm_overlap` runs each beside its GEMM, or `tp_dgrad_overlap` runs the
//! backward's input-gradient collectives beside the weight-gradient GEMMs (Megatron-LM's
//! asynchronous all-reduce). Context parallelism exchanges keys
//! and values (ring passes overlapped with attention blocks, or an all-gather); expert parallelism
//! exchanges routed tokens with all-to-alls. Every kind of communication has a lane of its own.
//! A collective running beside the compute stream holds `collective::collective_blocks` of the
//! GPU's SMs, so the kernels beside it slow for as long as it runs (`exec::Contention`); host
//! copies and the host's and optimizer node's work hold none.
//!
//! Optimizer offload (`parallel.optimizer_offload`). `host` (ZeRO-Offload): each reduced
//! gradient bucket's shard is copied to host memory over the GPU's PCIe link as soon as it is
//! reduced (beside the backward, on a lane of its own); after the last copy the host CPUs run the
//! optimizer step on the shard (`hw::host`: the fused step's arithmetic and bytes on the CPU, the
//! host shared by the server's GPUs), and the updated 16-bit weights are copied back before ZeRO
//! 1/2's all-gather. `network` (LuWu): the gradients are reduced as ZeRO-3 reduces them, and an
//! optimizer node applies each bucket's update as it arrives (its share of the whole step, on its
//! own lane), so only what it cannot hide behind the backward is exposed; the parameters come
//! back with ZeRO-3's layer gathers at the next step. Ignored: the CPU's gradient accumulation
//! across micro-batches, interference between the copies and the collectives on the host's PCIe
//! root, and the SmartNIC offload of the collectives (they are priced as NCCL's).
//!
//! Ignored: the embedding's backward scatter (small), data loading.

mod on_demand;

pub use on_demand::{HOST_LOOP_PER_RANK_S, MAX_REUSE_DISTANCE, most_gathered_params};

use super::activation_plan;
use super::comm::Comm;
use super::layer::{Item, Step, Sync, backward, context_attention_kernel, elementwise};
use super::links::CommUse;
use super::op_checkpoint;
use super::policy::{ContextAlgorithm, OptimizerOffload, ParamGather, Recompute, Schedule};
use super::schedule::{self, Pass, Work};
use super::sequences::{self, Shape};
use super::setup::Training;
use crate::collective::CollectiveOp;
use crate::engine::SimTime;
use crate::exec::{Counter, Graph, LaneId, LaneUse, Op, OpId, OpKind};
use crate::hw::{ComputeModel, ElementwiseOp, Kernel};
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
/// priced what: "GEMM", "attention" (the fused attention kernels) or "memory-bound" (elementwise
/// kernels and the optimizer step). None for communication.
pub fn kernel_class(op: &Op) -> Option<&'static str> {
    match op.kind {
        OpKind::Communication => None,
        OpKind::Memory => Some("memory-bound"),
        OpKind::Compute if op.name.starts_with("attention") => Some("attention"),
        OpKind::Compute => Some("GEMM"),
    }
}

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

/// Builds the step graph: one GPU per pipeline stage, standing for its tensor-parallel peers and
/// data-parallel replicas, with durations priced by `compute` and the network.
pub struct StepBuilder<'a> {
    pub setup: &'a Training,
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
    /// Bytes one rank exchanges in an expert-parallel all-to-all: its micro-batch's tokens, each
    /// sent to `top_k` experts.
    routed_bytes: f64,
    priced: Vec<(u32, Comm, CollectiveOp, f64, f64)>,
    /// The current micro-batch's attention as one kernel per sequence or chunk (`[sequences]`);
    /// empty when the layer's attention kernel prices itself.
    attention_parts: Vec<Kernel>,
    /// How many operations each priced collective became (same order as `priced`).
    uses: Vec<u32>,
}

impl<'a> StepBuilder<'a> {
    pub fn new(setup: &'a Training, compute: &'a ComputeModel) -> Self {
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
                base: crate::hw::power::idle_watts(setup.gpu),
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
                self.compute
                    .cost(&kernel)
                    .expect("the set-up checked that the GPU computes in the model's format")
            };
        if self.at as u32 + 1 == self.setup.pp {
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

    /// Adds `op` to the compute stream after its last operation and whatever it waits on.
    fn compute_op(&mut self, op: Op) -> OpId {
        let deps = self.compute_deps();
        let id = self.graph.add(op, &deps);
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
    ) -> OpId {
        self.graph.add(
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
        )
    }

    /// A tensor-parallel collective of `bytes` in the compute stream's path: it starts after the
    /// last kernel and the next kernel waits for it.
    fn tensor_sync(&mut self, name: &'static str, op: CollectiveOp, bytes: f64) {
        let Some(lane) = self.stage().tensor else {
            return;
        };
        let secs = self.collective_seconds(Comm::Tensor, op, bytes);
        let after = self.compute_deps();
        let id = self.comm_op(lane, name, secs, bytes, &after);
        self.stage().last = Some(id);
    }

    /// A tensor-parallel collective overlapped with its GEMM (TransformerEngine's communication
    /// overlap): after a row-split GEMM it runs beside that GEMM (starting with it), before a
    /// column-split GEMM beside the next one; the kernel after the pair waits for both.
    fn overlapped_sync(&mut self, sync: Sync, name: &'static str, op: CollectiveOp, bytes: f64) {
        let Some(lane) = self.stage().tensor else {
            return;
        };
        let secs = self.collective_seconds(Comm::Tensor, op, bytes);
        let after: Vec<OpId> = match (sync, self.stage().last) {
            (Sync::G, Some(gemm)) => self.graph.deps(gemm).to_vec(),
            _ => self.compute_deps_peek(),
        };
        let id = self.comm_op(lane, name, secs, bytes, &after);
        match sync {
            Sync::G => self.waiting_on.push(id),
            Sync::F => self.deferred = Some(id),
        }
    }

    /// The collective a conjugate operator runs in the forward or the backward pass, if any.
    fn sync(&mut self, sync: Sync, forward: bool, bytes: f64) {
        let Some(op) = sync.collective(forward, self.setup.sequence_parallel) else {
            return;
        };
        let name = match op {
            CollectiveOp::AllGather => "tp_all_gather",
            CollectiveOp::ReduceScatter => "tp_reduce_scatter",
            _ => "tp_all_reduce",
        };
        if self.setup.tp_comm_overlap {
            // Forward, F precedes and G follows a GEMM; backward, the order flips.
            let next_to = if forward {
                sync
            } else if sync == Sync::F {
                Sync::G
            } else {
                Sync::F
            };
            self.overlapped_sync(next_to, name, op, bytes);
        } else if self.setup.tp_dgrad_overlap && !forward && sync == Sync::F {
            // Beside the weight-gradient GEMM that follows the input gradient it carries.
            self.overlapped_sync(Sync::G, name, op, bytes);
        } else {
            self.tensor_sync(name, op, bytes);
        }
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

    /// Adds `bytes` of finished gradients to the current stage's bucket, reducing it across the
    /// data-parallel group once it is full (or when `flush`); `expert` gradients go to a bucket
    /// of their own, reduced across the replicas that hold the same experts.
    fn gradients(&mut self, bytes: f64, flush: bool, expert: bool) {
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
            let after: Vec<OpId> = self.stage().last.into_iter().collect();
            self.offload_bucket(&after, total, 1);
            return;
        }
        let op = if self.setup.zero >= 1 {
            CollectiveOp::ReduceScatter
        } else {
            CollectiveOp::AllReduce
        };
        let secs = self.collective_seconds(comm, op, total);
        let after: Vec<OpId> = self.stage().last.into_iter().collect();
        let lane = self.stage().data;
        let id = self.comm_op(lane, "grad_reduce", secs, total, &after);
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
                let id = self.comm_op(lane, "grad_to_host", secs, shard, reduced);
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

    /// The optimizer step over `params` parameters with `state` bytes of state on the host CPUs
    /// or the optimizer node (`s.host`; a server's host shared by its GPUs), after `after`.
    fn host_op(&mut self, name: &'static str, params: f64, state: f64, after: &[OpId]) -> OpId {
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
            },
            after,
        )
    }

    /// Attention over a sequence split across the context-parallel group (`forward` or its
    /// backward). The all-gather variant gathers every rank's keys and values first (and
    /// reduce-scatters their gradients after the backward); ring attention computes one block per
    /// ring step while the next block's keys and values (and, backward, their gradients) travel to
    /// the neighbour, so the exchange hides behind the blocks' compute.
    fn context_attention(
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
                let id = self.comm_op(lane, "cp_kv_all_gather", secs, full, &after);
                self.stage().last = Some(id);
                let (k, _) = context_attention_kernel(kernel, s.cp, s.cp_algorithm, !forward);
                self.kernel(name, k, Some(layer), micro, model_flops);
                if !forward {
                    let secs =
                        self.collective_seconds(Comm::Context, CollectiveOp::ReduceScatter, full);
                    let after = self.compute_deps();
                    let id = self.comm_op(lane, "cp_dkv_reduce_scatter", secs, full, &after);
                    self.stage().last = Some(id);
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
                        pass = Some(self.comm_op(lane, "cp_ring_pass", secs, bytes, &after));
                    }
                    if let Some(p) = previous_pass {
                        self.waiting_on.push(p);
                    }
                    self.kernel(name, block, Some(layer), micro, model_flops);
                }
            }
        }
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

    /// An expert-parallel all-to-all of one micro-batch's routed tokens, in the compute stream's
    /// path.
    fn exchange(&mut self, name: &'static str, bytes: f64) {
        let Some(lane) = self.stage().expert else {
            return;
        };
        let secs = self.collective_seconds(Comm::Expert, CollectiveOp::AllToAll, bytes);
        let after = self.compute_deps();
        let id = self.comm_op(lane, name, secs, bytes, &after);
        self.stage().last = Some(id);
    }

    /// ZeRO-3: the next kernels need `layer`'s parameters gathered from the data-parallel group;
    /// the gather of `next` is issued right behind it, so that it overlaps this layer's compute
    /// (FSDP's one-layer prefetch).
    fn gather_params(&mut self, layer: u32, next: Option<u32>) {
        if self.setup.param_gather == ParamGather::OnDemand {
            return self.gather_on_demand(layer);
        }
        let Some(lane) = self.stage().gather else {
            return;
        };
        let m = &self.setup.model;
        for l in std::iter::once(layer).chain(next) {
            if !self.gathers.contains_key(&l) {
                let params = if m.has_attention(l) {
                    m.layer_params()
                } else {
                    m.layer_params() - m.attention_params()
                };
                let bytes = params as f64 / self.setup.tp as f64 * m.dtype.bytes();
                let secs = self.collective_seconds(Comm::Data, CollectiveOp::AllGather, bytes);
                let after: Vec<OpId> = self.stage().last.into_iter().collect();
                let id = self.comm_op(lane, "param_all_gather", secs, bytes, &after);
                self.gathers.insert(l, id);
            }
        }
        let id = self.gathers[&layer];
        self.waiting_on.push(id);
    }

    /// Runs the items of one layer forward (kernels and the syncs' forward collectives).
    fn forward_layer(
        &mut self,
        items: &[Item],
        layer: u32,
        micro: u32,
        model_flops: bool,
        act: f64,
    ) {
        for item in items {
            match item {
                Item::Kernel(step) if step.name == "attention" && self.setup.cp > 1 => {
                    self.context_attention(step.kernel, true, layer, micro, model_flops);
                }
                Item::Kernel(step) => {
                    self.kernel(step.name, step.kernel, Some(layer), micro, model_flops);
                }
                Item::Sync(sync) => self.sync(*sync, true, act),
                Item::Exchange(name) => self.exchange(name, self.routed_bytes),
            }
        }
    }

    /// Sends an activation (or its gradient) to the stage that runs model chunk `to_chunk`, after
    /// the last kernel; the send runs beside the compute stream.
    fn send(&mut self, to_chunk: u32, bytes: f64) -> OpId {
        let to_stage = to_chunk % self.setup.pp;
        let to = self.setup.stage_rank(to_stage);
        let secs = self.collective_seconds(Comm::Pipe(to), CollectiveOp::SendRecv, bytes);
        let after: Vec<OpId> = self.stage().last.into_iter().collect();
        let lane = self
            .stage()
            .send
            .expect("stages have a send lane when pp > 1");
        self.comm_op(lane, PIPELINE_SEND, secs, bytes, &after)
    }

    /// Builds the whole step.
    pub fn build(self) -> (Graph, Vec<Stage>) {
        let (graph, stages, _) = self.build_counting();
        (graph, stages)
    }

    /// The step, and every distinct collective its stage GPUs run with how many times each runs
    /// it (for the traffic of every link, `links.rs`).
    pub fn build_counting(mut self) -> (Graph, Vec<Stage>, Vec<CommUse>) {
        let s = self.setup;
        let m = &s.model;
        let (tp, pp, v) = (s.tp as u64, s.pp, s.virtual_stages);
        let h = m.hidden as u64;
        let vocab = m.vocab as u64 / tp;
        let e = m.dtype.bytes();
        // Each micro-batch's tokens, activation bytes at a tensor-parallel synchronisation and
        // what a stage sends to the next (its 1/tp share, Megatron-LM's scatter/gather
        // optimisation), its layers and output projection: one shape for all, or with
        // `[sequences]` each micro-batch its own.
        let shapes: Vec<Shape> = match &s.sequences {
            None => vec![Shape::uniform(s)],
            Some(q) => q
                .micro_batches
                .iter()
                .map(|mb| Shape::packed(s, mb))
                .collect(),
        };
        // (an asynchronous pipeline's steady state runs the step's micro-batches twice)
        let shape_of = |micro: u32| &shapes[micro as usize % shapes.len()];
        // Gradient bytes of a layer: the part every data-parallel replica holds, and the routed
        // experts' share that only the replicas with the same experts hold.
        let grads = |layer: u32| {
            let here = s.layer_params_here(layer) * s.grad_bytes;
            if m.is_moe_layer(layer) {
                let expert =
                    m.layer_expert_params() as f64 / (tp * s.ep as u64) as f64 * s.grad_bytes;
                (here - expert, expert)
            } else {
                (here, 0.0)
            }
        };
        let table_grad = (vocab * h) as f64 * s.grad_bytes;
        let chunks = pp * v;
        let last_chunk = chunks - 1;
        let final_micro = s.accumulation - 1;
        let asynchronous = s.schedule == Schedule::Async1F1B;
        // Adaptive recomputation: what each layer keeps, recomputes or compresses.
        let plan = (s.recompute == Recompute::Adaptive).then(|| activation_plan::plan(s));
        let orders: Vec<Vec<Work>> = (0..pp)
            .map(|st| schedule::order(s.schedule, pp, v, s.accumulation, st))
            .collect();
        let mut next = vec![0usize; pp as usize];
        // Sends by (micro-batch, model chunk that sent).
        let mut forward_sent: BTreeMap<(u32, u32), OpId> = BTreeMap::new();
        let mut backward_sent: BTreeMap<(u32, u32), OpId> = BTreeMap::new();
        loop {
            let mut progressed = false;
            for st in 0..pp as usize {
                while let Some(&work) = orders[st].get(next[st]) {
                    let chunk = work.chunk * pp + st as u32;
                    let needs = match work.pass {
                        Pass::Forward if chunk > 0 => {
                            Some(forward_sent.get(&(work.micro, chunk - 1)))
                        }
                        Pass::Backward if chunk < last_chunk => {
                            Some(backward_sent.get(&(work.micro, chunk + 1)))
                        }
                        _ => None,
                    };
                    let received = match needs {
                        Some(None) => break,
                        Some(Some(&id)) => Some(id),
                        None => None,
                    };
                    self.at = st;
                    self.waiting_on = received.into_iter().collect();
                    self.gathers.clear();
                    let micro = work.micro;
                    let shape = shape_of(micro);
                    let (t, act, p2p, output, kinds) =
                        (shape.t, shape.act, shape.p2p, shape.output, &shape.kinds);
                    self.attention_parts.clone_from(&shape.attention);
                    self.routed_bytes = shape.routed_bytes;
                    let layers = s.chunk_layers(chunk);
                    match work.pass {
                        Pass::Forward => {
                            if chunk == 0 {
                                self.kernel(
                                    "embedding",
                                    elementwise(ElementwiseOp::Other, 2.0 * act, 0.0),
                                    None,
                                    micro,
                                    true,
                                );
                                // The vocabulary-split embedding adds up its parts.
                                self.sync(Sync::G, true, act);
                            }
                            for layer in layers.clone() {
                                let next = (layer + 1 < layers.end).then_some(layer + 1);
                                self.gather_params(layer, next);
                                let items = kinds.of(m, layer);
                                self.forward_layer(items, layer, micro, true, act);
                                if let Some(p) = &plan {
                                    self.codec("activation_compress", p.compress_s(), layer, micro);
                                }
                            }
                            if chunk == last_chunk {
                                let norm = elementwise(
                                    ElementwiseOp::Norm,
                                    2.0 * act,
                                    8.0 * (t * h) as f64,
                                );
                                self.kernel("layernorm", norm, None, micro, true);
                                self.sync(Sync::F, true, act);
                                self.kernel("output_proj", output, None, micro, true);
                                // Softmax cross-entropy reads the logits and writes their gradient
                                // in fp32; a split vocabulary all-reduces the maxima, sums and
                                // target logits (3 floats a token).
                                let loss = elementwise(
                                    ElementwiseOp::Other,
                                    (t * vocab) as f64 * (e + 4.0),
                                    5.0 * (t * vocab) as f64,
                                );
                                self.kernel("loss", loss, None, micro, true);
                                self.tensor_sync(
                                    "tp_loss_all_reduce",
                                    CollectiveOp::AllReduce,
                                    12.0 * t as f64,
                                );
                            } else {
                                let id = self.send(chunk + 1, p2p);
                                forward_sent.insert((micro, chunk), id);
                            }
                        }
                        Pass::Backward => {
                            // Asynchronous pipelines reduce and apply every micro-batch's
                            // gradients on their own.
                            let finishing = micro == final_micro || asynchronous;
                            if chunk == last_chunk {
                                for (name, k) in backward(&Step {
                                    name: "output_proj",
                                    kernel: output,
                                }) {
                                    self.kernel(name, k, None, micro, true);
                                }
                                self.sync(Sync::F, false, act);
                                // The output projection's own copy of the table: untied, or on
                                // another stage than the embedding.
                                if finishing && (!m.tied_embeddings || pp > 1) {
                                    self.gradients(table_grad, false, false);
                                }
                            }
                            for layer in layers.clone().rev() {
                                let next = (layer > layers.start).then(|| layer - 1);
                                self.gather_params(layer, next);
                                let items = kinds.of(m, layer);
                                if s.recomputes(st as u32, micro) {
                                    self.forward_layer(items, layer, micro, false, act);
                                    if s.param_gather == ParamGather::OnDemand {
                                        self.regather_for_backward(layer);
                                    }
                                }
                                if s.recompute == Recompute::Op {
                                    let tp = s.tp as u64;
                                    for (name, k) in op_checkpoint::recomputed(items, m, tp) {
                                        self.kernel(name, k, Some(layer), micro, false);
                                    }
                                }
                                if let Some(p) = &plan {
                                    self.codec(
                                        "activation_decompress",
                                        p.decompress_s(),
                                        layer,
                                        micro,
                                    );
                                    for &(name, k) in p.recomputed() {
                                        self.kernel(name, k, Some(layer), micro, false);
                                    }
                                }
                                // Fused attention already recomputes its scores inside its
                                // backward kernel, which is what selective recomputation asks for;
                                // unfused attention runs its forward again (`recomputes_scores`).
                                for item in items.iter().rev() {
                                    if let Item::Kernel(step) = item
                                        && step.name == "attention"
                                        && s.recomputes_scores()
                                    {
                                        if s.cp > 1 {
                                            self.context_attention(
                                                step.kernel,
                                                true,
                                                layer,
                                                micro,
                                                false,
                                            );
                                        } else {
                                            let k = step.kernel;
                                            self.kernel("attention", k, Some(layer), micro, false);
                                        }
                                    }
                                    match item {
                                        Item::Kernel(step)
                                            if step.name == "attention" && s.cp > 1 =>
                                        {
                                            self.context_attention(
                                                step.kernel,
                                                false,
                                                layer,
                                                micro,
                                                true,
                                            );
                                        }
                                        Item::Kernel(step) => {
                                            for (name, k) in backward(step) {
                                                self.kernel(name, k, Some(layer), micro, true);
                                            }
                                        }
                                        Item::Sync(sync) => self.sync(*sync, false, act),
                                        Item::Exchange(name) => {
                                            self.exchange(name, self.routed_bytes)
                                        }
                                    }
                                }
                                let (shared, expert) = grads(layer);
                                // ZeRO-3 shards gradients: each layer's are reduce-scattered
                                // every micro-batch.
                                if s.zero == 3 && s.param_gather == ParamGather::OnDemand {
                                    self.reduce_on_demand(layer);
                                    self.gradients(expert, true, true);
                                } else if s.zero == 3 || finishing {
                                    self.gradients(shared, s.zero == 3, false);
                                    self.gradients(expert, s.zero == 3, true);
                                }
                            }
                            if chunk == 0 {
                                self.kernel(
                                    "embedding_bwd",
                                    elementwise(ElementwiseOp::Other, 2.0 * act, 0.0),
                                    None,
                                    micro,
                                    true,
                                );
                                if finishing {
                                    self.gradients(table_grad, false, false);
                                }
                            } else {
                                let id = self.send(chunk - 1, p2p);
                                backward_sent.insert((micro, chunk), id);
                            }
                            if asynchronous {
                                self.update(st);
                            }
                        }
                    }
                    self.waiting_on.clear();
                    next[st] += 1;
                    progressed = true;
                }
            }
            if next.iter().zip(&orders).all(|(n, o)| *n == o.len()) {
                break;
            }
            assert!(
                progressed,
                "pipeline schedule {:?} deadlocked with stages at {next:?}",
                s.schedule
            );
        }
        for st in (0..pp as usize).filter(|_| !asynchronous) {
            self.update(st);
        }
        let uses = self
            .priced
            .iter()
            .zip(&self.uses)
            .map(|(&(base, comm, op, bytes, seconds), &count)| CommUse {
                base,
                comm,
                op,
                bytes,
                count,
                seconds,
            })
            .collect();
        (self.graph, self.stages, uses)
    }

    /// Stage `st`'s weight update: its last gradient buckets, then the optimizer step.
    fn update(&mut self, st: usize) {
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
            .stage()
            .last
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
                self.comm_op(lane, "weights_to_gpu", secs, bytes, &[cpu])
            }
            // The node's updates ran as the buckets arrived; the step ends with the last.
            OptimizerOffload::Network => *deps.last().expect("ZeRO-3 reduces every step"),
        };
        self.stage().optimizer = Some(opt);
        self.stage().last = Some(opt);
        if matches!(s.zero, 1 | 2) && s.gradient_ranks() > 1 {
            // All-gather the updated 16-bit weights (ZeRO-3 gathers them layer by layer at the
            // next step instead).
            let bytes = params * m.dtype.bytes();
            let secs = self.collective_seconds(Comm::Data, CollectiveOp::AllGather, bytes);
            let lane = self.stage().data;
            self.comm_op(lane, "param_all_gather", secs, bytes, &[opt]);
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
            },
            deps,
        );
        // (GaLore's projections folded into the step are drawn at the step's power.)
        self.graph.counters[self.at].values.push((opt, cost.watts));
        opt
    }
}
