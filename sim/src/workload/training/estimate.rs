//! A closed-form estimate of one training step (seconds and bytes), for ranking thousands of
//! layouts before the few best are simulated in full. Entry point: [`Estimator::estimate`].
//!
//! It prices the same kernels (`layer`) and collectives (`comm`, on the analytical network tier)
//! as the step graph, but adds them up instead of scheduling them: a micro-batch's forward and
//! backward on a stage are its layers' kernels, any recomputation, and the communication left in
//! their path (tensor-parallel collectives overlap does not hide, expert all-to-alls, and the
//! context-parallel exchanges and ZeRO-3 gathers that outlast what hides them); the pipeline
//! takes m + pp - 1 such rounds (m + (pp - 1) / v interleaved); the data-parallel reduction hides
//! behind the last backward but its last bucket, then ZeRO 1/2's all-gather and the optimizer
//! step follow. Kernels beside an overlapped collective slow as `exec::Contention` says.
//!
//! Ignored (the full simulation sees them): contention between collectives of different groups,
//! the exact interleaved order, steady-state point-to-point waits, expert gradients' own group,
//! on-demand ZeRO-3 gathering (estimated as prefetched). Details: docs/TRAINING.md#estimates

use super::comm::Comm;
use super::layer::{Item, LayerKinds, Sync, backward, context_attention_kernel, elementwise, gemm};
use super::memory;
use super::policy::{ContextAlgorithm, OptimizerOffload, Recompute, Schedule};
use super::setup::TrainingConfig;
use super::step::BUCKET_BYTES;
use crate::collective::CollectiveOp;
use crate::hw::{ComputeModel, ElementwiseOp, Kernel};
use crate::net::tier::Tier;
use std::collections::HashMap;

/// The estimate of one step, seconds and bytes.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Estimate {
    pub iteration_s: f64,
    /// Compute kernels of the busiest stage.
    pub compute_s: f64,
    /// Pipeline fill and drain.
    pub bubble_s: f64,
    /// Communication in the compute stream's path.
    pub exposed_communication_s: f64,
    /// Memory of the stage that needs the most, and whether it fits.
    pub peak_bytes: f64,
    pub fits: bool,
}

/// Times of one layer for one micro-batch on one GPU.
#[derive(Copy, Clone, Debug, Default)]
struct LayerTimes {
    forward_compute: f64,
    forward_comm: f64,
    backward_compute: f64,
    backward_comm: f64,
}

/// What kernel prices depend on: micro-batch, context degree, tensor and expert degrees,
/// sequence parallelism, ring attention.
type KernelKey = (u64, u64, u64, bool, bool);

/// A dense layer's times, a mixture-of-experts layer's, and the seconds of the kernels outside
/// the layers on the first and on the last stage (forward and backward together).
/// Layer kernels (dense, mixture-of-experts, and both without attention), embedding, head.
type Kernels = (LayerTimes, LayerTimes, LayerTimes, LayerTimes, f64, f64);

/// Prices layouts of one model on one cluster, remembering kernel and collective prices across
/// layouts (they repeat: the same tensor-parallel degree and micro-batch recur under many
/// pipeline and data-parallel degrees).
pub struct Estimator<'a> {
    compute: &'a ComputeModel,
    /// Kernels' rate beside a running collective (1: they do not slow).
    contended: f64,
    kernels: HashMap<KernelKey, Kernels>,
    collectives: HashMap<(Comm, CollectiveOp, u64, [u32; 5]), f64>,
}

impl<'a> Estimator<'a> {
    pub fn new(compute: &'a ComputeModel) -> Self {
        Estimator {
            compute,
            contended: 1.0,
            kernels: HashMap::new(),
            collectives: HashMap::new(),
        }
    }

    /// Extra seconds `compute` seconds of kernels take beside a collective of `comm` seconds that
    /// starts with them.
    fn slowed(&self, compute: f64, comm: f64) -> f64 {
        let r = self.contended;
        comm.min(compute / r).max(0.0) * (1.0 - r)
    }

