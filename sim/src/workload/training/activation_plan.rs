//! Adaptive activation memory (`recompute = "adaptive"`): for each class of tensor a layer saves
//! for its backward, keep it, recompute it in the backward, or compress it
//! (`[compression.activations]`), chosen so that the step fits a memory cap at the least time.
//!
//! The classes are the terms of the memory model's per-layer activations (`memory.rs`, bytes per
//! micro-batch); the layer input is always kept, as the checkpoint the rest is rebuilt from.
//! Recomputing a class reruns its kernels (seconds on the roofline); compressing it runs the
//! compressor and decompressor over its bytes and keeps 1/ratio of them. The policy is greedy:
//! from keeping everything, take the action that saves the most bytes per second it costs until
//! every stage's peak fits; one choice per class holds for every layer, and if nothing fits the
//! plan is full recomputation. Entry point: [`plan`], giving an [`ActivationPlan`].
//!
//! Modelled for dense layers with attention, without tensor or context parallelism (recomputed
//! collectives are not priced). Ignored: lossy compression's accuracy cost, policy changes.
//! Classes, costs and sources: docs/TRAINING.md#adaptive-recomputation

use super::layer::{Item, elementwise, layer_forward};
use super::memory;
use super::policy::Recompute;
use super::setup::TrainingConfig;
use crate::collective::cost::Compression;
use crate::hw::{ComputeModel, ElementwiseOp, Kernel};
use serde_json::{Value, json};

/// What happens to one class of saved tensor.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    Keep,
    Recompute,
    Compress,
}

impl Choice {
    pub fn name(self) -> &'static str {
        match self {
            Choice::Keep => "keep",
            Choice::Recompute => "recompute",
            Choice::Compress => "compress",
        }
    }
}

/// One class of tensor a layer saves for its backward.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: &'static str,
    /// Bytes per layer and micro-batch on one GPU.
    pub bytes: f64,
    /// The kernels that rebuild it, with their names in the step.
    pub recompute: Vec<(&'static str, Kernel)>,
    /// Seconds to rerun them.
    pub recompute_s: f64,
    pub choice: Choice,
}

/// The plan for every layer.
#[derive(Clone, Debug)]
pub struct ActivationPlan {
    /// The layer input (kept) and the classes with their choices.
    pub input_bytes: f64,
    pub tensors: Vec<Tensor>,
    pub compression: Option<Compression>,
    /// The cap the plan was made for, bytes per GPU.
    pub cap: f64,
}

impl ActivationPlan {
    /// Bytes a layer holds per micro-batch between its forward and its backward.
    pub fn stored_bytes(&self) -> f64 {
        self.input_bytes
            + self
                .tensors
                .iter()
                .map(|t| match t.choice {
                    Choice::Keep => t.bytes,
                    Choice::Recompute => 0.0,
                    Choice::Compress => t.bytes / self.ratio(),
                })
                .sum::<f64>()
    }

    /// Whether anything is dropped (so a layer's full activations are rebuilt in its backward).
    pub fn drops(&self) -> bool {
        self.tensors.iter().any(|t| t.choice != Choice::Keep)
    }

    fn ratio(&self) -> f64 {
        self.compression.map_or(1.0, |z| z.ratio)
    }

    /// The sum of `f` over the classes with `choice`.
    fn total(&self, choice: Choice, f: impl Fn(&Tensor) -> f64) -> f64 {
        self.tensors
            .iter()
            .filter(|t| t.choice == choice)
            .map(f)
            .sum()
    }

    /// Bytes compressed per layer and micro-batch.
    pub fn compressed_bytes(&self) -> f64 {
        self.total(Choice::Compress, |t| t.bytes)
    }

    /// Seconds of compression in a layer's forward (per micro-batch).
    pub fn compress_s(&self) -> f64 {
        self.compression
            .map_or(0.0, |z| self.compressed_bytes() / z.compress_bytes_per_s)
    }

    /// Seconds of decompression in a layer's backward (per micro-batch).
    pub fn decompress_s(&self) -> f64 {
        self.compression
            .map_or(0.0, |z| self.compressed_bytes() / z.decompress_bytes_per_s)
    }

    /// The kernels a layer's backward reruns, in forward order.
    pub fn recomputed(&self) -> impl Iterator<Item = &(&'static str, Kernel)> {
        self.tensors
            .iter()
            .filter(|t| t.choice == Choice::Recompute)
            .flat_map(|t| t.recompute.iter())
    }

