//! The optional features of a training scenario, each read, checked at its keys and defaulted
//! with the default recorded: optimizer offload and its host, the optimizer, gradient and
//! activation compression, parameter gathering, the gradients' format, the memory cap and local
//! SGD's sites.

use crate::hw::host::HostSpec;
use crate::hw::{Dtype, GpuSpec};
use crate::model::Transformer;
use crate::net::Topology;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::positive;
use crate::workload::training::comm::Compressions;
use crate::workload::training::framework::Framework;
use crate::workload::training::layout::Layout;
use crate::workload::training::optimizer::Optimizer;
use crate::workload::training::policy::{
    Optimizer as OptimizerKey, OptimizerOffload, ParamGather, Recompute,
};

/// Reads `parallel.optimizer_offload` and, where the states leave the GPU, the host (or the
/// optimizer node, priced as one) that keeps them.
pub(super) fn resolve_offload(
    s: &Scenario,
    layout: &Layout,
    optimizer: Optimizer,
    assumptions: &mut Vec<String>,
) -> Result<(OptimizerOffload, Option<HostSpec>), ScenarioError> {
    let key = "parallel.optimizer_offload";
    let p = &s.file.parallel;
    let offload = p.optimizer_offload.unwrap_or(OptimizerOffload::Gpu);
    match offload {
        OptimizerOffload::Gpu => return Ok((offload, None)),
        _ if matches!(optimizer, Optimizer::Galore { .. }) => {
            return Err(s
                .error_at(
                    key,
                    "GaLore's projections run on the GPU; offloading them is not modelled",
                )
                .with_help("use adam, adam-8bit or adafactor with an offloaded optimizer"));
        }
        OptimizerOffload::Host if layout.zero == 0 => {
            return Err(s
                .error_at(
                    key,
                    "offloading the optimizer partitions its states over the replicas",
                )
                .with_help("set zero = 1, 2 or 3 (ZeRO-Offload needs a ZeRO stage)"));
        }
        OptimizerOffload::Network if layout.zero != 3 => {
            return Err(s
                .error_at(
                    key,
                    format!(
                        "the in-network optimizer keeps the parameters too: ZeRO-3's pattern, \
                         not zero = {}",
                        layout.zero
                    ),
                )
                .with_help("set zero = 3"));
        }
        OptimizerOffload::Network
            if layout.tp * layout.pp * layout.cp * layout.ep > 1
                || p.local_steps.is_some_and(|l| l > 1) =>
        {
            return Err(s
                .error_at(
                    key,
                    "the in-network optimizer is modelled for pure data parallelism",
                )
                .with_help("use tp = pp = cp = ep = 1 and no local steps"));
        }
        _ => {}
    }
    let host = crate::scenario::lower::host::resolve(s, assumptions)?;
    if offload == OptimizerOffload::Network {
        assumptions.push(
            "the in-network optimizer node is priced as one host of [cluster.host]'s figures"
                .into(),
        );
    }
    Ok((offload, Some(host)))
}

/// Reads `parallel.optimizer` and GaLore's `galore_rank` and `galore_interval` (refused for
/// other optimizers).
pub(super) fn resolve_optimizer(
    s: &Scenario,
    model: &Transformer,
    assumptions: &mut Vec<String>,
) -> Result<Optimizer, ScenarioError> {
    let p = &s.file.parallel;
    let kind = p.optimizer.unwrap_or(OptimizerKey::Adam);
    if kind != OptimizerKey::Galore {
        s.refuse_set(
            &[
                (p.galore_rank.is_some(), "parallel.galore_rank"),
                (p.galore_interval.is_some(), "parallel.galore_interval"),
            ],
            |_| "GaLore's settings need the GaLore optimizer".into(),
            "add optimizer = \"galore\" to [parallel], or remove this key",
        )?;
    }
    Ok(match kind {
        OptimizerKey::Adam => Optimizer::Adam,
        OptimizerKey::Adam8bit => Optimizer::Adam8bit,
        OptimizerKey::Adafactor => Optimizer::Adafactor,
        OptimizerKey::Galore => {
            let rank = match p.galore_rank {
                Some(r) => positive(s, r, "parallel.galore_rank")?,
                None => {
                    let r = (model.hidden / 4).max(1);
                    assumptions.push(format!(
                        "GaLore rank {r} (hidden / 4, the paper's ratio for LLaMA 1B and 7B)"
                    ));
                    r
                }
            };
            let interval = match p.galore_interval {
                Some(t) => positive(s, t, "parallel.galore_interval")?,
                None => {
                    assumptions.push(
                        "GaLore refreshes its projection by SVD every 200 steps (the paper's)"
                            .into(),
                    );
                    200
                }
            };
            Optimizer::Galore { rank, interval }
        }
    })
}