    /// What a collective of `comm` seconds beside `compute` seconds of kernels adds to them: the
    /// kernels' slowdown and the part of the collective that outlasts them, at least `floor`.
    fn beside(&self, compute: f64, comm: f64, floor: f64) -> f64 {
        let slowed = self.slowed(compute, comm);
        slowed + (comm - compute - slowed).max(floor)
    }

    fn seconds(&self, kernel: &Kernel) -> f64 {
        self.compute
            .cost(kernel)
            .expect("the set-up checked that the GPU computes in the model's format")
            .seconds
    }

    /// A collective on stage 0's communicator, priced on the analytical tier.
    fn collective(&mut self, s: &TrainingConfig, comm: Comm, op: CollectiveOp, bytes: f64) -> f64 {
        if bytes <= 0.0 {
            return 0.0;
        }
        let key = (comm, op, bytes.to_bits(), [s.tp, s.cp, s.dp, s.pp, s.ep]);
        if let Some(&secs) = self.collectives.get(&key) {
            return secs;
        }
        let secs = s.collective_seconds(0, comm, op, bytes, Tier::Analytical);
        self.collectives.insert(key, secs);
        secs
    }

    /// Kernel seconds of one layer (dense, and mixture-of-experts where the model has it) for one
    /// micro-batch, forward and backward, with the collectives split out (filled in by `layer`);
    /// and the forward and backward kernels outside the layers (embedding on the first stage,
    /// output projection and loss on the last).
    fn kernels(&mut self, s: &TrainingConfig) -> Kernels {
        let key = (
            s.micro_batch as u64,
            s.cp as u64,
            s.tp as u64 * 1000 + s.ep as u64,
            s.sequence_parallel,
            s.cp_algorithm == ContextAlgorithm::Ring,
        );
        if let Some(&k) = self.kernels.get(&key) {
            return k;
        }
        let m = &s.model;
        let (mb, cp, tp) = (s.micro_batch as u64, s.cp as u64, s.tp as u64);
        let sum = |items: &[Item], this: &Self| {
            let mut t = LayerTimes::default();
            for item in items {
                if let Item::Kernel(step) = item {
                    let (f, b) = if step.name == "attention" && cp > 1 {
                        this.context_attention(s, step.kernel)
                    } else {
                        (
                            this.seconds(&step.kernel),
                            backward(step).map(|(_, k)| this.seconds(&k)).sum(),
                        )
                    };
                    t.forward_compute += f;
                    t.backward_compute += b;
                }
            }
            t
        };
        let kinds = LayerKinds::of_setup(s);
        let dense = sum(kinds.kind(false, true), self);
        let moe = m
            .moe
            .as_ref()
            .map_or(dense, |_| sum(kinds.kind(true, true), self));
        let bare_dense = sum(kinds.kind(false, false), self);
        let bare_moe = sum(kinds.kind(true, false), self);
        let t = mb * m.seq_len as u64 / cp;
        let h = m.hidden as u64;
        let act = (t * h) as f64 * m.dtype.bytes();
        let vocab = m.vocab as u64 / tp;
        let embedding = self.seconds(&elementwise(ElementwiseOp::Other, 2.0 * act, 0.0));
        let output = gemm(t, vocab, h, m.dtype);
        let loss = elementwise(
            ElementwiseOp::Other,
            (t * vocab) as f64 * (m.dtype.bytes() + 4.0),
            5.0 * (t * vocab) as f64,
        );
        let head_forward = self.seconds(&output) + self.seconds(&loss);
        let head_backward = 3.0 * self.seconds(&output);
        let result = (
            dense,
            moe,
            bare_dense,
            bare_moe,
            2.0 * embedding,
            head_forward + head_backward,
        );
        self.kernels.insert(key, result);
        result
    }

