//! `[parallel]`'s layout of a training run: the degrees and the batch, defaults first (each
//! recorded), then one set of rules (`Layout::check`), the refusal placed at its key (at
//! `[sequences]` when the packing made the batch); and the order of the rank dimensions.

use super::sequences;
use crate::model::Transformer;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::positive;
use crate::scenario::parallel::ParallelSection;
use crate::workload::training::framework::Framework;
use crate::workload::training::layout::Layout;
use crate::workload::training::policy::{ContextAlgorithm, Recompute, Schedule};
use crate::workload::training::sequences::Sequences;
use crate::workload::training::setup::DIMENSIONS;

/// The layout on `gpus` GPUs of `gpus_per_node` a node, the context-parallel algorithm, and the
/// step's sequences when `[sequences]` gives them.
pub(super) fn resolve(
    s: &Scenario,
    model: &Transformer,
    (gpus, gpus_per_node): (u32, u32),
    framework: Option<Framework>,
    assumptions: &mut Vec<String>,
) -> Result<(Layout, ContextAlgorithm, Option<Sequences>), ScenarioError> {
    let p = &s.file.parallel;
    let tp = positive(s, p.tp.unwrap_or(1), "parallel.tp")?;
    let pp = positive(s, p.pp.unwrap_or(1), "parallel.pp")?;
    let cp = positive(s, p.cp.unwrap_or(1), "parallel.cp")?;
    let ep = positive(s, p.ep.unwrap_or(1), "parallel.ep")?;
    let virtual_stages = positive(s, p.virtual_stages.unwrap_or(1), "parallel.virtual_stages")?;
    let micro_batch = positive(s, p.micro_batch.unwrap_or(1), "parallel.micro_batch")?;
    let framework_cp = framework.and_then(|f| f.context_algorithm());
    let cp_algorithm = match (p.cp_algorithm, cp, framework_cp) {
        (Some(a), _, _) => a,
        (None, 1, _) => ContextAlgorithm::Ring,
        (None, _, Some((a, why))) => {
            assumptions.push(why);
            a
        }
        (None, _, None) => {
            assumptions
                .push("ring attention for context parallelism (Megatron-LM's default)".into());
            ContextAlgorithm::Ring
        }
    };
    let schedule = match (p.schedule, pp) {
        (Some(sch), _) => sch,
        (None, 1) => Schedule::OneFOneB,
        (None, _) if virtual_stages > 1 => Schedule::Interleaved1F1B,
        (None, _) => {
            assumptions.push("1F1B pipeline schedule".into());
            Schedule::OneFOneB
        }
    };
    if schedule == Schedule::Async1F1B {
        assumptions.push(
            "asynchronous 1F1B: the step time is the steady state (two steps in a row less one, \
             the pipeline never flushed); the breakdown and trace show one step from an empty \
             pipeline; weights stashed per micro-batch in flight (PipeDream)"
                .into(),
        );
    }
    let dp = match p.dp {
        Some(dp) => positive(s, dp, "parallel.dp")?,
        None if gpus.is_multiple_of(tp * pp * cp) => gpus / (tp * pp * cp),
        // The check below names the degree that does not divide.
        None => 1,
    };
    let sequences = sequences::resolve(s, model, pp, cp, assumptions)?;
    let global_batch = match (p.global_batch, &sequences) {
        // One sequence-packed micro-batch at a time, as many as the packing made.
        (_, Some(q)) => (q.micro_batches.len() as u32).saturating_mul(dp),
        (Some(g), None) => positive(s, g, "parallel.global_batch")?,
        (None, None) => {
            let global = micro_batch.checked_mul(dp).ok_or_else(|| {
                s.error_at(
                    "parallel.micro_batch",
                    format!(
                        "one micro-batch per replica, micro_batch x dp = {micro_batch} x {dp}, \
                         is 2^32 sequences or more; lower micro_batch"
                    ),
                )
            })?;
            assumptions.push(format!(
                "global batch {global} (one micro-batch per replica)"
            ));
            global
        }
    };
    let mut layout = Layout {
        tp,
        pp,
        cp,
        dp,
        ep,
        micro_batch,
        global_batch,
        schedule,
        virtual_stages,
        sequence_parallel: p.sequence_parallel.unwrap_or(false),
        recompute: p.recompute.unwrap_or(Recompute::None),
        zero: p.zero.unwrap_or(0),
    };
    if let Some(f) = framework {
        framework_defaults(p, f, &mut layout, assumptions);
    }
    layout.check(model, gpus).map_err(|r| {
        // The batch is the packing's: say so where the sequences are.
        if sequences.is_some() && r.key == "parallel.global_batch" {
            return s
                .error_at(
                    "sequences",
                    format!("{} (the micro-batches [sequences] packed)", r.message),
                )
                .with_help(
                    "set sequences.micro_batches (elastic packing) to a multiple of pp, or use \
                     schedule = \"1f1b\"",
                );
        }
        let e = s.error_at(r.key, r.message);
        match r.help {
            Some(help) => e.with_help(help),
            None => e,
        }
    })?;
    let chunks = pp * virtual_stages;
    if !model.layers.is_multiple_of(chunks) {
        assumptions.push(format!(
            "{} layers split unevenly over {chunks} pipeline chunks (the first {} take one more)",
            model.layers,
            model.layers % chunks
        ));
    }
    if tp > gpus_per_node {
        assumptions.push(format!(
            "tensor-parallel groups of {tp} span nodes (more than the {gpus_per_node} GPUs of a node)"
        ));
    }
    if pp == 1 && (p.schedule.is_some() || virtual_stages > 1) {
        assumptions
            .push("schedule and virtual_stages have no effect without pipeline parallelism".into());
    }
    if layout.sequence_parallel && tp == 1 {
        assumptions.push("sequence_parallel has no effect without tensor parallelism".into());
    }
    Ok((layout, cp_algorithm, sequences))
}