/// Reads `[compression]`: each dimension's table (`workload::compression`).
pub(super) fn resolve_compression(
    s: &Scenario,
    assumptions: &mut Vec<String>,
) -> Result<Compressions, ScenarioError> {
    let Some(c) = &s.file.compression else {
        return Ok(Compressions::default());
    };
    let mut one = |spec: &Option<crate::scenario::compression::CompressionSpec>, name: &str| {
        crate::scenario::lower::compression::resolve(
            s,
            spec.as_ref(),
            &format!("compression.{name}"),
            &format!("{name}-parallel messages"),
            name == "pipeline",
            assumptions,
        )
    };
    Ok(Compressions {
        data: one(&c.data, "data")?,
        tensor: one(&c.tensor, "tensor")?,
        pipeline: one(&c.pipeline, "pipeline")?,
        expert: one(&c.expert, "expert")?,
        context: one(&c.context, "context")?,
        outer: one(&c.outer, "outer")?,
        pipeline_error_feedback: c
            .pipeline
            .as_ref()
            .and_then(|z| z.error_feedback)
            .unwrap_or(false),
    })
}

/// Reads `parallel.param_gather`: meaningful with ZeRO-3 only (an error otherwise); prefetching
/// when unstated.
pub(super) fn resolve_param_gather(
    s: &Scenario,
    layout: &Layout,
    framework: Option<Framework>,
    assumptions: &mut Vec<String>,
) -> Result<ParamGather, ScenarioError> {
    let stated = s.file.parallel.param_gather;
    let framework_gather = framework
        .and_then(|f| f.param_gather())
        .filter(|_| layout.zero == 3);
    let stated = match (stated, framework_gather) {
        (None, Some("on-demand")) => Some(ParamGather::OnDemand),
        _ => stated,
    };
    if layout.zero != 3 {
        return match stated {
            None => Ok(ParamGather::Prefetch),
            Some(g) => Err(s
                .error_at(
                    "parallel.param_gather",
                    format!(
                        "parameters are gathered only when ZeRO-3 shards them, not with zero = {}",
                        layout.zero
                    ),
                )
                .with_help(format!(
                    "set zero = 3, or remove param_gather = \"{}\"",
                    g.name()
                ))),
        };
    }
    let gather = stated.unwrap_or(ParamGather::Prefetch);
    assumptions.push(match (gather, stated.is_some()) {
        (ParamGather::Prefetch, false) => "ZeRO-3: each layer's parameters gathered in one \
             all-gather while the layer before computes (FSDP's prefetch; not stated)"
            .into(),
        (ParamGather::Prefetch, true) => "ZeRO-3: each layer's parameters gathered in one \
             all-gather while the layer before computes (parallel.param_gather)"
            .into(),
        (ParamGather::OnDemand, _) => format!(
            "ZeRO-3: each weight matrix gathered on demand by its own all-gather into one tensor \
             per rank (a copy each), its list first built by the host in Python ({:.1} us a \
             rank, the GPU idle), and each layer's gradients reduce-scattered a matrix at a time \
             from a per-rank list (a copy each), compute waiting (parallel.param_gather, \
             DeepSpeed v0.3); with full recomputation, matrices kept from the recomputed forward \
             to the backward within DeepSpeed's reuse distance ({:e} parameters), the rest \
             gathered again; norms and biases stay whole on every rank",
            crate::workload::training::step::HOST_LOOP_PER_RANK_S * 1e6,
            crate::workload::training::step::MAX_REUSE_DISTANCE
        ),
    });
    Ok(gather)
}

/// Reads `parallel.grad_dtype`: fp32 (the default, recorded) or the model's 16-bit format; the
/// bytes per parameter of the gradients.
pub(super) fn resolve_grad_dtype(
    s: &Scenario,
    model: Dtype,
    framework: Option<Framework>,
    assumptions: &mut Vec<String>,
) -> Result<f64, ScenarioError> {
    let half = framework.filter(|f| f.half_precision_gradients() && model.bytes() == 2.0);
    let stated = s.file.parallel.grad_dtype.or(half.map(|_| model));
    if let (None, Some(f)) = (s.file.parallel.grad_dtype, half) {
        assumptions.push(format!(
            "gradients in the model's {} ({}'s default)",
            model.name(),
            f.name()
        ));
    }
    match stated {
        None => {
            assumptions.push(
                "gradients kept and reduced across data-parallel ranks in fp32 (Megatron-LM's default)"
                    .into(),
            );
            Ok(crate::workload::training::step::GRAD_BYTES)
        }
        Some(Dtype::Fp32) => Ok(crate::workload::training::step::GRAD_BYTES),
        Some(d) if d == model && d.bytes() == 2.0 => {
            assumptions.push(format!(
                "gradients kept and reduced in {} (parallel.grad_dtype); the optimizer converts its shard to fp32 for the step",
                d.name()
            ));
            Ok(d.bytes())
        }
        Some(d) => Err(s
            .error_at(
                "parallel.grad_dtype",
                format!(
                    "gradients are kept in fp32 or in the model's 16-bit format ({}), not {}",
                    model.name(),
                    d.name()
                ),
            )
            .with_help(format!("grad_dtype = \"fp32\" or \"{}\"", model.name()))),
    }
}

