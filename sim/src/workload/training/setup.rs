//! From a scenario to a training set-up: every key resolved, defaulted (and the default recorded),
//! or refused with its location.

use crate::hw::GpuSpec;
use crate::model::Transformer;
use crate::net::Fabric;
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::parallel::{ContextAlgorithm, Optimizer, Recompute, Schedule};
use crate::workload::cluster::{ClusterSetup, ComputeProfile, Needs, positive, resolve_profile};

/// A training run, fully specified.
#[derive(Clone, Debug)]
pub struct Training {
    pub gpu: &'static GpuSpec,
    /// Measured kernel times that price kernels before the roofline (`cluster.profile`).
    pub profile: Option<ComputeProfile>,
    pub fabric: Fabric,
    pub topology: Topology,
    /// Network tier that prices the collectives.
    pub tier: Tier,
    /// Whether the NVSwitches can reduce in the switch (NCCL's NVLS).
    pub in_switch_reduction: bool,
    pub model: Transformer,
    /// Tensor-parallel degree (Megatron-LM's column/row split), innermost in rank order.
    pub tp: u32,
    /// Sequence parallelism: layer norms and dropout split over the tensor-parallel ranks by
    /// tokens, all-reduces replaced by reduce-scatter and all-gather.
    pub sequence_parallel: bool,
    /// Pipeline stages, outermost in rank order; each runs `layers / (pp x virtual_stages)`
    /// layers per model chunk.
    pub pp: u32,
    pub schedule: Schedule,
    pub virtual_stages: u32,
    pub dp: u32,
    /// Rank distance between neighbours along each parallel dimension.
    pub stride: Strides,
    /// Bytes of optimizer state per parameter (12 for Adam, 6 for 8-bit Adam).
    pub optimizer_bytes: f64,
    /// Tensor-parallel collectives overlap the neighbouring GEMMs instead of blocking.
    pub tp_comm_overlap: bool,
    /// Context parallelism: each sequence split over `cp` ranks (two balanced chunks each).
    pub cp: u32,
    pub cp_algorithm: ContextAlgorithm,
    /// Expert parallelism: each group of `ep` consecutive data-parallel replicas shares out the
    /// experts of every mixture-of-experts layer.
    pub ep: u32,
    pub micro_batch: u32,
    pub global_batch: u32,
    /// Micro-batches each data-parallel replica runs per step (gradient accumulation).
    pub accumulation: u32,
    pub recompute: Recompute,
    /// ZeRO stage: 0 none, 1 optimizer states sharded, 2 gradients too.
    pub zero: u8,
    pub seed: u64,
    /// Defaults that were applied, in words, for the report.
    pub assumptions: Vec<String>,
}

/// Rank strides of the parallel dimensions: rank = t x tp + c x cp + d x dp + p x pp for tensor,
/// context, data and pipeline indices (t, c, d, p).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Strides {
    pub tp: u32,
    pub cp: u32,
    pub dp: u32,
    pub pp: u32,
}

impl Strides {
    /// Strides for `order` (innermost first) and the dimensions' sizes.
    fn new(order: &[&str], sizes: [(&str, u32); 4]) -> Strides {
        let mut stride = 1;
        let mut out = [0u32; 4];
        for name in order {
            let i = sizes
                .iter()
                .position(|(n, _)| n == name)
                .expect("validated order");
            out[i] = stride;
            stride *= sizes[i].1;
        }
        Strides {
            tp: out[0],
            cp: out[1],
            dp: out[2],
            pp: out[3],
        }
    }
}

impl Training {
    pub fn gpus(&self) -> u32 {
        self.fabric.gpus()
    }

    /// Global rank of tensor-parallel rank 0, context rank 0, data-parallel replica 0 of pipeline
    /// stage `stage`.
    pub fn stage_rank(&self, stage: u32) -> u32 {
        stage * self.stride.pp
    }

    /// The layers of model chunk `chunk` (of pp x virtual_stages): as even a split as the layer
    /// count allows, the first chunks taking one more when it does not divide.
    pub fn chunk_layers(&self, chunk: u32) -> std::ops::Range<u32> {
        let chunks = self.pp * self.virtual_stages;
        let (base, extra) = (self.model.layers / chunks, self.model.layers % chunks);
        let start = chunk * base + chunk.min(extra);
        start..start + base + u32::from(chunk < extra)
    }

