//! One training step of one GPU, standing for its tensor-parallel and data-parallel peers, as a
//! graph of operations.
//!
//! Each micro-batch runs the embedding, every layer's forward, the output projection and loss, then
//! the backward in reverse; full recomputation re-runs a layer's forward just before its backward.
//! Gradients are reduced across replicas in buckets during the last micro-batch's backward, on a
//! communication lane that overlaps the remaining backward (as PyTorch DDP and Megatron-LM do); the
//! optimizer step waits for every bucket. With ZeRO 1 or 2 the reduction is a reduce-scatter and the
//! updated weights are all-gathered after the step.
//!
//! The operations of a layer and their shapes (t = micro_batch x seq_len tokens, h = hidden):
//! layer norm, QKV projection (t x h by h x qkv), fused causal attention, output projection
//! (t x h by h x h), residual add, layer norm, up projection (h x ffn, doubled when gated),
//! activation, down projection (ffn x h), residual add. A GEMM's backward is two GEMMs (input
//! gradient and weight gradient); an elementwise operation's backward moves twice the bytes.
//!
//! Tensor parallelism splits them as Megatron-LM does: QKV and up projections by columns, output
//! and down projections by rows, attention by heads, the vocabulary of the embedding and output
//! projection by rows. Its conjugate operators sit around each half-layer: `f` before a column-split
//! GEMM (identity forward, all-reduce backward) and `g` after a row-split one (all-reduce forward,
//! identity backward). With sequence parallelism layer norms and residual adds run on 1/tp of the
//! tokens and the all-reduces become all-gathers (`f` forward, `g` backward) and reduce-scatters (`g`
//! forward, `f` backward), the same bytes. Tensor-parallel collectives block the compute stream, as
//! Megatron-LM runs them by default; they are drawn on a lane of their own.
//! Ignored: dropout kernels, the embedding's backward scatter (small), data loading.

use super::setup::Training;
use crate::collective::cost::{Collective, Options, cost};
use crate::collective::{Algorithm, CollectiveOp, Group};
use crate::engine::SimTime;
use crate::exec::{Graph, LaneId, Op, OpId, OpKind};
use crate::hw::{ComputeModel, Dtype, Kernel};
use crate::model::Transformer;
use crate::scenario::parallel::Recompute;
use std::borrow::Cow;

/// Gradient bucket size, bytes: PyTorch DDP's default of 25 MiB.
pub const BUCKET_BYTES: f64 = 25.0 * 1024.0 * 1024.0;
/// Gradients are reduced in fp32, Megatron-LM's default.
pub const GRAD_BYTES: f64 = 4.0;
/// Bytes an Adam step touches per parameter: read and write fp32 master weight, first and second
/// moment (24), read the fp32 gradient (4), write the bf16 weight (2).
pub const ADAM_BYTES_PER_PARAM: f64 = 30.0;

/// A named kernel of one layer.
struct Step {
    name: &'static str,
    kernel: Kernel,
}

/// Megatron-LM's tensor-parallel conjugate operators.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Sync {
    /// Before a column-split GEMM: identity forward, all-reduce backward.
    F,
    /// After a row-split GEMM: all-reduce forward, identity backward.
    G,
}

/// One position in a layer: a kernel, or a tensor-parallel synchronisation.
enum Item {
    Kernel(Step),
    Sync(Sync),
}

fn gemm(m: u64, n: u64, k: u64, dtype: Dtype) -> Kernel {
    Kernel::Gemm {
        m,
        n,
        k,
        batch: 1,
        dtype,
    }
}

fn elementwise(bytes: f64, flops: f64) -> Kernel {
    Kernel::Memory { bytes, flops }
}