/// Reads `model.dropout`: whether the layers train with dropout, and so keep its masks. Unstated:
/// what the model's `published` set-up (its preset's or config's, and where that is said) trains
/// with, as a run of that model most likely does; else the framework's default, else
/// Megatron-LM's 0.1.
pub(super) fn resolve_dropout(
    s: &Scenario,
    framework: Option<Framework>,
    published: Option<(f64, String)>,
    assumptions: &mut Vec<String>,
) -> Result<bool, ScenarioError> {
    if let (None, Some((p, by))) = (s.file.model.dropout, published) {
        assumptions.push(if p > 0.0 {
            format!(
                "dropout on (model.dropout not stated; {by} trains with {p}): each layer keeps \
                 its attention and residual dropout masks, a byte an element"
            )
        } else {
            format!(
                "no dropout, so no dropout masks kept (model.dropout not stated; {by} trains \
                 without it)"
            )
        });
        return Ok(p > 0.0);
    }
    match s.file.model.dropout {
        Some(p) if (0.0..1.0).contains(&p) => Ok(p > 0.0),
        Some(p) => Err(s
            .error_at(
                "model.dropout",
                format!("a dropout probability is at least 0 and below 1, not {p}"),
            )
            .with_help("dropout = 0.0 (none) or dropout = 0.1 (Megatron-LM's default)")),
        None => match framework.filter(|f| !f.trains_with_dropout()) {
            Some(f) => {
                assumptions.push(format!(
                    "no dropout, so no dropout masks kept (model.dropout not stated; {}'s \
                     models train without it)",
                    f.name()
                ));
                Ok(false)
            }
            None => {
                assumptions.push(
                    "dropout on (model.dropout not stated; Megatron-LM's default 0.1): each \
                     layer keeps its attention and residual dropout masks, a byte an element"
                        .into(),
                );
                Ok(true)
            }
        },
    }
}

/// Reads `[compression.activations]`: used by adaptive recomputation only (noted otherwise);
/// compressed once and decompressed once, so `per_hop` and `error_feedback` are refused.
pub(super) fn resolve_activation_compression(
    s: &Scenario,
    recompute: Recompute,
    assumptions: &mut Vec<String>,
) -> Result<Option<crate::collective::cost::Compression>, ScenarioError> {
    let Some(spec) = s
        .file
        .compression
        .as_ref()
        .and_then(|c| c.activations.as_ref())
    else {
        return Ok(None);
    };
    if spec.per_hop.is_some() {
        return Err(s
            .error_at(
                "compression.activations.per_hop",
                "saved activations are compressed once in the forward and decompressed once in the backward; per_hop does not apply",
            )
            .with_help("remove per_hop from [compression.activations]"));
    }
    for (key, given) in [
        ("overlap", spec.overlap.is_some()),
        ("slice", spec.slice.is_some()),
    ] {
        if given {
            return Err(s
                .error_at(
                    &format!("compression.activations.{key}"),
                    format!("saved activations are not sent in the steps of a collective; {key} (pipelining a per-hop codec with its transfers) does not apply"),
                )
                .with_help(format!("remove {key} from [compression.activations]")));
        }
    }
    let mut spec = spec.clone();
    // Not a collective: nothing to record about hops.
    spec.per_hop = Some(false);
    let z = crate::scenario::lower::compression::resolve(
        s,
        Some(&spec),
        "compression.activations",
        "saved activations",
        false,
        assumptions,
    )?;
    if recompute != Recompute::Adaptive {
        assumptions
            .push("[compression.activations] has no effect unless recompute = \"adaptive\"".into());
    }
    Ok(z)
}