    /// Weights of layer `layer` that one GPU holds: its tensor-parallel share, and of a
    /// mixture-of-experts layer's routed experts only its expert-parallel share.
    pub fn layer_params_here(&self, layer: u32) -> f64 {
        let m = &self.model;
        let tp = self.tp as f64;
        if m.is_moe_layer(layer) {
            (m.moe_layer_params() - m.layer_expert_params()) as f64 / tp
                + m.layer_expert_params() as f64 / (tp * self.ep as f64)
        } else {
            m.layer_params() as f64 / tp
        }
    }

    /// Layers held by the GPU of pipeline stage `stage` (all its chunks).
    pub fn stage_layers(&self, stage: u32) -> u32 {
        (0..self.virtual_stages)
            .map(|c| self.chunk_layers(c * self.pp + stage).len() as u32)
            .sum()
    }

    /// Parameters a GPU of pipeline stage `stage` holds: its chunks' layers split over the
    /// tensor-parallel ranks, the embedding on the first stage and the output projection on the
    /// last (a copy of the embedding when tied and on another stage, as Megatron-LM keeps it).
    pub fn stage_params(&self, stage: u32) -> f64 {
        let m = &self.model;
        let tp = self.tp as f64;
        let table = m.vocab as f64 * m.hidden as f64 / tp;
        let mut params: f64 = (0..self.virtual_stages)
            .flat_map(|c| self.chunk_layers(c * self.pp + stage))
            .map(|layer| self.layer_params_here(layer))
            .sum();
        if stage == 0 {
            params += table;
        }
        if stage == self.pp - 1 && (!m.tied_embeddings || self.pp > 1) {
            params += table;
        }
        params
    }
}