/// The forward of one layer on one tensor-parallel rank.
fn layer_forward(m: &Transformer, micro_batch: u64, tp: u64, sequence_parallel: bool) -> Vec<Item> {
    let t = micro_batch * m.seq_len as u64;
    // Tokens that layer norms and residual adds see.
    let tn = if sequence_parallel { t / tp.max(1) } else { t };
    let h = m.hidden as u64;
    let e = m.dtype.bytes();
    let act = |tokens: u64, width: u64| (tokens * width) as f64 * e;
    let ffn = m.ffn as u64 / tp;
    let k = |name, kernel| Item::Kernel(Step { name, kernel });
    vec![
        k(
            "layernorm",
            elementwise(2.0 * act(tn, h), 8.0 * (tn * h) as f64),
        ),
        Item::Sync(Sync::F),
        k("qkv_proj", gemm(t, m.qkv_width() / tp, h, m.dtype)),
        k(
            "attention",
            Kernel::Attention {
                batch_heads: micro_batch * m.heads as u64 / tp,
                q_len: m.seq_len as u64,
                kv_len: m.seq_len as u64,
                head_dim: m.head_dim(),
                causal: true,
                backward: false,
                dtype: m.dtype,
            },
        ),
        k("out_proj", gemm(t, h, h / tp, m.dtype)),
        Item::Sync(Sync::G),
        k(
            "residual_add",
            elementwise(3.0 * act(tn, h), (tn * h) as f64),
        ),
        k(
            "layernorm",
            elementwise(2.0 * act(tn, h), 8.0 * (tn * h) as f64),
        ),
        Item::Sync(Sync::F),
        k("mlp_up", gemm(t, m.up_width() / tp, h, m.dtype)),
        k(
            "mlp_act",
            elementwise(
                act(t, m.up_width() / tp) + act(t, ffn),
                8.0 * (t * ffn) as f64,
            ),
        ),
        k("mlp_down", gemm(t, h, ffn, m.dtype)),
        Item::Sync(Sync::G),
        k(
            "residual_add",
            elementwise(3.0 * act(tn, h), (tn * h) as f64),
        ),
    ]
}

/// The backward kernels of one forward kernel, with their names.
fn backward(step: &Step) -> Vec<(&'static str, Kernel)> {
    match step.kernel {
        Kernel::Gemm { m, n, k, dtype, .. } => vec![
            (grad_name(step.name, false), gemm(m, k, n, dtype)),
            (grad_name(step.name, true), gemm(k, n, m, dtype)),
        ],
        Kernel::Attention { .. } => {
            let mut kernel = step.kernel;
            if let Kernel::Attention { backward, .. } = &mut kernel {
                *backward = true;
            }
            vec![("attention_bwd", kernel)]
        }
        Kernel::Memory { bytes, flops } => {
            vec![(
                grad_name(step.name, false),
                elementwise(2.0 * bytes, 2.0 * flops),
            )]
        }
    }
}

fn grad_name(forward: &'static str, weights: bool) -> &'static str {
    match (forward, weights) {
        ("qkv_proj", false) => "qkv_proj_dgrad",
        ("qkv_proj", true) => "qkv_proj_wgrad",
        ("out_proj", false) => "out_proj_dgrad",
        ("out_proj", true) => "out_proj_wgrad",
        ("mlp_up", false) => "mlp_up_dgrad",
        ("mlp_up", true) => "mlp_up_wgrad",
        ("mlp_down", false) => "mlp_down_dgrad",
        ("mlp_down", true) => "mlp_down_wgrad",
        ("output_proj", false) => "output_proj_dgrad",
        ("output_proj", true) => "output_proj_wgrad",
        ("layernorm", _) => "layernorm_bwd",
        ("residual_add", _) => "residual_add_bwd",
        ("mlp_act", _) => "mlp_act_bwd",
        ("loss", _) => "loss_bwd",
        ("embedding", _) => "embedding_bwd",
        _ => "backward",
    }
}

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

/// Builds the step graph of one replica, with durations priced by `compute` and the fabric.
pub struct StepBuilder<'a> {
    pub setup: &'a Training,
    pub compute: &'a ComputeModel,
    graph: Graph,
    compute_lane: LaneId,
    comm_lane: LaneId,
    tp_lane: Option<LaneId>,
    last: Option<OpId>,
    /// Collective prices by (group, operation, bytes): buckets and layers repeat a few sizes.
    priced: Vec<(Comm, CollectiveOp, f64, f64)>,
}

/// Which communicator a collective runs on.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Comm {
    /// The tensor-parallel group of rank 0: ranks 0..tp.
    Tensor,
    /// The data-parallel group of rank 0: ranks 0, tp, 2 tp, ...
    Data,
}

impl<'a> StepBuilder<'a> {
    pub fn new(setup: &'a Training, compute: &'a ComputeModel) -> Self {
        let mut graph = Graph::new();
        let compute_lane = graph.add_lane("compute", "GPU 0");
        let comm_lane = graph.add_lane("data-parallel comm", "GPU 0");
        let tp_lane = (setup.tp > 1).then(|| graph.add_lane("tensor-parallel comm", "GPU 0"));
        StepBuilder {
            setup,
            compute,
            graph,
            compute_lane,
            comm_lane,
            tp_lane,
            last: None,
            priced: Vec::new(),
        }
    }

