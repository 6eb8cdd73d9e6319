//! One training step of one data-parallel replica as a graph of operations.
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

fn layer_forward(m: &Transformer, micro_batch: u64) -> Vec<Step> {
    let t = micro_batch * m.seq_len as u64;
    let h = m.hidden as u64;
    let e = m.dtype.bytes();
    let act = |width: u64| (t * width) as f64 * e;
    let s = |name, kernel| Step { name, kernel };
    vec![
        s("layernorm", elementwise(2.0 * act(h), 8.0 * (t * h) as f64)),
        s("qkv_proj", gemm(t, m.qkv_width(), h, m.dtype)),
        s(
            "attention",
            Kernel::Attention {
                batch_heads: micro_batch * m.heads as u64,
                q_len: m.seq_len as u64,
                kv_len: m.seq_len as u64,
                head_dim: m.head_dim(),
                causal: true,
                backward: false,
                dtype: m.dtype,
            },
        ),
        s("out_proj", gemm(t, h, h, m.dtype)),
        s("residual_add", elementwise(3.0 * act(h), (t * h) as f64)),
        s("layernorm", elementwise(2.0 * act(h), 8.0 * (t * h) as f64)),
        s("mlp_up", gemm(t, m.up_width(), h, m.dtype)),
        s(
            "mlp_act",
            elementwise(
                act(m.up_width()) + act(m.ffn as u64),
                8.0 * (t * m.ffn as u64) as f64,
            ),
        ),
        s("mlp_down", gemm(t, h, m.ffn as u64, m.dtype)),
        s("residual_add", elementwise(3.0 * act(h), (t * h) as f64)),
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
    last: Option<OpId>,
    /// Collective prices by (operation, bytes): buckets repeat the same few sizes.
    priced: Vec<(CollectiveOp, f64, f64)>,
}

impl<'a> StepBuilder<'a> {
    pub fn new(setup: &'a Training, compute: &'a ComputeModel) -> Self {
        let mut graph = Graph::new();
        let compute_lane = graph.add_lane("compute", "GPU 0");
        let comm_lane = graph.add_lane("data-parallel comm", "GPU 0");
        StepBuilder {
            setup,
            compute,
            graph,
            compute_lane,
            comm_lane,
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
        self.graph.add(
            Op {
                name: Cow::Borrowed(name),
                lane: self.comm_lane,
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

    /// Seconds of `op` over the data-parallel group, priced on the topology with the scenario's
    /// network tier and NCCL's algorithm choice.
    fn collective_seconds(&mut self, op: CollectiveOp, bytes: f64) -> f64 {
        if let Some(&(_, _, secs)) = self.priced.iter().find(|(o, b, _)| *o == op && *b == bytes) {
            return secs;
        }
        let s = self.setup;
        let c = Collective {
            op,
            algorithm: Algorithm::Auto,
            group: Group::first(s.dp, s.fabric.gpus_per_node),
            bytes,
            compression: None,
        };
        let mut options = Options::new(s.tier);
        options.nvls_available = s.in_switch_reduction;
        let secs = cost(&s.topology, &c, &options)
            .expect("data-parallel groups are contiguous ranks of the cluster, which every algorithm serves")
            .seconds;
        self.priced.push((op, bytes, secs));
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
        self.collective_seconds(op, bytes)
    }

    /// Builds the whole step.
    pub fn build(mut self) -> Graph {
        let s = self.setup;
        let m = &s.model;
        let mb = s.micro_batch as u64;
        let t = mb * m.seq_len as u64;
        let h = m.hidden as u64;
        let v = m.vocab as u64;
        let e = m.dtype.bytes();
        let forward = layer_forward(m, mb);
        let layer_grad_bytes = m.layer_params() as f64 * GRAD_BYTES;
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
            for layer in 0..m.layers {
                for step in &forward {
                    self.kernel(step.name, step.kernel, Some(layer), micro, true);
                }
            }
            self.kernel(
                "layernorm",
                elementwise(2.0 * (t * h) as f64 * e, 8.0 * (t * h) as f64),
                None,
                micro,
                true,
            );
            let output = gemm(t, v, h, m.dtype);
            self.kernel("output_proj", output, None, micro, true);
            // Softmax cross-entropy reads the logits and writes their gradient in fp32.
            let loss = elementwise((t * v) as f64 * (e + 4.0), 5.0 * (t * v) as f64);
            self.kernel("loss", loss, None, micro, true);
            for (name, k) in backward(&Step {
                name: "output_proj",
                kernel: output,
            }) {
                self.kernel(name, k, None, micro, true);
            }
            // An untied output projection's gradient is complete now; a tied one only after the
            // embedding's backward.
            let table_grad = (v * h) as f64 * GRAD_BYTES;
            let mut pending = if m.tied_embeddings { 0.0 } else { table_grad };
            for layer in (0..m.layers).rev() {
                match s.recompute {
                    Recompute::Full => {
                        for step in &forward {
                            self.kernel(step.name, step.kernel, Some(layer), micro, false);
                        }
                    }
                    // Fused attention already recomputes its scores inside its backward kernel,
                    // which is what selective recomputation asks for.
                    Recompute::Selective | Recompute::None => {}
                }
                for step in forward.iter().rev() {
                    for (name, k) in backward(step) {
                        self.kernel(name, k, Some(layer), micro, true);
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
        // The optimizer step on this replica's share of the parameters.
        let params = m.params() as f64;
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
            let secs = self.collective_seconds(CollectiveOp::AllGather, bytes);
            self.communication("param_all_gather", secs, bytes, &[opt]);
        }
        self.graph
    }
}
