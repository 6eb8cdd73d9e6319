//! `kind = "training"` lowered: the cluster, the model, the layout and its order, the optimizer
//! and every option of `[parallel]`, `[model]` and `[sim]` resolved into a
//! `workload::training::TrainingConfig` (each default recorded among its assumptions, each refusal at
//! its key), and the compute model its kernels are priced on. `options.rs` holds the readers of
//! the optional features (offload, optimizer, compression, parameter gathering, memory cap,
//! local SGD).

mod framework;
mod layout;
mod options;
mod ranks;
mod sequences;

use crate::hw::{ComputeModel, Dtype, GpuSpec};
use crate::model::Transformer;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{Needs, resolve_profile};
use crate::workload::training::TrainingConfig;
use crate::workload::training::optimizer::Optimizer;
use crate::workload::training::policy::{ElementwiseMode, Fp8Casts};
use crate::workload::training::setup::Strides;
use options::*;

/// A training scenario lowered: its set-up and the compute model that prices its kernels.
pub fn lower(s: &Scenario) -> Result<(TrainingConfig, ComputeModel), ScenarioError> {
    let mut training = resolve(s)?;
    let compute = compute_model(s, &mut training)?;
    Ok((training, compute))
}

/// Resolves a training scenario.
pub fn resolve(s: &Scenario) -> Result<TrainingConfig, ScenarioError> {
    let f = &s.file;
    let mut assumptions = Vec::new();

    let needs = Needs {
        sizes: true,
        inter_node: true,
    };
    let cluster = crate::scenario::lower::cluster::resolve(s, &mut assumptions, needs)?;
    let (gpu, nodes, gpus_per_node) = (cluster.gpu, cluster.nodes, cluster.gpus_per_node);
    let (mut model, published_dropout) = resolve_model(s, &gpu, &mut assumptions)?;
    let profile = resolve_profile(s, &gpu, model.dtype, &mut assumptions)?;
    let gemm_dtype = gemms_in_fp8(&mut model, &mut assumptions);
    let p = &f.parallel;
    let gpus = (nodes * gpus_per_node, gpus_per_node);
    let framework = framework::resolve(s)?;
    let (layout, cp_algorithm, sequences) =
        layout::resolve(s, &model, gpus, framework, &mut assumptions)?;
    let order = layout::order(s)?;
    let optimizer = resolve_optimizer(s, &model, &mut assumptions)?;
    name_optimizer_states(optimizer, &mut assumptions);
    let (optimizer_offload, host) = resolve_offload(s, &layout, optimizer, &mut assumptions)?;
    let reliability = crate::scenario::lower::reliability::reliability(s, &mut assumptions)?;
    let (straggler_slowdown, link_slowdown) =
        crate::scenario::lower::reliability::stragglers(s, &mut assumptions)?;
    let (sites, local_steps, outer_overlap) = resolve_local_sgd(
        s,
        &cluster.topology,
        &layout,
        &order,
        nodes,
        &mut assumptions,
    )?;
    let (ranks, perturbations) = ranks::resolve(
        s,
        (nodes, gpus_per_node),
        (&gpu, &cluster.topology),
        layout.schedule,
        &mut assumptions,
    )?;
    let grad_bytes = resolve_grad_dtype(s, model.dtype, framework, &mut assumptions)?;
    let param_gather = resolve_param_gather(s, &layout, framework, &mut assumptions)?;
    let tp_dgrad_overlap = p.tp_dgrad_overlap.unwrap_or_else(|| {
        let on = layout.tp > 1 && framework.is_some_and(|f| f.tp_dgrad_overlap());
        if let (true, Some(f)) = (on, framework) {
            assumptions.push(format!(
                "each input-gradient collective beside its weight-gradient GEMM \
                 (tp_dgrad_overlap, {}'s default)",
                f.name()
            ));
        }
        on
    });
    let eager = f.model.elementwise.map_or_else(
        || {
            let on = model.gated && framework.is_some_and(|f| f.runs_eager(""));
            if let (true, Some(f)) = (on, framework) {
                assumptions.push(format!(
                    "elementwise operations as eager PyTorch runs them ({}'s model code without \
                     torch.compile)",
                    f.name()
                ));
            }
            on
        },
        |m| m == ElementwiseMode::Eager,
    );
    let dropout = resolve_dropout(s, framework, published_dropout, &mut assumptions)?;
    let recompute_layers = resolve_recompute_layers(
        s,
        &model,
        layout.recompute,
        sequences.is_some(),
        &mut assumptions,
    )?;
    let mut training = TrainingConfig {
        scenario: s.name(),
        param_gather,
        grad_bytes,
        order,
        stride: Strides::new(&order, [("tp", 1), ("cp", 1), ("dp", 1), ("pp", 1)]),
        optimizer,
        optimizer_offload,
        host,
        tp_comm_overlap: p.tp_comm_overlap.unwrap_or(false),
        tp_dgrad_overlap,
        cp_algorithm,
        gpu: gpu.clone(),
        profile,
        fabric: cluster.fabric,
        topology: cluster.topology,
        first_gpu: 0,
        tier: cluster.tier,
        in_switch_reduction: cluster.in_switch_reduction,
        model,
        gemm_dtype,
        fp8_casts: resolve_fp8_casts(s, gemm_dtype, framework, &mut assumptions),
        tp: layout.tp,
        sequence_parallel: false,
        pp: layout.pp,
        schedule: layout.schedule,
        virtual_stages: layout.virtual_stages,
        dp: layout.dp,
        cp: layout.cp,
        ep: layout.ep,
        micro_batch: layout.micro_batch,
        global_batch: layout.global_batch,
        accumulation: 1,
        recompute: layout.recompute,
        recompute_layers,
        eager,
        dropout,
        unfused_attention: f
            .model
            .attention_kernel
            .or(framework.and_then(|f| f.attention_kernel()).map(|(k, _)| k))
            == Some(crate::hw::attention_kernel::AttentionKernel::Unfused),
        zero: layout.zero,
        seed: f.sim.seed.unwrap_or(1),
        record_links: f.sim.record_links.unwrap_or(false),
        straggler_slowdown,
        ranks,
        trace_gpus: ranks::trace_gpus(s, ranks, nodes * gpus_per_node)?,
        slow_gpus: perturbations.slow,
        jitter_gpus: perturbations.jitter,
        limited_gpus: perturbations.power,
        degraded_links: perturbations.links,
        reliability,
        prices: crate::scenario::lower::cost::prices(s)?,
        train_tokens: crate::scenario::lower::capacity::tokens(s)?,
        compression: resolve_compression(s, &mut assumptions)?,
        activation_compression: resolve_activation_compression(
            s,
            layout.recompute,
            &mut assumptions,
        )?,
        memory_cap: resolve_memory_cap(s, &gpu, layout.recompute, &mut assumptions)?,
        sites,
        local_steps,
        outer_overlap,
        sequences,
        assumptions,
    };
    training.set_layout(&layout);
    crate::workload::training::sequences::choose_recompute(&mut training);
    slow_links(
        &mut training,
        layout.pp - 1,
        link_slowdown,
        (nodes, gpus_per_node),
    );
    Ok(training)
}