    fn kernel(
        &mut self,
        name: &'static str,
        kernel: Kernel,
        layer: Option<u32>,
        micro_batch: u32,
        model_flops: bool,
    ) -> OpId {
        let cost = self
            .compute
            .cost(&kernel)
            .expect("the set-up checked that the GPU computes in the model's format");
        let kind = if matches!(kernel, Kernel::Memory { .. }) {
            OpKind::Memory
        } else {
            OpKind::Compute
        };
        let deps: Vec<OpId> = self.last.into_iter().collect();
        let id = self.graph.add(
            Op {
                name: Cow::Borrowed(name),
                lane: self.compute_lane,
                kind,
                duration: SimTime::from_secs_f64(cost.seconds),
                flops: cost.flops,
                bytes: cost.bytes,
                tier: cost.tier.name(),
                layer,
                micro_batch: Some(micro_batch),
                model_flops,
            },
            &deps,
        );
        self.last = Some(id);
        id
    }

    fn communication(
        &mut self,
        name: &'static str,
        seconds: f64,
        bytes: f64,
        after: &[OpId],
    ) -> OpId {
        let lane = self.comm_lane;
        self.comm_op(lane, name, seconds, bytes, after)
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
        let Some(lane) = self.tp_lane else {
            return;
        };
        let secs = self.collective_seconds(Comm::Tensor, op, bytes);
        let after: Vec<OpId> = self.last.into_iter().collect();
        let id = self.comm_op(lane, name, secs, bytes, &after);
        self.last = Some(id);
    }

    /// The collective a conjugate operator runs in the forward or the backward pass, if any.
    fn sync(&mut self, sync: Sync, forward: bool, bytes: f64) {
        let sp = self.setup.sequence_parallel;
        let op = match (sync, forward, sp) {
            (Sync::F, true, false) | (Sync::G, false, false) => return,
            (Sync::F, true, true) | (Sync::G, false, true) => CollectiveOp::AllGather,
            (Sync::G, true, true) | (Sync::F, false, true) => CollectiveOp::ReduceScatter,
            (Sync::G, true, false) | (Sync::F, false, false) => CollectiveOp::AllReduce,
        };
        let name = match op {
            CollectiveOp::AllGather => "tp_all_gather",
            CollectiveOp::ReduceScatter => "tp_reduce_scatter",
            _ => "tp_all_reduce",
        };
        self.tensor_sync(name, op, bytes);
    }

    /// Seconds of `op` over a group of rank 0, priced on the topology with the scenario's network
    /// tier and NCCL's algorithm choice.
    fn collective_seconds(&mut self, comm: Comm, op: CollectiveOp, bytes: f64) -> f64 {
        if let Some(&(.., secs)) = self
            .priced
            .iter()
            .find(|(c, o, b, _)| *c == comm && *o == op && *b == bytes)
        {
            return secs;
        }
        let s = self.setup;
        let ranks: Vec<u32> = match comm {
            Comm::Tensor => (0..s.tp).collect(),
            Comm::Data => (0..s.dp).map(|i| i * s.tp).collect(),
        };
        let c = Collective {
            op,
            algorithm: Algorithm::Auto,
            group: Group::new(ranks, s.fabric.gpus_per_node),
            bytes,
            compression: None,
        };
        let mut options = Options::new(s.tier);
        options.nvls_available = s.in_switch_reduction;
        let secs = cost(&s.topology, &c, &options)
            .expect("ring and tree serve any group of the cluster's ranks")
            .seconds;
        self.priced.push((comm, op, bytes, secs));
        secs
    }