    /// Forward and backward compute seconds of attention split over the context-parallel group
    /// (its communication is added by `layer`).
    fn context_attention(&self, s: &TrainingConfig, kernel: Kernel) -> (f64, f64) {
        let pass = |backward: bool| {
            let (k, runs) = context_attention_kernel(kernel, s.cp, s.cp_algorithm, backward);
            runs as f64 * self.seconds(&k)
        };
        (pass(false), pass(true))
    }

    /// One layer's times, collectives included, for the layout `s` (a layer with or without
    /// attention).
    fn layer(&mut self, s: &TrainingConfig, moe_layer: bool, attention: bool) -> LayerTimes {
        let (dense, moe, bare_dense, bare_moe, ..) = self.kernels(s);
        let mut t = match (moe_layer, attention) {
            (false, true) => dense,
            (true, true) => moe,
            (false, false) => bare_dense,
            (true, false) => bare_moe,
        };
        let m = &s.model;
        let tokens = (s.micro_batch * m.seq_len / s.cp) as f64;
        let act = tokens * m.hidden as f64 * m.dtype.bytes();
        let kinds = LayerKinds::of_setup(s);
        let items = kinds.kind(moe_layer, attention);
        let routed = m.moe.as_ref().map_or(0.0, |moe| act * moe.top_k as f64);
        let (mut forward_tp, mut backward_tp, mut dgrad_tp, mut dgrad_exposed, mut dgrad_slowed) =
            (0.0, 0.0, 0.0, 0.0, 0.0);
        let mut experts = false;
        for (i, item) in items.iter().enumerate() {
            match item {
                Item::Sync(sync) if s.tp > 1 => {
                    let bytes = s.sync_bytes(experts, routed, act);
                    for forward in [true, false] {
                        if let Some(op) = sync.collective(forward, s.sequence_parallel) {
                            let secs = self.collective(s, Comm::Tensor, op, bytes);
                            match (forward, sync) {
                                (true, _) => forward_tp += secs,
                                (false, Sync::F) if s.tp_dgrad_overlap => {
                                    dgrad_tp += secs;
                                    // Beside the weight-gradient GEMM of the column-split GEMM
                                    // whose input gradient it carries (the next GEMM).
                                    let wgrad = self.next_wgrad_seconds(&items[i..]);
                                    let slowed = self.slowed(wgrad, secs);
                                    dgrad_slowed += slowed;
                                    dgrad_exposed += (secs - wgrad - slowed).max(0.0);
                                }
                                (false, _) => backward_tp += secs,
                            }
                        }
                    }
                }
                Item::Exchange(_) => {
                    experts = !experts;
                    if s.ep > 1 {
                        let bytes = s.exchanged_bytes(routed);
                        let secs = self.collective(s, Comm::Expert, CollectiveOp::AllToAll, bytes);
                        t.forward_comm += secs;
                        t.backward_comm += secs;
                    }
                }
                _ => {}
            }
        }
        if s.tp_comm_overlap {
            // Beside the GEMMs, which they slow: only what outlasts them shows.
            t.forward_compute += self.slowed(t.forward_compute, forward_tp);
            forward_tp = (forward_tp - t.forward_compute).max(0.0);
            let backward = backward_tp + dgrad_tp;
            t.backward_compute += self.slowed(t.backward_compute, backward);
            backward_tp = (backward - t.backward_compute).max(0.0);
        } else {
            t.backward_compute += dgrad_slowed;
            backward_tp += dgrad_exposed;
        }
        t.forward_comm += forward_tp;
        t.backward_comm += backward_tp;
        if s.cp > 1 && attention {
            let (f, b) = self.context_comm(s);
            t.forward_comm += f;
            t.backward_comm += b;
        }
        if s.zero == 3 && s.gradient_ranks() > 1 {
            let bytes = s.layer_params_here(0) * m.dtype.bytes();
            let gather = self.collective(s, Comm::Data, CollectiveOp::AllGather, bytes);
            t.forward_compute += self.slowed(t.forward_compute, gather);
            t.backward_compute += self.slowed(t.backward_compute, gather);
            t.forward_comm += (gather - t.forward_compute).max(0.0);
            t.backward_comm += (gather - t.backward_compute).max(0.0);
        }
        if s.recompute == Recompute::Full {
            // The layers that rerun their forward, spread over all (`recompute_layers`).
            let share = s.recomputed_share();
            t.backward_compute += share * t.forward_compute;
            t.backward_comm += share * t.forward_comm;
        }
        if s.recompute == Recompute::Op {
            t.backward_compute += super::op_checkpoint::recomputed(items, m, s.tp as u64)
                .iter()
                .map(|(_, k)| self.seconds(k))
                .sum::<f64>();
        }
        if s.recompute == Recompute::Adaptive {
            let plan = super::activation_plan::plan(s);
            t.forward_compute += plan.compress_s();
            t.backward_compute +=
                plan.decompress_s() + plan.recomputed().map(|(_, k)| self.seconds(k)).sum::<f64>();
        } else if attention && s.recomputes_scores() {
            let core = kinds
                .kind(moe_layer, attention)
                .iter()
                .find_map(|item| match item {
                    Item::Kernel(step) if step.name == "attention" => Some(step.kernel),
                    _ => None,
                });
            if let Some(kernel) = core {
                t.backward_compute += self.context_attention(s, kernel).0;
            }
        }
        t
    }

