//! Walking the pipeline schedule's passes: each stage's forwards and backwards of its model chunks
//! in schedule order, each waiting for what the stage before or after sent it.

use super::StepBuilder;
use super::{Collective, Stage};
use crate::collective::CollectiveOp;
use crate::exec::{Graph, OpId};
use crate::hw::ElementwiseOp;
use crate::workload::training::activation_plan::{self, ActivationPlan};
use crate::workload::training::layer::{Item, Step, Sync, backward, elementwise};
use crate::workload::training::links::CommUse;
use crate::workload::training::op_checkpoint;
use crate::workload::training::policy::{ParamGather, Recompute, Schedule};
use crate::workload::training::schedule::{self, Pass, Work};
use crate::workload::training::sequences::Shape;
use crate::workload::training::setup::TrainingConfig;

impl StepBuilder<'_> {
    /// Runs the items of one layer forward (kernels and the syncs' forward collectives).
    fn forward_layer(
        &mut self,
        items: &[Item],
        layer: u32,
        micro: u32,
        model_flops: bool,
        act: f64,
    ) {
        let mut experts = false;
        for item in items {
            match item {
                Item::Kernel(step) if step.name == "attention" && self.setup.cp > 1 => {
                    self.context_attention(step.kernel, true, layer, micro, model_flops);
                }
                Item::Kernel(step) => {
                    self.kernel(step.name, step.kernel, Some(layer), micro, model_flops);
                }
                Item::Sync(sync) => self.sync(*sync, true, self.sync_bytes(experts, act)),
                Item::Exchange(name) => {
                    self.exchange(name, self.exchanged_bytes());
                    experts = !experts;
                }
            }
        }
    }

    /// The step, and every distinct collective its stage GPUs run with how many times each runs
    /// it (for the traffic of every link, `links.rs`).
    pub fn build_counting(mut self) -> (Graph, Vec<Stage>, Vec<CommUse>, Vec<Collective>) {
        let passes = Passes::new(self.setup);
        self.walk_schedule(&passes);
        for st in (0..self.setup.pp as usize).filter(|_| !passes.asynchronous) {
            self.update(st);
        }
        for st in 0..self.setup.pp as usize {
            self.at = st;
            self.last();
        }
        let uses = self.priced.into_uses();
        (self.graph, self.stages, uses, self.collectives)
    }

    /// Runs every stage's passes in its schedule's order, each as soon as what it receives from
    /// the stage before (forward) or after (backward) has been sent; panics if the schedule
    /// deadlocks.
    fn walk_schedule(&mut self, passes: &Passes) {
        let s = self.setup;
        let (pp, v) = (s.pp, s.virtual_stages);
        let orders: Vec<Vec<Work>> = (0..pp)
            .map(|st| schedule::order(s.schedule, pp, v, s.accumulation, st))
            .collect();
        let mut next = vec![0usize; pp as usize];
        // Sends by micro-batch and model chunk that sent (`at`).
        let chunks = passes.last_chunk as usize + 1;
        let at = |micro: u32, chunk: u32| micro as usize * chunks + chunk as usize;
        let mut forward_sent: Vec<Option<OpId>> = vec![None; s.accumulation as usize * chunks];
        let mut backward_sent = forward_sent.clone();
        loop {
            let mut progressed = false;
            for st in 0..pp as usize {
                while let Some(&work) = orders[st].get(next[st]) {
                    let chunk = work.chunk * pp + st as u32;
                    let needs = match work.pass {
                        Pass::Forward if chunk > 0 => Some(forward_sent[at(work.micro, chunk - 1)]),
                        Pass::Backward if chunk < passes.last_chunk => {
                            Some(backward_sent[at(work.micro, chunk + 1)])
                        }
                        _ => None,
                    };
                    let received = match needs {
                        Some(None) => break,
                        Some(Some(id)) => Some(id),
                        None => None,
                    };
                    self.at = st;
                    self.waiting_on.clear();
                    self.waiting_on.extend(received);
                    self.gathers.clear();
                    let micro = work.micro;
                    let shape = passes.shape_of(micro);
                    self.attention_parts.clone_from(&shape.attention);
                    self.routed_bytes = shape.routed_bytes;
                    match work.pass {
                        Pass::Forward => {
                            if let Some(id) = self.forward_pass(passes, shape, chunk, micro) {
                                forward_sent[at(micro, chunk)] = Some(id);
                            }
                        }
                        Pass::Backward => {
                            if let Some(id) = self.backward_pass(passes, shape, st, chunk, micro) {
                                backward_sent[at(micro, chunk)] = Some(id);
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
    }

    /// One forward pass of model chunk `chunk` over micro-batch `micro`: the embedding on the
    /// first chunk, its layers, and the output projection and loss on the last. Returns the send
    /// of its activations to the next chunk (none from the last).
    fn forward_pass(
        &mut self,
        passes: &Passes,
        shape: &Shape,
        chunk: u32,
        micro: u32,
    ) -> Option<OpId> {
        let s = self.setup;
        let act = shape.act;
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
        let layers = s.chunk_layers(chunk);
        for layer in layers.clone() {
            let next = (layer + 1 < layers.end).then_some(layer + 1);
            self.gather_params(layer, next);
            let items = shape.kinds.of(&s.model, layer);
            self.forward_layer(items, layer, micro, true, act);
            if let Some(p) = &passes.plan {
                self.codec("activation_compress", p.compress_s(), layer, micro);
            }
        }
        if chunk == passes.last_chunk {
            self.forward_head(passes, shape, micro);
            None
        } else {
            Some(self.send(chunk + 1, shape.p2p))
        }
    }

    /// The last chunk's forward after its layers: the final norm, the output projection and the
    /// loss.
    fn forward_head(&mut self, passes: &Passes, shape: &Shape, micro: u32) {
        let (t, act, vocab) = (shape.t, shape.act, passes.vocab);
        let norm = elementwise(ElementwiseOp::Norm, 2.0 * act, 8.0 * (t * passes.h) as f64);
        self.kernel("layernorm", norm, None, micro, true);
        self.sync(Sync::F, true, act);
        self.kernel("output_proj", shape.output, None, micro, true);
        // Softmax cross-entropy reads the logits and writes their gradient in fp32; a split
        // vocabulary all-reduces the maxima, sums and target logits (3 floats a token).
        let loss = elementwise(
            ElementwiseOp::Other,
            (t * vocab) as f64 * (passes.e + 4.0),
            5.0 * (t * vocab) as f64,
        );
        self.kernel("loss", loss, None, micro, true);
        self.tensor_sync(
            "tp_loss_all_reduce",
            CollectiveOp::AllReduce,
            12.0 * t as f64,
        );
    }

    /// One backward pass of model chunk `chunk` over micro-batch `micro` on stage `st`: the
    /// output projection's on the last chunk, its layers in reverse, and the embedding's on the
    /// first, with the gradients each reduces. Returns the send of its input gradients to the
    /// chunk before (none from the first).
    fn backward_pass(
        &mut self,
        passes: &Passes,
        shape: &Shape,
        st: usize,
        chunk: u32,
        micro: u32,
    ) -> Option<OpId> {
        let s = self.setup;
        let m = &s.model;
        let act = shape.act;
        // Asynchronous pipelines reduce and apply every micro-batch's gradients on their own.
        let finishing = micro == passes.final_micro || passes.asynchronous;
        if chunk == passes.last_chunk {
            for (name, k) in backward(&Step {
                name: "output_proj",
                kernel: shape.output,
            }) {
                self.kernel(name, k, None, micro, true);
            }
            self.sync(Sync::F, false, act);
            // The output projection's own copy of the table: untied, or on another stage than
            // the embedding.
            if finishing && (!m.tied_embeddings || s.pp > 1) {
                self.gradients(passes.table_grad, false, false);
            }
        }
        let layers = s.chunk_layers(chunk);
        for layer in layers.clone().rev() {
            let next = (layer > layers.start).then(|| layer - 1);
            self.gather_params(layer, next);
            let items = shape.kinds.of(m, layer);
            let rerun =
                s.recomputes(st as u32, micro) && s.recomputes_position(layer - layers.start);
            self.recompute_layer(passes, items, rerun, layer, micro, act);
            self.backward_items(items, layer, micro, act);
            self.layer_gradients(layer, finishing);
        }
        let sent = if chunk == 0 {
            self.kernel(
                "embedding_bwd",
                elementwise(ElementwiseOp::Other, 2.0 * act, 0.0),
                None,
                micro,
                true,
            );
            if finishing {
                self.gradients(passes.table_grad, false, false);
            }
            None
        } else {
            Some(self.send(chunk - 1, shape.p2p))
        };
        if passes.asynchronous {
            self.update(st);
        }
        sent
    }

    /// What a layer's backward first runs again of its forward: the whole forward when full
    /// recomputation reruns this layer (`rerun`), the recomputed operations under per-operation
    /// checkpointing, and the decompression and recomputed kernels of the adaptive plan.
    fn recompute_layer(
        &mut self,
        passes: &Passes,
        items: &[Item],
        rerun: bool,
        layer: u32,
        micro: u32,
        act: f64,
    ) {
        let s = self.setup;
        if rerun {
            self.forward_layer(items, layer, micro, false, act);
            if s.param_gather == ParamGather::OnDemand {
                self.regather_for_backward(layer);
            }
        }
        if s.recompute == Recompute::Op {
            let tp = s.tp as u64;
            for (name, k) in op_checkpoint::recomputed(items, &s.model, tp) {
                self.kernel(name, k, Some(layer), micro, false);
            }
        }
        if let Some(p) = &passes.plan {
            self.codec("activation_decompress", p.decompress_s(), layer, micro);
            for &(name, k) in p.recomputed() {
                self.kernel(name, k, Some(layer), micro, false);
            }
        }
    }

    /// Runs the items of one layer backward, in reverse (kernels' backward and the syncs'
    /// backward collectives).
    fn backward_items(&mut self, items: &[Item], layer: u32, micro: u32, act: f64) {
        let s = self.setup;
        // Fused attention already recomputes its scores inside its backward kernel, which is
        // what selective recomputation asks for; unfused attention runs its forward again
        // (`recomputes_scores`).
        let mut experts = false;
        for item in items.iter().rev() {
            if let Item::Kernel(step) = item
                && step.name == "attention"
                && s.recomputes_scores()
            {
                if s.cp > 1 {
                    self.context_attention(step.kernel, true, layer, micro, false);
                } else {
                    let k = step.kernel;
                    self.kernel("attention", k, Some(layer), micro, false);
                }
            }
            match item {
                Item::Kernel(step) if step.name == "attention" && s.cp > 1 => {
                    self.context_attention(step.kernel, false, layer, micro, true);
                }
                Item::Kernel(step) => {
                    for (name, k) in backward(step) {
                        self.kernel(name, k, Some(layer), micro, true);
                    }
                }
                Item::Sync(sync) => self.sync(*sync, false, self.sync_bytes(experts, act)),
                Item::Exchange(name) => {
                    self.exchange(name, self.exchanged_bytes());
                    experts = !experts;
                }
            }
        }
    }

    fn sync_bytes(&self, experts: bool, act: f64) -> f64 {
        self.setup.sync_bytes(experts, self.routed_bytes, act)
    }

    fn exchanged_bytes(&self) -> f64 {
        self.setup.exchanged_bytes(self.routed_bytes)
    }

    /// Reduces a layer's gradients after its backward: ZeRO-3 every micro-batch (sharded),
    /// otherwise on the `finishing` micro-batch only.
    fn layer_gradients(&mut self, layer: u32, finishing: bool) {
        let s = self.setup;
        let (shared, expert) = layer_grad_bytes(s, layer);
        // ZeRO-3 shards gradients: each layer's are reduce-scattered every micro-batch.
        if s.zero == 3 && s.param_gather == ParamGather::OnDemand {
            self.reduce_on_demand(layer);
            self.gradients(expert, true, true);
        } else if s.zero == 3 || finishing {
            self.gradients(shared, s.zero == 3, false);
            self.gradients(expert, s.zero == 3, true);
        }
    }
}

/// Gradient bytes of a layer: the part every data-parallel replica holds, and the routed
/// experts' share that only the replicas with the same experts hold.
fn layer_grad_bytes(s: &TrainingConfig, layer: u32) -> (f64, f64) {
    let m = &s.model;
    let tp = s.tp as u64;
    let here = s.layer_params_here(layer) * s.grad_bytes;
    if m.is_moe_layer(layer) {
        let expert = m.layer_expert_params() as f64 / (tp * s.ep as u64) as f64 * s.grad_bytes;
        (here - expert, expert)
    } else {
        (here, 0.0)
    }
}

/// What every pass of one step shares: each micro-batch's shape, the adaptive recomputation
/// plan, and the sizes of the embedding table, output projection and loss.
struct Passes {
    /// Each micro-batch's tokens, activation bytes at a tensor-parallel synchronisation and
    /// what a stage sends to the next (its 1/tp share, Megatron-LM's scatter/gather
    /// optimisation), its layers and output projection: one shape for all, or with
    /// `[sequences]` each micro-batch its own.
    shapes: Vec<Shape>,
    /// Adaptive recomputation: what each layer keeps, recomputes or compresses.
    plan: Option<ActivationPlan>,
    /// Vocabulary entries one tensor-parallel rank holds.
    vocab: u64,
    /// Hidden size.
    h: u64,
    /// Bytes of an element of the model's dtype.
    e: f64,
    /// Gradient bytes of the embedding table's share on one tensor-parallel rank.
    table_grad: f64,
    last_chunk: u32,
    final_micro: u32,
    asynchronous: bool,
}

impl Passes {
    fn new(s: &TrainingConfig) -> Self {
        let m = &s.model;
        let tp = s.tp as u64;
        let h = m.hidden as u64;
        let vocab = m.vocab as u64 / tp;
        let shapes: Vec<Shape> = match &s.sequences {
            None => vec![Shape::uniform(s)],
            Some(q) => q
                .micro_batches
                .iter()
                .map(|mb| Shape::packed(s, mb))
                .collect(),
        };
        Passes {
            shapes,
            plan: (s.recompute == Recompute::Adaptive).then(|| activation_plan::plan(s)),
            vocab,
            h,
            e: m.dtype.bytes(),
            table_grad: (vocab * h) as f64 * s.grad_bytes,
            last_chunk: s.pp * s.virtual_stages - 1,
            final_micro: s.accumulation - 1,
            asynchronous: s.schedule == Schedule::Async1F1B,
        }
    }

    /// The shape of micro-batch `micro` (an asynchronous pipeline's steady state runs the step's
    /// micro-batches twice).
    fn shape_of(&self, micro: u32) -> &Shape {
        &self.shapes[micro as usize % self.shapes.len()]
    }
}