/// The format of the linear layers' GEMMs, the model's; fp8 training runs everything else in
/// bf16 (recorded).
fn gemms_in_fp8(model: &mut Transformer, assumptions: &mut Vec<String>) -> Dtype {
    let gemm_dtype = model.dtype;
    if gemm_dtype == Dtype::Fp8 {
        model.dtype = Dtype::Bf16;
        assumptions.push(
            "fp8 training: the linear layers' GEMMs in fp8, their operands cast by a streaming \
             pass each under dynamic scaling; attention, norms, activations, weights and \
             communication in bf16 (as Transformer Engine and torchao's float8 run it)"
                .into(),
        );
    }
    gemm_dtype
}

/// The default-format note names Adam's states; says which optimizer's they are.
fn name_optimizer_states(optimizer: Optimizer, assumptions: &mut [String]) {
    if optimizer != Optimizer::Adam {
        for a in assumptions
            .iter_mut()
            .filter(|a| a.ends_with("and Adam states"))
        {
            *a = a.replace("Adam states", &format!("{} states", optimizer.name()));
        }
    }
}

/// Slows the network links of the server of stage `last`'s simulated GPU `link_slowdown` times,
/// so that its collectives cross it (recorded; no effect on one server).
fn slow_links(
    training: &mut TrainingConfig,
    last: u32,
    link_slowdown: f64,
    (nodes, gpus_per_node): (u32, u32),
) {
    if link_slowdown > 1.0 {
        let node = training.stage_rank(last) / gpus_per_node;
        if nodes > 1 {
            training.topology.slow_node(node, link_slowdown);
            training.assumptions.push(format!(
                "server {node}'s network links run {link_slowdown}x slower; collectives that cross it run at its pace"
            ));
        } else {
            training.assumptions.push(
                "straggler_link_slowdown has no effect on one server (no network links)".into(),
            );
        }
    }
}