    /// Seconds of the weight-gradient GEMM of the first GEMM among `items`; 0 when there is none.
    fn next_wgrad_seconds(&self, items: &[Item]) -> f64 {
        items
            .iter()
            .find_map(|item| match item {
                Item::Kernel(step) if matches!(step.kernel, Kernel::Gemm { .. }) => {
                    backward(step).last().map(|(_, k)| self.seconds(&k))
                }
                _ => None,
            })
            .unwrap_or(0.0)
    }

    /// Context-parallel communication in a layer's path, forward and backward: the all-gather
    /// (and the backward's reduce-scatter) of keys and values, or what ring passes add beyond the
    /// attention blocks they overlap.
    fn context_comm(&mut self, s: &TrainingConfig) -> (f64, f64) {
        let m = &s.model;
        let q_len = (m.seq_len / s.cp) as f64;
        let local_kv = 2.0
            * s.micro_batch as f64
            * q_len
            * (m.kv_heads / s.tp) as f64
            * m.head_dim() as f64
            * m.dtype.bytes();
        match s.cp_algorithm {
            ContextAlgorithm::AllGather => {
                let full = local_kv * s.cp as f64;
                let gather = self.collective(s, Comm::Context, CollectiveOp::AllGather, full);
                let scatter = self.collective(s, Comm::Context, CollectiveOp::ReduceScatter, full);
                (gather, gather + scatter)
            }
            ContextAlgorithm::Ring => {
                let steps = (s.cp - 1) as f64;
                let forward =
                    self.collective(s, Comm::ContextPeer, CollectiveOp::SendRecv, local_kv);
                let backward =
                    self.collective(s, Comm::ContextPeer, CollectiveOp::SendRecv, 2.0 * local_kv);
                let (dense, ..) = self.kernels(s);
                // Each pass hides behind one block of attention, which it slows; the blocks are a
                // share of the layer's compute, so charge only passes beyond the layer's compute
                // (and the blocks' slowdown, here with the communication).
                let block_f = dense.forward_compute / s.cp as f64;
                let block_b = dense.backward_compute / s.cp as f64;
                (
                    steps * self.beside(block_f, forward, 0.0),
                    steps * self.beside(block_b, backward, 0.0),
                )
            }
        }
    }