    /// Time of the gradient reduction of `bytes` across the data-parallel group: an all-reduce,
    /// or with ZeRO a reduce-scatter.
    fn reduce_seconds(&mut self, bytes: f64) -> f64 {
        let op = if self.setup.zero >= 1 {
            CollectiveOp::ReduceScatter
        } else {
            CollectiveOp::AllReduce
        };
        self.collective_seconds(Comm::Data, op, bytes)
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
                Item::Kernel(step) => {
                    self.kernel(step.name, step.kernel, Some(layer), micro, model_flops);
                }
                Item::Sync(sync) => self.sync(*sync, true, act),
            }
        }
    }

    /// Builds the whole step.
    pub fn build(mut self) -> Graph {
        let s = self.setup;
        let m = &s.model;
        let tp = s.tp as u64;
        let mb = s.micro_batch as u64;
        let t = mb * m.seq_len as u64;
        let h = m.hidden as u64;
        let v = m.vocab as u64 / tp;
        let e = m.dtype.bytes();
        // Bytes of one micro-batch's activations at a tensor-parallel synchronisation.
        let act = (t * h) as f64 * e;
        let forward = layer_forward(m, mb, tp, s.sequence_parallel);
        let layer_grad_bytes = m.layer_params() as f64 / tp as f64 * GRAD_BYTES;
        let mut buckets: Vec<OpId> = Vec::new();
        for micro in 0..s.accumulation {
            let last_micro = micro + 1 == s.accumulation;
            self.kernel(
                "embedding",
                elementwise(2.0 * (t * h) as f64 * e, 0.0),
                None,
                micro,
                true,
            );
            // The vocabulary-split embedding adds up its parts across the tensor-parallel ranks.
            self.sync(Sync::G, true, act);
            for layer in 0..m.layers {
                self.forward_layer(&forward, layer, micro, true, act);
            }
            self.kernel(
                "layernorm",
                elementwise(2.0 * (t * h) as f64 * e, 8.0 * (t * h) as f64),
                None,
                micro,
                true,
            );
            self.sync(Sync::F, true, act);
            let output = gemm(t, v, h, m.dtype);
            self.kernel("output_proj", output, None, micro, true);
            // Softmax cross-entropy reads the logits and writes their gradient in fp32; with a
            // split vocabulary it all-reduces the maxima, sums and target logits (3 floats a token).
            let loss = elementwise((t * v) as f64 * (e + 4.0), 5.0 * (t * v) as f64);
            self.kernel("loss", loss, None, micro, true);
            self.tensor_sync(
                "tp_loss_all_reduce",
                CollectiveOp::AllReduce,
                12.0 * t as f64,
            );
            for (name, k) in backward(&Step {
                name: "output_proj",
                kernel: output,
            }) {
                self.kernel(name, k, None, micro, true);
            }
            self.sync(Sync::F, false, act);
            // An untied output projection's gradient is complete now; a tied one only after the
            // embedding's backward.
            let table_grad = (v * h) as f64 * GRAD_BYTES;
            let mut pending = if m.tied_embeddings { 0.0 } else { table_grad };
            for layer in (0..m.layers).rev() {
                match s.recompute {
                    Recompute::Full => self.forward_layer(&forward, layer, micro, false, act),
                    // Fused attention already recomputes its scores inside its backward kernel,
                    // which is what selective recomputation asks for.
                    Recompute::Selective | Recompute::None => {}
                }
                for item in forward.iter().rev() {
                    match item {
                        Item::Kernel(step) => {
                            for (name, k) in backward(step) {
                                self.kernel(name, k, Some(layer), micro, true);
                            }
                        }
                        Item::Sync(sync) => self.sync(*sync, false, act),
                    }
                }
                if last_micro && s.dp > 1 {
                    pending += layer_grad_bytes;
                    if pending >= BUCKET_BYTES {
                        let after: Vec<OpId> = self.last.into_iter().collect();
                        let secs = self.reduce_seconds(pending);
                        buckets.push(self.communication("grad_reduce", secs, pending, &after));
                        pending = 0.0;
                    }
                }
            }
            self.kernel(
                "embedding_bwd",
                elementwise(2.0 * (t * h) as f64 * e, 0.0),
                None,
                micro,
                true,
            );
            if last_micro && s.dp > 1 {
                // The embedding table's gradient, with whatever the last bucket holds.
                pending += table_grad;
                let after: Vec<OpId> = self.last.into_iter().collect();
                let secs = self.reduce_seconds(pending);
                buckets.push(self.communication("grad_reduce", secs, pending, &after));
            }
        }
        // The optimizer step on this rank's share of the parameters.
        let params = m.params() as f64 / tp as f64;
        let shard = if s.zero >= 1 {
            params / s.dp as f64
        } else {
            params
        };
        let deps: Vec<OpId> = self
            .last
            .into_iter()
            .chain(buckets.iter().copied())
            .collect();
        let adam = elementwise(shard * ADAM_BYTES_PER_PARAM, 12.0 * shard);
        self.last = None;
        let cost = self.compute.cost(&adam).expect("fp32 arithmetic exists");
        let opt = self.graph.add(
            Op {
                name: Cow::Borrowed("optimizer_step"),
                lane: self.compute_lane,
                kind: OpKind::Memory,
                duration: SimTime::from_secs_f64(cost.seconds),
                flops: cost.flops,
                bytes: cost.bytes,
                tier: cost.tier.name(),
                layer: None,
                micro_batch: None,
                model_flops: false,
            },
            &deps,
        );
        if s.zero >= 1 && s.dp > 1 {
            // All-gather the updated 16-bit weights.
            let bytes = params * e;
            let secs = self.collective_seconds(Comm::Data, CollectiveOp::AllGather, bytes);
            self.communication("param_all_gather", secs, bytes, &[opt]);
        }
        self.graph
    }
}