/// Resolves a training scenario.
pub fn resolve(s: &Scenario) -> Result<Training, ScenarioError> {
    let f = &s.file;
    let mut assumptions = Vec::new();

    let needs = Needs {
        sizes: true,
        inter_node: true,
    };
    let cluster = crate::workload::cluster::resolve(s, &mut assumptions, needs)?;
    let ClusterSetup {
        gpu,
        nodes,
        gpus_per_node,
        fabric,
        topology,
        tier,
        in_switch_reduction,
        ..
    } = cluster;

    let model = resolve_model(s, gpu, &mut assumptions)?;
    let profile = resolve_profile(s, gpu, model.dtype, &mut assumptions)?;
    let gpus = nodes * gpus_per_node;

    // Parallelism.
    let p = &f.parallel;
    let tp = positive(s, p.tp.unwrap_or(1), "parallel.tp")?;
    if !gpus.is_multiple_of(tp) {
        return Err(s.error_at(
            "parallel.tp",
            format!("tp = {tp} does not divide the cluster's {gpus} GPUs"),
        ));
    }
    let pp = positive(s, p.pp.unwrap_or(1), "parallel.pp")?;
    if !gpus.is_multiple_of(tp * pp) {
        return Err(s.error_at(
            "parallel.pp",
            format!("tp x pp = {tp} x {pp} does not divide the cluster's {gpus} GPUs"),
        ));
    }
    let cp = positive(s, p.cp.unwrap_or(1), "parallel.cp")?;
    if !gpus.is_multiple_of(tp * pp * cp) {
        return Err(s.error_at(
            "parallel.cp",
            format!("tp x pp x cp = {tp} x {pp} x {cp} does not divide the cluster's {gpus} GPUs"),
        ));
    }
    if !model.seq_len.is_multiple_of(2 * cp) {
        return Err(s
            .error_at("parallel.cp", format!("cp = {cp} needs the sequence of {} tokens to split into 2 x cp = {} equal chunks", model.seq_len, 2 * cp))
            .with_help("context parallelism gives each rank two chunks (one early, one late) so that causal attention is balanced"));
    }
    let cp_algorithm = match (p.cp_algorithm, cp) {
        (Some(a), _) => a,
        (None, 1) => ContextAlgorithm::Ring,
        (None, _) => {
            assumptions
                .push("ring attention for context parallelism (Megatron-LM's default)".into());
            ContextAlgorithm::Ring
        }
    };
    let virtual_stages = positive(s, p.virtual_stages.unwrap_or(1), "parallel.virtual_stages")?;
    let schedule = match (p.schedule, pp) {
        (Some(Schedule::Interleaved1F1B), _) if virtual_stages < 2 => {
            return Err(s
                .error_at(
                    "parallel.schedule",
                    "the interleaved schedule needs virtual_stages of 2 or more",
                )
                .with_help(
                    "add virtual_stages = 2 (model chunks per GPU), or use schedule = \"1f1b\"",
                ));
        }
        (Some(sch), _) => sch,
        (None, 1) => Schedule::OneFOneB,
        (None, _) if virtual_stages > 1 => Schedule::Interleaved1F1B,
        (None, _) => {
            assumptions.push("1F1B pipeline schedule".into());
            Schedule::OneFOneB
        }
    };
    if virtual_stages > 1 && schedule != Schedule::Interleaved1F1B {
        return Err(s
            .error_at(
                "parallel.virtual_stages",
                format!("virtual_stages = {virtual_stages} needs schedule = \"interleaved-1f1b\""),
            )
            .with_help("set schedule = \"interleaved-1f1b\", or virtual_stages = 1"));
    }
    let chunks = pp * virtual_stages;
    if chunks > model.layers {
        return Err(s.error_at(
            if virtual_stages > 1 {
                "parallel.virtual_stages"
            } else {
                "parallel.pp"
            },
            format!(
                "pp x virtual_stages = {chunks} chunks is more than the model's {} layers",
                model.layers
            ),
        ));
    }
    if !model.layers.is_multiple_of(chunks) {
        assumptions.push(format!(
            "{} layers split unevenly over {chunks} pipeline chunks (the first {} take one more)",
            model.layers,
            model.layers % chunks
        ));
    }
    for (what, count) in [
        ("heads", model.heads),
        ("kv_heads", model.kv_heads),
        ("ffn", model.ffn),
        ("vocab", model.vocab),
    ] {
        if !count.is_multiple_of(tp) {
            return Err(s
                .error_at("parallel.tp", format!("tp = {tp} does not divide the model's {what} = {count}"))
                .with_help("Megatron-LM splits heads, KV heads, the MLP width and the vocabulary evenly over tensor-parallel ranks"));
        }
    }
    if tp > gpus_per_node {
        assumptions.push(format!(
            "tensor-parallel groups of {tp} span nodes (more than the {gpus_per_node} GPUs of a node)"
        ));
    }
    let dp = match p.dp {
        Some(dp) if dp * tp * pp * cp != gpus => {
            return Err(s
                .error_at("parallel.dp", format!("dp = {dp} with tp = {tp}, pp = {pp} and cp = {cp} does not use the cluster's {gpus} GPUs"))
                .with_help(format!("dp x tp x pp x cp must be nodes x gpus_per_node = {gpus}: dp = {}; or remove dp to derive it", gpus / (tp * pp * cp))));
        }
        Some(dp) => dp,
        None => gpus / (tp * pp * cp),
    };
    let ep = positive(s, p.ep.unwrap_or(1), "parallel.ep")?;
    match &model.moe {
        None if ep > 1 => {
            return Err(s
                .error_at(
                    "parallel.ep",
                    format!(
                        "ep = {ep} needs a mixture-of-experts model; {} is dense",
                        model.name
                    ),
                )
                .with_help(
                    "remove ep, or choose a model with experts (e.g. preset = \"mixtral-8x7b\")",
                ));
        }
        Some(moe) if !moe.experts.is_multiple_of(ep) => {
            return Err(s.error_at(
                "parallel.ep",
                format!(
                    "ep = {ep} does not divide the model's {} experts",
                    moe.experts
                ),
            ));
        }
        _ => {}
    }
    if !dp.is_multiple_of(ep) {
        return Err(s
            .error_at("parallel.ep", format!("ep = {ep} does not divide dp = {dp}"))
            .with_help("expert-parallel groups are carved out of the data-parallel replicas (as Megatron-LM does by default)"));
    }
    if let Some(moe) = &model.moe
        && !moe.expert_ffn.is_multiple_of(tp)
    {
        return Err(s.error_at(
            "parallel.tp",
            format!(
                "tp = {tp} does not divide the experts' width expert_ffn = {}",
                moe.expert_ffn
            ),
        ));
    }
    let micro_batch = positive(s, p.micro_batch.unwrap_or(1), "parallel.micro_batch")?;
    let global_batch = match p.global_batch {
        Some(g) => positive(s, g, "parallel.global_batch")?,
        None => {
            assumptions.push(format!(
                "global batch {} (one micro-batch per replica)",
                micro_batch * dp
            ));
            micro_batch * dp
        }
    };
    if !global_batch.is_multiple_of(micro_batch * dp) {
        return Err(s
            .error_at("parallel.global_batch", format!(
                "global_batch = {global_batch} is not a multiple of micro_batch x dp = {micro_batch} x {dp} = {}",
                micro_batch * dp
            ))
            .with_help(format!("use a multiple of {}, e.g. {}", micro_batch * dp, micro_batch * dp * (global_batch / (micro_batch * dp)).max(1))));
    }
    if pp == 1 && (p.schedule.is_some() || virtual_stages > 1) {
        assumptions
            .push("schedule and virtual_stages have no effect without pipeline parallelism".into());
    }
    let accumulation = global_batch / (micro_batch * dp);
    if schedule == Schedule::Interleaved1F1B && pp > 1 && !accumulation.is_multiple_of(pp) {
        return Err(s
            .error_at("parallel.global_batch", format!(
                "the interleaved schedule needs the {accumulation} micro-batches per replica to be a multiple of pp = {pp}"
            ))
            .with_help(format!("use a global batch of a multiple of micro_batch x dp x pp = {}", micro_batch * dp * pp)));
    }
    let sequence_parallel = p.sequence_parallel.unwrap_or(false);
    if sequence_parallel && tp == 1 {
        assumptions.push("sequence_parallel has no effect without tensor parallelism".into());
    }
    let order_text = p.order.clone().unwrap_or_else(|| "tp-cp-dp-pp".to_string());
    let order: Vec<&str> = order_text.split('-').map(str::trim).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if sorted != ["cp", "dp", "pp", "tp"] {
        return Err(s
            .error_at("parallel.order", format!("\"{order_text}\" is not an order of the four dimensions"))
            .with_help("name tp, cp, dp and pp once each, innermost first, e.g. \"tp-cp-dp-pp\" (Megatron-LM's) or \"tp-dp-pp-cp\""));
    }
    let stride = Strides::new(&order, [("tp", tp), ("cp", cp), ("dp", dp), ("pp", pp)]);
    let optimizer_bytes = match p.optimizer {
        Some(Optimizer::Adam8bit) => 6.0,
        Some(Optimizer::Adam) => 12.0,
        None => 12.0,
    };
    let tp_comm_overlap = p.tp_comm_overlap.unwrap_or(false) && tp > 1;
    let zero = p.zero.unwrap_or(0);
    if zero > 3 {
        return Err(s
            .error_at(
                "parallel.zero",
                format!("ZeRO has stages 0 to 3, not {zero}"),
            )
            .with_help(
                "0 none, 1 optimizer states sharded, 2 gradients too, 3 weights too (FSDP)",
            ));
    }
    Ok(Training {
        stride,
        optimizer_bytes,
        tp_comm_overlap,
        cp,
        cp_algorithm,
        ep,
        tp,
        sequence_parallel: sequence_parallel && tp > 1,
        gpu,
        profile,
        fabric,
        topology,
        tier,
        in_switch_reduction,
        model,
        dp,
        micro_batch,
        global_batch,
        accumulation,
        pp,
        schedule,
        virtual_stages: if pp > 1 { virtual_stages } else { 1 },
        recompute: p.recompute.unwrap_or(Recompute::None),
        zero,
        seed: f.sim.seed.unwrap_or(1),
        assumptions,
    })
}

fn resolve_model(
    s: &Scenario,
    gpu: &'static GpuSpec,
    assumptions: &mut Vec<String>,
) -> Result<Transformer, ScenarioError> {
    let m = &s.file.model;
    let resolved =
        crate::model::resolve_noted(m, s.source.path.parent()).map_err(|e| e.locate(s))?;
    let mut model = resolved.model;
    if model.name.is_empty() {
        model.name = s.name();
    }
    assumptions.extend(resolved.notes);
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
    Ok(model)
}