    /// The estimate of a step with layout `s`.
    pub fn estimate(&mut self, s: &TrainingConfig) -> Estimate {
        self.contended = s.contention().1.map_or(1.0, |c| c.rate());
        let (compute, comm) = self.stage_work(s);
        let round = compute + comm;
        let micro = s.accumulation as f64;
        let (bubble_rounds, hand_offs) = self.pipeline_overhead(s);
        let pipeline = micro * round + bubble_rounds * round + hand_offs;
        // Gradient reduction of the busiest stage, overlapping its last backward but the last
        // bucket.
        let busiest = (0..s.pp)
            .max_by(|a, b| s.stage_params(*a).total_cmp(&s.stage_params(*b)))
            .expect("a stage");
        let params = s.stage_params(busiest);
        let data = self.gradient_sync(s, params, round);
        let optimizer = self.optimizer_seconds(s, busiest, params);
        // Asynchronous pipelines update (and reduce) after every micro-batch.
        let (data, optimizer) = if s.schedule == Schedule::Async1F1B {
            (micro * data, micro * optimizer)
        } else {
            (data, optimizer)
        };
        let (_, mem) = memory::memory(s);
        let peak = mem.peak();
        Estimate {
            iteration_s: pipeline + data + optimizer,
            compute_s: micro * compute + optimizer,
            bubble_s: bubble_rounds * round + hand_offs,
            exposed_communication_s: micro * comm + data,
            peak_bytes: peak,
            fits: peak <= s.gpu.memory_bytes as f64,
        }
    }