    /// The report's view: the cap and each class's choice and bytes.
    pub fn report(&self) -> Value {
        json!({
            "cap_bytes": self.cap.round() as u64,
            "stored_bytes_per_layer": self.stored_bytes().round() as u64,
            "tensors": self.tensors.iter().map(|t| json!({
                "name": t.name,
                "bytes_per_layer": t.bytes.round() as u64,
                "choice": t.choice.name(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// The classes of one layer's saved tensors on one GPU, all kept (see the module docs).
fn tensors(s: &TrainingConfig, compute: &ComputeModel) -> (f64, Vec<Tensor>) {
    let m = &s.model;
    let t = (s.micro_batch * m.seq_len) as f64 / s.cp as f64;
    let h = m.hidden as f64;
    let e = m.dtype.bytes();
    let items = layer_forward(m, s.micro_batch as u64, s.cp as u64, 1, false);
    let kernels: Vec<(&'static str, Kernel)> = items
        .iter()
        .filter_map(|i| match i {
            Item::Kernel(step) => Some((step.name, step.kernel)),
            _ => None,
        })
        .collect();
    // The n-th kernel called `name` (0-based).
    let nth = |name: &str, n: usize| {
        *kernels
            .iter()
            .filter(|(k, _)| *k == name)
            .nth(n)
            .expect("a dense layer's kernels")
    };
    let seconds = |ks: &[(&'static str, Kernel)]| {
        ks.iter()
            .map(|(_, k)| compute.cost(k).expect("the model's format").seconds)
            .sum::<f64>()
    };
    let masks = 2.0 * t * h * e / 2.0;
    let class = |name, bytes: f64, recompute: Vec<(&'static str, Kernel)>| Tensor {
        name,
        bytes,
        recompute_s: seconds(&recompute),
        recompute,
        choice: Choice::Keep,
    };
    let mut out = vec![
        class("attention_norm", t * h * e, vec![nth("layernorm", 0)]),
        class(
            "qkv",
            t * m.qkv_width() as f64 * e,
            vec![nth("qkv_proj", 0)],
        ),
        class("attention_out", t * h * e, vec![nth("attention", 0)]),
        class(
            "attention_residual",
            t * h * e,
            vec![nth("out_proj", 0), nth("residual_add", 0)],
        ),
        class("mlp_norm", t * h * e, vec![nth("layernorm", 1)]),
        class(
            "mlp_up",
            t * m.up_width() as f64 * e,
            vec![nth("mlp_up", 0)],
        ),
        class("mlp_act", t * m.ffn as f64 * e, vec![nth("mlp_act", 0)]),
    ];
    if s.dropout {
        out.push(class(
            "dropout_masks",
            masks,
            vec![(
                "dropout_mask",
                elementwise(ElementwiseOp::Other, masks, 0.0),
            )],
        ));
    }
    (t * h * e, out)
}

/// The plan for `s` under its memory cap, with its activation compression (see the module docs).
pub fn plan(s: &TrainingConfig) -> ActivationPlan {
    let (compression, cap) = (s.activation_compression, s.memory_cap);
    let compute = ComputeModel::new(s.gpu.clone());
    let (input_bytes, tensors) = tensors(s, &compute);
    let mut plan = ActivationPlan {
        input_bytes,
        tensors,
        compression,
        cap,
    };
    // Per stage: memory beside the activations, and layers held per in-flight micro-batch.
    let stages: Vec<(memory::MemoryUse, f64, f64)> = (0..s.pp)
        .map(|st| {
            let mem = memory::stage_memory_as(s, st, Recompute::None, None);
            let layer = memory::layer_activations(s);
            let held = mem.activations / layer;
            (mem, held, layer)
        })
        .collect();
    let fits = |p: &ActivationPlan| {
        let transient = |layer: f64| if p.drops() { layer } else { 0.0 };
        stages.iter().all(|(mem, held, layer)| {
            mem.peak_holding(held * p.stored_bytes() + transient(*layer)) <= cap
        })
    };
    // Candidate actions: (class, choice, bytes saved, seconds spent).
    let mut actions: Vec<(usize, Choice, f64, f64)> = Vec::new();
    for (i, t) in plan.tensors.iter().enumerate() {
        actions.push((i, Choice::Recompute, t.bytes, t.recompute_s));
        if let Some(z) = compression {
            let cost = t.bytes / z.compress_bytes_per_s + t.bytes / z.decompress_bytes_per_s;
            actions.push((i, Choice::Compress, t.bytes * (1.0 - 1.0 / z.ratio), cost));
        }
    }
    // Most bytes per second first; ties (and free actions) by bytes, then by order.
    actions.sort_by(|a, b| {
        let rate = |x: &(usize, Choice, f64, f64)| {
            if x.3 > 0.0 { x.2 / x.3 } else { f64::INFINITY }
        };
        rate(b)
            .total_cmp(&rate(a))
            .then(b.2.total_cmp(&a.2))
            .then(a.0.cmp(&b.0))
    });
    for (i, choice, saved, _) in actions {
        if fits(&plan) {
            break;
        }
        let current = plan.tensors[i].choice;
        let current_saved = match current {
            Choice::Keep => 0.0,
            Choice::Recompute => plan.tensors[i].bytes,
            Choice::Compress => plan.tensors[i].bytes * (1.0 - 1.0 / plan.ratio()),
        };
        if saved > current_saved {
            plan.tensors[i].choice = choice;
        }
    }
    if !fits(&plan) {
        for t in &mut plan.tensors {
            t.choice = Choice::Recompute;
        }
    }
    plan
}