/// `parallel.order`: the four dimensions, innermost first (Megatron-LM's "tp-cp-dp-pp" unless
/// given).
pub(super) fn order(s: &Scenario) -> Result<[&'static str; 4], ScenarioError> {
    let p = &s.file.parallel;
    let order_text = p.order.clone().unwrap_or_else(|| "tp-cp-dp-pp".to_string());
    let mut order = [""; 4];
    let names: Vec<&str> = order_text.split('-').map(str::trim).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    if sorted != DIMENSIONS {
        return Err(s
            .error_at("parallel.order", format!("\"{order_text}\" is not an order of the four dimensions"))
            .with_help("name tp, cp, dp and pp once each, innermost first, e.g. \"tp-cp-dp-pp\" (Megatron-LM's) or \"tp-dp-pp-cp\""));
    }
    for (slot, name) in order.iter_mut().zip(&names) {
        *slot = DIMENSIONS
            .iter()
            .find(|d| *d == name)
            .expect("checked to be a dimension");
    }
    Ok(order)
}

/// What the framework turns on where `[parallel]` is silent: sequence parallelism with tensor
/// parallelism, its optimizer sharding, what its "selective" recomputation means, and FSDP's
/// whole parameters under pipeline parallelism.
fn framework_defaults(
    p: &ParallelSection,
    f: Framework,
    layout: &mut Layout,
    assumptions: &mut Vec<String>,
) {
    let name = f.name();
    if p.sequence_parallel.is_none() && layout.tp > 1 && f.sequence_parallel() {
        layout.sequence_parallel = true;
        assumptions.push(format!(
            "sequence parallelism with tensor parallelism ({name}'s default)"
        ));
    }
    if p.zero.is_none() && f.distributed_optimizer() {
        layout.zero = 1;
        assumptions.push(format!(
            "optimizer states sharded over the data-parallel ranks, zero = 1 ({name}'s \
             distributed optimizer)"
        ));
    }
    if layout.recompute == Recompute::Selective && f.selective_recompute() == "op" {
        layout.recompute = Recompute::Op;
        assumptions.push(format!(
            "recompute = \"selective\" as {name} means it: its per-operator policy (\"op\")"
        ));
    }
    if layout.recompute == Recompute::Selective && f.selective_checkpoints_blocks() {
        layout.recompute = Recompute::Full;
        assumptions.push(format!(
            "recompute = \"selective\" as {name} means it: whole blocks checkpointed, by default \
             every block (recompute = \"full\"; recompute_layers takes a share of them)"
        ));
    }
    if layout.zero == 3 && layout.pp > 1 && f.fsdp_keeps_params_with_pp() {
        layout.zero = 1;
        assumptions.push(format!(
            "FSDP with pipeline parallelism keeps whole parameters and gradients for the step \
             ({name} does not reshard after forward under PP): ZeRO-1's traffic and memory"
        ));
    }
}