    /// Per micro-batch work of the first or last stage, whichever is longer (all its chunks),
    /// seconds: compute, and communication with ZeRO-3's unhidden gathers.
    fn stage_work(&mut self, s: &TrainingConfig) -> (f64, f64) {
        let m = &s.model;
        let dense = self.layer(s, false, true);
        let moe = if m.moe.is_some() {
            self.layer(s, true, true)
        } else {
            dense
        };
        let skips = m.attention_layers() < m.layers;
        let bare_dense = if skips {
            self.layer(s, false, false)
        } else {
            dense
        };
        let bare_moe = if skips && m.moe.is_some() {
            self.layer(s, true, false)
        } else {
            bare_dense
        };
        let (.., embedding, head) = self.kernels(s);
        let pp = s.pp;
        // Per micro-batch work of a stage (all its chunks), compute and communication apart.
        let stage_work = |stage: u32| {
            let (mut compute, mut comm) = (0.0, 0.0);
            for c in 0..s.virtual_stages {
                for layer in s.chunk_layers(c * pp + stage) {
                    let t = match (m.is_moe_layer(layer), m.has_attention(layer)) {
                        (false, true) => dense,
                        (true, true) => moe,
                        (false, false) => bare_dense,
                        (true, false) => bare_moe,
                    };
                    compute += t.forward_compute + t.backward_compute;
                    comm += t.forward_comm + t.backward_comm;
                }
            }
            if stage == 0 {
                compute += embedding;
            }
            if stage == pp - 1 {
                compute += head;
            }
            (compute, comm)
        };
        let (compute, comm) = [0, pp - 1]
            .into_iter()
            .map(stage_work)
            .max_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)))
            .expect("a stage");
        // ZeRO-3 prefetches one layer ahead within a pass of a chunk, so the first layer's
        // gather of every chunk pass waits in full.
        let comm = comm
            + if s.zero == 3 && s.gradient_ranks() > 1 {
                let bytes = s.layer_params_here(0) * m.dtype.bytes();
                2.0 * s.virtual_stages as f64
                    * self.collective(s, Comm::Data, CollectiveOp::AllGather, bytes)
            } else {
                0.0
            };
        (compute, comm)
    }

    /// The pipeline's fill and drain, in rounds of a micro-batch's work, and the seconds of the
    /// hand-offs between stages on the way.
    fn pipeline_overhead(&mut self, s: &TrainingConfig) -> (f64, f64) {
        let m = &s.model;
        let pp = s.pp;
        let v = s.virtual_stages as f64;
        let tokens = (s.micro_batch * m.seq_len / s.cp) as f64;
        let hand_off = if pp > 1 {
            let bytes = tokens * m.hidden as f64 * m.dtype.bytes() / s.tp as f64;
            let to = s.stage_rank(1);
            self.collective(s, Comm::Pipe(to), CollectiveOp::SendRecv, bytes)
        } else {
            0.0
        };
        let bubble_rounds = match s.schedule {
            _ if pp == 1 => 0.0,
            Schedule::Gpipe | Schedule::OneFOneB => (pp - 1) as f64,
            Schedule::Interleaved1F1B => (pp - 1) as f64 / v,
            // Filled once per run, never drained between steps.
            Schedule::Async1F1B => 0.0,
        };
        let asynchronous = s.schedule == Schedule::Async1F1B;
        let hand_offs = if pp > 1 && !asynchronous {
            2.0 * (pp as f64 * v - 1.0) * hand_off
        } else {
            0.0
        };
        (bubble_rounds, hand_offs)
    }

    /// Exposed seconds of the gradient reduction of a stage of `params` parameters whose
    /// micro-batch takes `round` seconds, and of ZeRO 1/2's all-gather of the updated weights.
    fn gradient_sync(&mut self, s: &TrainingConfig, params: f64, round: f64) -> f64 {
        let mut data = 0.0;
        if s.gradient_ranks() > 1 {
            let micro = s.accumulation as f64;
            let op = if s.zero >= 1 {
                CollectiveOp::ReduceScatter
            } else {
                CollectiveOp::AllReduce
            };
            let grads = params * s.grad_bytes;
            let last_backward = round / 2.0;
            if s.zero == 3 {
                // Reduce-scattered layer by layer every micro-batch, beside the backward.
                let layers = s.stage_layers(0).max(1) as f64;
                let per_layer = self.collective(s, Comm::Data, op, grads / layers);
                data += self.beside(micro * last_backward, micro * layers * per_layer, per_layer);
            } else {
                let full = (grads / BUCKET_BYTES).floor();
                let rest = grads - full * BUCKET_BYTES;
                let bucket = self.collective(s, Comm::Data, op, BUCKET_BYTES.min(grads));
                let last = self.collective(s, Comm::Data, op, rest);
                let total = full * bucket + last;
                let floor = if rest > 0.0 { last } else { bucket };
                data += self.beside(last_backward, total, floor);
            }
            if matches!(s.zero, 1 | 2) {
                data += self.collective(
                    s,
                    Comm::Data,
                    CollectiveOp::AllGather,
                    params * s.model.dtype.bytes(),
                );
            }
        }
        data
    }

    /// Seconds of the optimizer step of stage `busiest` (`params` parameters), on the GPU or
    /// offloaded.
    fn optimizer_seconds(&mut self, s: &TrainingConfig, busiest: u32, params: f64) -> f64 {
        let shards = if s.zero >= 1 {
            s.gradient_ranks() as f64
        } else {
            1.0
        };
        let step = s.optimizer.step_kernel(
            params / shards,
            s.optimizer.state_bytes(s, busiest) / shards,
        );
        // An offloaded optimizer: the host step and the weights' return after the backward (the
        // gradient copies overlap it); the optimizer node's updates hide behind it.
        match s.optimizer_offload {
            OptimizerOffload::Gpu => {
                self.seconds(&step)
                    + s.optimizer
                        .projection_kernels(s, busiest)
                        .iter()
                        .map(|(k, share)| share * self.seconds(k))
                        .sum::<f64>()
            }
            OptimizerOffload::Host => {
                let host = s.optimizer_host().expect("a host when offloading");
                let state = s.optimizer.state_bytes(s, busiest) / shards;
                s.optimizer.host_step(&host, params / shards, state).0
                    + s.topology
                        .host_copy_seconds(params / shards * s.model.dtype.bytes())
            }
            OptimizerOffload::Network => 0.0,
        }
    }
}