/// The model, and the dropout its published set-up trains with (a preset's or config's).
fn resolve_model(
    s: &Scenario,
    gpu: &GpuSpec,
    assumptions: &mut Vec<String>,
) -> Result<(Transformer, Option<(f64, String)>), ScenarioError> {
    let m = &s.file.model;
    let (model, published_dropout) =
        crate::scenario::lower::model::resolve_scenario_published(s, assumptions)?;
    if gpu.peak_flops(model.dtype).is_none() {
        return Err(s
            .error_at(
                "model.dtype",
                format!("{} has no {} arithmetic", gpu.name, model.dtype),
            )
            .with_help("choose a format the GPU supports (`clustersim list gpus` shows them)"));
    }
    if m.dtype.is_none() {
        assumptions.push(
            "bf16 weights and activations with fp32 master weights, gradients and Adam states"
                .into(),
        );
    }
    if m.elementwise == Some(ElementwiseMode::Eager) {
        if !model.gated {
            return Err(s
                .error_at(
                    "model.elementwise",
                    "eager elementwise kernels are modelled for Llama-style layers (gated MLP, \
                     RMSNorm, rotary embedding); this model's MLP is not gated",
                )
                .with_help(
                    "remove elementwise: eager PyTorch runs a plain layer's LayerNorm and GELU as \
                     single kernels, as the default prices them",
                ));
        }
        assumptions.push(
            "elementwise operations as eager PyTorch runs Llama-style code: a kernel per \
             operation of RMSNorm, rotary embedding, repeat_kv and SwiGLU, each streaming its \
             inputs and output"
                .into(),
        );
    }
    Ok((model, published_dropout))
}

/// The compute model of a set-up: its GPU, its measured profile when it has one, and the
/// scenario's attention kernel (recorded among the set-up's assumptions).
pub fn compute_model(
    scenario: &Scenario,
    setup: &mut TrainingConfig,
) -> Result<ComputeModel, ScenarioError> {
    let mut compute =
        super::cluster::with_profile(scenario, setup.gpu.clone(), setup.profile.as_ref())?;
    let reference = framework::resolve(scenario)?.and_then(|f| f.attention_kernel());
    super::cluster::apply_attention_kernel(
        scenario,
        &mut compute,
        reference,
        &mut setup.assumptions,
    )?;
    super::power_limit::apply(scenario, &mut compute, true, &mut setup.assumptions)?;
    if let (blocks, Some(c)) = setup.contention() {
        setup.assumptions.push(format!(
            "a collective running beside computation holds {blocks} of the {}'s {} SMs (NCCL's \
             channels over the servers' links): kernels beside it run at {:.1}% of their speed",
            setup.gpu.name,
            setup.gpu.multiprocessors,
            100.0 * c.rate()
        ));
    }
    Ok(compute)
}

/// How an fp8 run casts its GEMMs' operands: as stated, else its framework's, else at every call
/// (torchao's dynamic scaling), recorded when the GEMMs are fp8.
fn resolve_fp8_casts(
    s: &Scenario,
    gemm: crate::hw::Dtype,
    framework: Option<crate::workload::training::framework::Framework>,
    assumptions: &mut Vec<String>,
) -> Fp8Casts {
    if let Some(c) = s.file.parallel.fp8_casts {
        return c;
    }
    let from_framework = framework.and_then(|f| f.fp8_casts().map(|c| (c, f.name())));
    let (casts, why) = match from_framework {
        Some((c, name)) => (c, format!("{name}'s")),
        None => (Fp8Casts::PerCall, "no framework named".to_string()),
    };
    if gemm == crate::hw::Dtype::Fp8 {
        assumptions.push(match casts {
            Fp8Casts::PerCall => {
                format!("fp8 GEMMs cast their activation and weight at every call ({why})")
            }
            Fp8Casts::TransformerEngine => format!(
                "fp8 weights cast once a step and reused by its micro-batches, as Transformer \
                 Engine does ({why})"
            ),
        });
    }
    casts
}