/// Reads `parallel.memory_cap` (default: the GPU's memory, recorded when adaptive
/// recomputation uses it).
pub(super) fn resolve_memory_cap(
    s: &Scenario,
    gpu: &GpuSpec,
    recompute: Recompute,
    assumptions: &mut Vec<String>,
) -> Result<f64, ScenarioError> {
    let p = &s.file.parallel;
    match (p.memory_cap, recompute) {
        (Some(cap), Recompute::Adaptive) if cap.0 > 0 => Ok(cap.0 as f64),
        (Some(_), Recompute::Adaptive) => Err(s
            .error_at("parallel.memory_cap", "a memory cap is above zero")
            .with_help("e.g. memory_cap = \"60 GiB\"")),
        (Some(_), _) => Err(s
            .error_at(
                "parallel.memory_cap",
                "memory_cap is the budget of adaptive recomputation",
            )
            .with_help("add recompute = \"adaptive\", or remove memory_cap")),
        (None, Recompute::Adaptive) => {
            assumptions.push(format!(
                "adaptive recomputation fits the GPU's whole memory ({:.1} GiB)",
                gpu.memory_bytes as f64 / (1u64 << 30) as f64
            ));
            Ok(gpu.memory_bytes as f64)
        }
        (None, _) => Ok(gpu.memory_bytes as f64),
    }
}

/// Reads `parallel.local_steps` and `outer_overlap`: local SGD needs sites to synchronise across
/// (a `wan` topology), data parallelism outermost in rank order (each replica inside one site)
/// and replicas and nodes that split evenly over the sites. Returns (sites, local steps, overlap).
pub(super) fn resolve_local_sgd(
    s: &Scenario,
    topology: &Topology,
    layout: &Layout,
    order: &[&'static str; 4],
    nodes: u32,
    assumptions: &mut Vec<String>,
) -> Result<(u32, u32, bool), ScenarioError> {
    let p = &s.file.parallel;
    let steps = positive(s, p.local_steps.unwrap_or(1), "parallel.local_steps")?;
    if steps == 1 {
        if p.outer_overlap.is_some() {
            assumptions.push("outer_overlap has no effect without local steps".into());
        }
        return Ok((1, 1, false));
    }
    let spec = &topology.spec;
    if spec.inter != crate::net::topology::InterKind::Wan {
        return Err(s
            .error_at("parallel.local_steps", "local SGD synchronises sites, and this cluster is one site")
            .with_help("set [cluster.inter_node] topology = \"wan\" with sites = 2 (or more) and the link between them"));
    }
    let sites = spec.sites;
    if order[3] != "dp" {
        return Err(s
            .error_at("parallel.local_steps", "local SGD needs data parallelism outermost in rank order, so that each replica lies inside one site")
            .with_help("add order = \"tp-cp-pp-dp\" to [parallel]"));
    }
    if !layout.dp.is_multiple_of(sites) || !nodes.is_multiple_of(sites) {
        return Err(s.error_at(
            "parallel.local_steps",
            format!(
                "{sites} sites need the {} data-parallel replicas and the {nodes} nodes to split evenly between them",
                layout.dp
            ),
        ));
    }
    let overlap = match p.outer_overlap {
        Some(o) => o,
        None => {
            assumptions.push(
                "the outer synchronisation blocks the next round of local steps (DiLoCo)".into(),
            );
            false
        }
    };
    Ok((sites, steps, overlap))
}

/// Reads `parallel.recompute_layers`: full recomputation of the first that many layers of each
/// pipeline chunk (Megatron-LM's block method), for fixed-shape micro-batches only.
pub(super) fn resolve_recompute_layers(
    s: &Scenario,
    model: &Transformer,
    recompute: Recompute,
    packed: bool,
    assumptions: &mut Vec<String>,
) -> Result<Option<u32>, ScenarioError> {
    let key = "parallel.recompute_layers";
    let Some(n) = s.file.parallel.recompute_layers else {
        return Ok(None);
    };
    if recompute != Recompute::Full {
        return Err(s
            .error_at(
                key,
                "recompute_layers counts the layers of each pipeline chunk that full \
                 recomputation reruns",
            )
            .with_help("add recompute = \"full\", or remove recompute_layers"));
    }
    if packed {
        return Err(s
            .error_at(
                key,
                "with [sequences] the packing chooses which micro-batches recompute",
            )
            .with_help("remove recompute_layers, or [sequences]"));
    }
    if n == 0 || n > model.layers {
        return Err(s
            .error_at(
                key,
                format!(
                    "recompute_layers is from 1 to the model's {} layers",
                    model.layers
                ),
            )
            .with_help("recompute = \"none\" keeps every layer's activations"));
    }
    assumptions.push(format!(
        "full recomputation of the first {n} layers of each pipeline chunk (block method); the \
         others keep their activations"
    ));
    Ok(Some(n))
}
