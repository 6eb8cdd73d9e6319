//! From a scenario to a training set-up: every key resolved, defaulted (and the default recorded),
//! or refused with its location.

use super::comm::Compressions;
use super::layout::Layout;
use super::optimizer::Optimizer;
use super::policy::{
    ContextAlgorithm, ElementwiseMode, Optimizer as OptimizerKey, OptimizerOffload, ParamGather,
    Recompute, Schedule,
};
use super::reliability::Reliability;
use crate::hw::Dtype;
use crate::hw::GpuSpec;
use crate::hw::host::HostSpec;
use crate::model::Transformer;
use crate::net::Fabric;
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{
    ClusterSetup, ComputeProfile, Needs, positive, resolve_profile,
};
use crate::workload::cost::Prices;

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
    /// The model; its `dtype` is the format of everything but the linear layers' GEMMs
    /// (`gemm_dtype`): bf16 in an fp8 run.
    pub model: Transformer,
    /// The format the linear layers' GEMMs compute in: the scenario's `dtype`. Under fp8 the
    /// GEMMs run in fp8 and the rest in bf16, as fp8 training recipes (Transformer Engine,
    /// torchao's float8) run them; each fp8 GEMM's operands are cast first (`layer::fp8_cast`).
    pub gemm_dtype: Dtype,
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
    /// The parallel dimensions in rank order, innermost first ("tp", "cp", "dp", "pp").
    pub order: [&'static str; 4],
    /// Rank distance between neighbours along each parallel dimension.
    pub stride: Strides,
    /// The optimizer (its state, its step and GaLore's projections).
    pub optimizer: Optimizer,
    /// Where the optimizer states live and the step runs (`parallel.optimizer_offload`).
    pub optimizer_offload: OptimizerOffload,
    /// The servers' host, shared by its GPUs (`host`), or the optimizer node (`network`).
    pub host: Option<HostSpec>,
    /// Bytes per parameter of the gradients kept and reduced across data-parallel ranks: 4
    /// (fp32, Megatron-LM) or 2 (`parallel.grad_dtype` the model's 16-bit format, DeepSpeed).
    pub grad_bytes: f64,
    /// Tensor-parallel collectives overlap the neighbouring GEMMs instead of blocking (no effect
    /// without tensor parallelism).
    pub tp_comm_overlap: bool,
    /// The backward's input-gradient collective of each column-split GEMM runs beside its
    /// weight-gradient GEMM (`parallel.tp_dgrad_overlap`; implied by `tp_comm_overlap`).
    pub tp_dgrad_overlap: bool,
    /// ZeRO-3: how each layer's parameters are gathered (`parallel.param_gather`).
    pub param_gather: ParamGather,
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
    /// Attention runs unfused (`[model] attention_kernel = "unfused"`): its score matrices are
    /// kept for the backward, and selective recomputation recomputes them.
    pub unfused_attention: bool,
    /// The layer's elementwise operations run as eager PyTorch's separate kernels
    /// (`[model] elementwise = "eager"`, `super::eager`).
    pub eager: bool,
    /// ZeRO stage: 0 none, 1 optimizer states sharded, 2 gradients too.
    pub zero: u8,
    pub seed: u64,
    /// Count every link's bytes over the step for the report (`[sim] record_links`).
    pub record_links: bool,
    /// One GPU computes this many times slower than its peers (1: none). It sits in the last
    /// pipeline stage; its tensor-parallel peers wait for it at every collective and its
    /// data-parallel peers at the gradient reduction, so the stage runs at its pace.
    pub straggler_slowdown: f64,
    /// Failures and checkpoints (`[reliability]`).
    pub reliability: Option<Reliability>,
    /// Prices (`[cost]`).
    pub prices: Option<Prices>,
    /// Tokens to train on (`[capacity]`).
    pub train_tokens: Option<f64>,
    /// Compressed collectives by parallel dimension (`[compression]`).
    pub compression: Compressions,
    /// Compression of saved activations (`[compression.activations]`), for adaptive
    /// recomputation.
    pub activation_compression: Option<crate::collective::cost::Compression>,
    /// Memory per GPU adaptive recomputation fits within, bytes (`parallel.memory_cap`).
    pub memory_cap: f64,
    /// Local SGD (DiLoCo): sites that each reduce gradients among their own replicas every step
    /// (1: no local SGD, every replica reduces with every other).
    pub sites: u32,
    /// Local SGD: steps between two outer synchronisations across sites (1 without).
    pub local_steps: u32,
    /// Local SGD: the outer synchronisation overlaps the next round of steps (one round late).
    pub outer_overlap: bool,
    /// Sequences of unlike lengths and their micro-batches (`[sequences]`); None: every
    /// micro-batch is `micro_batch` sequences of the model's length.
    pub sequences: Option<super::sequences::Sequences>,
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
    fn new(order: &[&'static str], sizes: [(&str, u32); 4]) -> Strides {
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

/// The parallel dimensions, sorted.
const DIMENSIONS: [&str; 4] = ["cp", "dp", "pp", "tp"];

impl Training {
    /// The blocks a collective holds on each GPU of its servers, and the rate the kernels beside
    /// it keep (`collective::contention`).
    pub fn contention(&self) -> (u32, Option<crate::exec::Contention>) {
        crate::collective::contention(self.topology.spec.intra, self.gpu)
    }

    pub fn gpus(&self) -> u32 {
        self.fabric.gpus()
    }

    /// Whether the backward recomputes attention's score matrices: selective recomputation of
    /// unfused attention (fused attention recomputes them inside its backward anyway).
    pub fn recomputes_scores(&self) -> bool {
        self.recompute == Recompute::Selective && self.unfused_attention
    }

    /// Ranks that hold the same weights and reduce their gradients together every step (the
    /// data-parallel communicator, `Comm::Data`): the data-parallel replicas (under local SGD
    /// those of one site) times the context-parallel ranks, which compute gradients of the same
    /// weights from other parts of the sequences. ZeRO shards over all of them, as Megatron-Core's
    /// distributed optimizer (its data-parallel group with context parallelism) and torchtitan's
    /// FSDP (its `dp_shard_cp` mesh) do.
    pub fn gradient_ranks(&self) -> u32 {
        self.site_replicas() * self.cp
    }

    /// Data-parallel replicas of one site (all of them without local SGD's sites).
    pub fn site_replicas(&self) -> u32 {
        self.dp / self.sites
    }

    /// The parallel layout.
    pub fn layout(&self) -> Layout {
        Layout {
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            dp: self.dp,
            ep: self.ep,
            micro_batch: self.micro_batch,
            global_batch: self.global_batch,
            schedule: self.schedule,
            virtual_stages: self.virtual_stages,
            sequence_parallel: self.sequence_parallel,
            recompute: self.recompute,
            zero: self.zero,
        }
    }

    /// Where the optimizer step runs off the GPU: a server's host shared by its GPUs (`host`),
    /// the optimizer node (`network`), or none.
    pub fn optimizer_host(&self) -> Option<HostSpec> {
        match self.optimizer_offload {
            OptimizerOffload::Gpu => None,
            OptimizerOffload::Host => self.host.map(|h| h.share(self.topology.gpus_per_node)),
            OptimizerOffload::Network => self.host,
        }
    }

    /// Takes the degrees of `layout` (checked by the caller with `Layout::check`), with the rank
    /// strides that follow from them. Virtual stages and sequence parallelism need pipeline and
    /// tensor parallelism, and fall back to none without them.
    pub fn set_layout(&mut self, layout: &Layout) {
        self.tp = layout.tp;
        self.pp = layout.pp;
        self.cp = layout.cp;
        self.dp = layout.dp;
        self.ep = layout.ep;
        self.micro_batch = layout.micro_batch;
        self.global_batch = layout.global_batch;
        self.accumulation = layout.accumulation();
        self.schedule = layout.schedule;
        self.virtual_stages = if layout.pp > 1 {
            layout.virtual_stages
        } else {
            1
        };
        self.sequence_parallel = layout.sequence_parallel && layout.tp > 1;
        self.recompute = layout.recompute;
        self.zero = layout.zero;
        self.stride = Strides::new(
            &self.order,
            [
                ("tp", layout.tp),
                ("cp", layout.cp),
                ("dp", layout.dp),
                ("pp", layout.pp),
            ],
        );
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
    /// mixture-of-experts layer's routed experts only its expert-parallel share; none of the
    /// attention's in a layer that skips it.
    pub fn layer_params_here(&self, layer: u32) -> f64 {
        let m = &self.model;
        let tp = self.tp as f64;
        let here = if m.is_moe_layer(layer) {
            (m.moe_layer_params() - m.layer_expert_params()) as f64 / tp
                + m.layer_expert_params() as f64 / (tp * self.ep as f64)
        } else {
            m.layer_params() as f64 / tp
        };
        if m.has_attention(layer) {
            here
        } else {
            here - m.attention_params() as f64 / tp
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
    let cluster = crate::scenario::lower::cluster::resolve(s, &mut assumptions, needs)?;
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

    let mut model = resolve_model(s, gpu, &mut assumptions)?;
    let profile = resolve_profile(s, gpu, model.dtype, &mut assumptions)?;
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
    let gpus = nodes * gpus_per_node;

    // Parallelism: defaults first (each recorded), then one set of rules (`Layout::check`).
    let p = &f.parallel;
    let tp = positive(s, p.tp.unwrap_or(1), "parallel.tp")?;
    let pp = positive(s, p.pp.unwrap_or(1), "parallel.pp")?;
    let cp = positive(s, p.cp.unwrap_or(1), "parallel.cp")?;
    let ep = positive(s, p.ep.unwrap_or(1), "parallel.ep")?;
    let virtual_stages = positive(s, p.virtual_stages.unwrap_or(1), "parallel.virtual_stages")?;
    let micro_batch = positive(s, p.micro_batch.unwrap_or(1), "parallel.micro_batch")?;
    let cp_algorithm = match (p.cp_algorithm, cp) {
        (Some(a), _) => a,
        (None, 1) => ContextAlgorithm::Ring,
        (None, _) => {
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
    let sequences = super::sequences::resolve(s, &model, pp, cp, &mut assumptions)?;
    let global_batch = match (p.global_batch, &sequences) {
        // One sequence-packed micro-batch at a time, as many as the packing made.
        (_, Some(q)) => q.micro_batches.len() as u32 * dp,
        (Some(g), None) => positive(s, g, "parallel.global_batch")?,
        (None, None) => {
            assumptions.push(format!(
                "global batch {} (one micro-batch per replica)",
                micro_batch * dp
            ));
            micro_batch * dp
        }
    };
    let layout = Layout {
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
    layout.check(&model, gpus).map_err(|r| {
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
    let optimizer = resolve_optimizer(s, &model, &mut assumptions)?;
    if optimizer != Optimizer::Adam {
        // The default-format note names Adam's states; say which optimizer's they are.
        for a in assumptions
            .iter_mut()
            .filter(|a| a.ends_with("and Adam states"))
        {
            *a = a.replace("Adam states", &format!("{} states", optimizer.name()));
        }
    }
    let (optimizer_offload, host) = resolve_offload(s, &layout, optimizer, &mut assumptions)?;
    let reliability = crate::scenario::lower::reliability::reliability(s, &mut assumptions)?;
    let straggler_slowdown = match f.reliability.as_ref().and_then(|r| r.straggler_slowdown) {
        None => 1.0,
        Some(x) if x.is_finite() && x >= 1.0 => x,
        Some(x) => {
            return Err(s
                .error_at(
                    "reliability.straggler_slowdown",
                    format!("a straggler is 1 or more times slower than its peers, not {x}"),
                )
                .with_help("e.g. straggler_slowdown = 1.2 for one GPU 20% slower"));
        }
    };
    let link_slowdown = match f
        .reliability
        .as_ref()
        .and_then(|r| r.straggler_link_slowdown)
    {
        None => 1.0,
        Some(x) if x.is_finite() && x >= 1.0 => x,
        Some(x) => {
            return Err(s
                .error_at(
                    "reliability.straggler_link_slowdown",
                    format!("a slow link is 1 or more times slower than the others, not {x}"),
                )
                .with_help(
                    "e.g. straggler_link_slowdown = 4 for a NIC at a quarter of its speed",
                ));
        }
    };
    if straggler_slowdown > 1.0 {
        assumptions.push(format!(
            "one GPU of the last pipeline stage computes {straggler_slowdown}x slower; its stage runs at its pace"
        ));
    }
    let (sites, local_steps, outer_overlap) =
        resolve_local_sgd(s, &topology, &layout, &order, nodes, &mut assumptions)?;
    let grad_bytes = resolve_grad_dtype(s, model.dtype, &mut assumptions)?;
    let param_gather = resolve_param_gather(s, &layout, &mut assumptions)?;
    let mut training = Training {
        param_gather,
        grad_bytes,
        order,
        stride: Strides::new(&order, [("tp", 1), ("cp", 1), ("dp", 1), ("pp", 1)]),
        optimizer,
        optimizer_offload,
        host,
        tp_comm_overlap: p.tp_comm_overlap.unwrap_or(false),
        tp_dgrad_overlap: p.tp_dgrad_overlap.unwrap_or(false),
        cp_algorithm,
        gpu,
        profile,
        fabric,
        topology,
        tier,
        in_switch_reduction,
        model,
        gemm_dtype,
        tp,
        sequence_parallel: false,
        pp,
        schedule,
        virtual_stages,
        dp,
        cp,
        ep,
        micro_batch,
        global_batch,
        accumulation: 1,
        recompute: layout.recompute,
        eager: f.model.elementwise == Some(ElementwiseMode::Eager),
        unfused_attention: f.model.attention_kernel
            == Some(crate::hw::attention_kernel::AttentionKernel::Unfused),
        zero: layout.zero,
        seed: f.sim.seed.unwrap_or(1),
        record_links: f.sim.record_links.unwrap_or(false),
        straggler_slowdown,
        reliability,
        prices: crate::scenario::lower::cost::prices(s)?,
        train_tokens: crate::scenario::lower::capacity::tokens(s)?,
        compression: resolve_compression(s, &mut assumptions)?,
        activation_compression: resolve_activation_compression(
            s,
            layout.recompute,
            &mut assumptions,
        )?,
        memory_cap: resolve_memory_cap(s, gpu, layout.recompute, &mut assumptions)?,
        sites,
        local_steps,
        outer_overlap,
        sequences,
        assumptions,
    };
    training.set_layout(&layout);
    super::sequences::choose_recompute(&mut training);
    if link_slowdown > 1.0 {
        // The server of the last stage's simulated GPU, so that its collectives cross it.
        let node = training.stage_rank(pp - 1) / gpus_per_node;
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
    Ok(training)
}

fn resolve_model(
    s: &Scenario,
    gpu: &'static GpuSpec,
    assumptions: &mut Vec<String>,
) -> Result<Transformer, ScenarioError> {
    let m = &s.file.model;
    let model = crate::model::resolve_scenario(s, assumptions)?;
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
    Ok(model)
}

/// Reads `parallel.optimizer_offload` and, where the states leave the GPU, the host (or the
/// optimizer node, priced as one) that keeps them.
fn resolve_offload(
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
fn resolve_optimizer(
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
fn resolve_compression(
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
fn resolve_param_gather(
    s: &Scenario,
    layout: &Layout,
    assumptions: &mut Vec<String>,
) -> Result<ParamGather, ScenarioError> {
    let stated = s.file.parallel.param_gather;
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
            super::step::HOST_LOOP_PER_RANK_S * 1e6,
            super::step::MAX_REUSE_DISTANCE
        ),
    });
    Ok(gather)
}

/// Reads `parallel.grad_dtype`: fp32 (the default, recorded) or the model's 16-bit format; the
/// bytes per parameter of the gradients.
fn resolve_grad_dtype(
    s: &Scenario,
    model: Dtype,
    assumptions: &mut Vec<String>,
) -> Result<f64, ScenarioError> {
    match s.file.parallel.grad_dtype {
        None => {
            assumptions.push(
                "gradients kept and reduced across data-parallel ranks in fp32 (Megatron-LM's default)"
                    .into(),
            );
            Ok(super::step::GRAD_BYTES)
        }
        Some(Dtype::Fp32) => Ok(super::step::GRAD_BYTES),
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

/// Reads `[compression.activations]`: used by adaptive recomputation only (noted otherwise);
/// compressed once and decompressed once, so `per_hop` and `error_feedback` are refused.
fn resolve_activation_compression(
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
fn resolve_memory_cap(
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
fn resolve_local_sgd(
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
