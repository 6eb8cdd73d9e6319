//! A training step's parallel layout with every value explicit, and the rules that make it valid
//! for a model on a cluster: the degrees divide the GPUs, the tensor-parallel degree divides the
//! model's heads and widths, the batch divides into micro-batches, the pipeline schedule suits the
//! chunks. One set of rules serves the scenario's set-up (which turns a refusal into an error at
//! the key) and the planner (which counts refusals by reason).

use super::policy::{Recompute, Schedule};
use crate::model::Transformer;

/// The parallel layout of a training step.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub tp: u32,
    pub pp: u32,
    pub cp: u32,
    pub dp: u32,
    pub ep: u32,
    pub micro_batch: u32,
    pub global_batch: u32,
    pub schedule: Schedule,
    pub virtual_stages: u32,
    pub sequence_parallel: bool,
    pub recompute: Recompute,
    pub zero: u8,
}

/// The most micro-batches a replica runs in a step that the simulator builds: each is its own
/// part of the step's graph (about 200 KB of it for a 32-layer model).
pub const MAX_ACCUMULATION: u32 = 16_384;

/// The most layer passes a replica runs in a step (micro-batches x layers): each is a few dozen
/// operations of the step's graph, and a step stays within seconds to simulate.
pub const MAX_LAYER_PASSES: u64 = 1 << 18;

/// Why a layout is invalid: the scenario key to blame, the message, and what would be valid.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// The `[parallel]` key the error points at, e.g. "parallel.tp".
    pub key: &'static str,
    /// A short reason shared by every refusal of its kind, for counting ("tp does not divide the
    /// model's heads").
    pub reason: &'static str,
    pub message: String,
    pub help: Option<String>,
}

impl Refusal {
    fn new(key: &'static str, reason: &'static str, message: String) -> Self {
        Refusal {
            key,
            reason,
            message,
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl Layout {
    /// Micro-batches each data-parallel replica runs per step.
    pub fn accumulation(&self) -> u32 {
        self.global_batch / (self.micro_batch * self.dp)
    }

    /// Checks the degrees against the cluster's `gpus` and the model's shape, in the order a
    /// reader would fix them (tensor, pipeline, context, data, expert, batch).
    pub fn check(&self, model: &Transformer, gpus: u32) -> Result<(), Refusal> {
        self.check_recompute(model)?;
        self.check_gpu_split(model, gpus)?;
        self.check_pipeline(model)?;
        self.check_tensor_widths(model)?;
        self.check_data(gpus)?;
        self.check_experts(model)?;
        self.check_batch()?;
        self.check_passes(model)?;
        self.check_zero()
    }

    /// Adaptive recomputation: dense layers with attention, without tensor or context
    /// parallelism.
    fn check_recompute(&self, model: &Transformer) -> Result<(), Refusal> {
        let Layout { tp, cp, .. } = *self;
        if self.recompute == Recompute::Adaptive
            && (tp > 1 || cp > 1 || model.is_moe() || model.attention_layers() < model.layers)
        {
            return Err(Refusal::new(
                "parallel.recompute",
                "adaptive recomputation needs dense layers without tp or cp",
                "adaptive recomputation is modelled for dense layers with attention, without tensor or context parallelism (recomputing behind their collectives is not priced)".into(),
            )
            .help("use recompute = \"full\" or \"selective\", or tp = 1 and cp = 1"));
        }
        Ok(())
    }

    /// The tensor, pipeline and context degrees divide the GPUs; the sequence splits into
    /// 2 x cp chunks.
    fn check_gpu_split(&self, model: &Transformer, gpus: u32) -> Result<(), Refusal> {
        let Layout { tp, pp, cp, .. } = *self;
        // Products in 64 bits: degrees are any u32 a file writes.
        let all = u64::from(gpus);
        if !gpus.is_multiple_of(tp) {
            return Err(Refusal::new(
                "parallel.tp",
                "tp does not divide the GPUs",
                format!("tp = {tp} does not divide the cluster's {gpus} GPUs"),
            ));
        }
        if !all.is_multiple_of(u64::from(tp) * u64::from(pp)) {
            return Err(Refusal::new(
                "parallel.pp",
                "tp x pp does not divide the GPUs",
                format!("tp x pp = {tp} x {pp} does not divide the cluster's {gpus} GPUs"),
            ));
        }
        if !all.is_multiple_of(u64::from(tp) * u64::from(pp) * u64::from(cp)) {
            return Err(Refusal::new(
                "parallel.cp",
                "tp x pp x cp does not divide the GPUs",
                format!(
                    "tp x pp x cp = {tp} x {pp} x {cp} does not divide the cluster's {gpus} GPUs"
                ),
            ));
        }
        if !u64::from(model.seq_len).is_multiple_of(2 * u64::from(cp)) {
            return Err(Refusal::new(
                "parallel.cp",
                "the sequence does not split into 2 x cp chunks",
                format!(
                    "cp = {cp} needs the sequence of {} tokens to split into 2 x cp = {} equal chunks",
                    model.seq_len,
                    2 * u64::from(cp)
                ),
            )
            .help("context parallelism gives each rank two chunks (one early, one late) so that causal attention is balanced"));
        }
        Ok(())
    }

    /// The pipeline schedule suits the virtual stages, and the chunks are no more than the
    /// layers.
    fn check_pipeline(&self, model: &Transformer) -> Result<(), Refusal> {
        let Layout { pp, .. } = *self;
        let v = self.virtual_stages;
        if self.schedule == Schedule::Interleaved1F1B && v < 2 {
            return Err(Refusal::new(
                "parallel.schedule",
                "the interleaved schedule needs virtual stages",
                "the interleaved schedule needs virtual_stages of 2 or more".into(),
            )
            .help("add virtual_stages = 2 (model chunks per GPU), or use schedule = \"1f1b\""));
        }
        if v > 1 && self.schedule != Schedule::Interleaved1F1B {
            return Err(Refusal::new(
                "parallel.virtual_stages",
                "virtual stages need the interleaved schedule",
                format!("virtual_stages = {v} needs schedule = \"interleaved-1f1b\""),
            )
            .help("set schedule = \"interleaved-1f1b\", or virtual_stages = 1"));
        }
        let chunks = pp * v;
        if chunks > model.layers {
            return Err(Refusal::new(
                if v > 1 {
                    "parallel.virtual_stages"
                } else {
                    "parallel.pp"
                },
                "more pipeline chunks than layers",
                format!(
                    "pp x virtual_stages = {chunks} chunks is more than the model's {} layers",
                    model.layers
                ),
            ));
        }
        Ok(())
    }

    /// The tensor-parallel degree divides the model's heads and widths.
    fn check_tensor_widths(&self, model: &Transformer) -> Result<(), Refusal> {
        let Layout { tp, .. } = *self;
        for (what, count) in [
            ("heads", model.heads),
            ("kv_heads", model.kv_heads),
            ("ffn", model.ffn),
            ("vocab", model.vocab),
        ] {
            if !count.is_multiple_of(tp) {
                return Err(Refusal::new(
                    "parallel.tp",
                    "tp does not divide the model's heads or widths",
                    format!("tp = {tp} does not divide the model's {what} = {count}"),
                )
                .help("Megatron-LM splits heads, KV heads, the MLP width and the vocabulary evenly over tensor-parallel ranks"));
            }
        }
        Ok(())
    }

    /// The data-parallel degree makes up the GPU count with the others.
    fn check_data(&self, gpus: u32) -> Result<(), Refusal> {
        let Layout { tp, pp, cp, dp, .. } = *self;
        if [dp, tp, pp, cp].map(u64::from).iter().product::<u64>() != u64::from(gpus) {
            return Err(Refusal::new(
                "parallel.dp",
                "dp x tp x pp x cp is not the GPU count",
                format!("dp = {dp} with tp = {tp}, pp = {pp} and cp = {cp} does not use the cluster's {gpus} GPUs"),
            )
            .help(format!("dp x tp x pp x cp must be nodes x gpus_per_node = {gpus}: dp = {}; or remove dp to derive it", gpus / (tp * pp * cp))));
        }
        Ok(())
    }

    /// Expert parallelism: a mixture-of-experts model whose experts and data-parallel
    /// replicas it divides, and expert widths the tensor-parallel degree divides.
    fn check_experts(&self, model: &Transformer) -> Result<(), Refusal> {
        let Layout { tp, dp, ep, .. } = *self;
        match &model.moe {
            None if ep > 1 => {
                return Err(Refusal::new(
                    "parallel.ep",
                    "expert parallelism on a dense model",
                    format!(
                        "ep = {ep} needs a mixture-of-experts model; {} is dense",
                        model.name
                    ),
                )
                .help(
                    "remove ep, or choose a model with experts (e.g. preset = \"mixtral-8x7b\")",
                ));
            }
            Some(moe) if !moe.experts.is_multiple_of(ep) => {
                return Err(Refusal::new(
                    "parallel.ep",
                    "ep does not divide the experts",
                    format!(
                        "ep = {ep} does not divide the model's {} experts",
                        moe.experts
                    ),
                ));
            }
            _ => {}
        }
        if !dp.is_multiple_of(ep) {
            return Err(Refusal::new(
                "parallel.ep",
                "ep does not divide dp",
                format!("ep = {ep} does not divide dp = {dp}"),
            )
            .help("expert-parallel groups are carved out of the data-parallel replicas (as Megatron-LM does by default)"));
        }
        if let Some(moe) = &model.moe
            && !moe.expert_ffn.is_multiple_of(tp)
        {
            return Err(Refusal::new(
                "parallel.tp",
                "tp does not divide the model's heads or widths",
                format!(
                    "tp = {tp} does not divide the experts' width expert_ffn = {}",
                    moe.expert_ffn
                ),
            ));
        }
        Ok(())
    }

    /// Not more layer passes a step than are simulated.
    fn check_passes(&self, model: &Transformer) -> Result<(), Refusal> {
        let passes = self.accumulation() as u64 * model.layers as u64;
        if passes <= MAX_LAYER_PASSES {
            return Ok(());
        }
        Err(Refusal::new(
            "parallel.global_batch",
            "too many layer passes per replica to simulate",
            format!(
                "{} micro-batches per replica through {} layers are {passes} layer passes a step; \
                 each is simulated, at most {MAX_LAYER_PASSES}",
                self.accumulation(),
                model.layers
            ),
        )
        .help("raise micro_batch (or dp), or lower global_batch"))
    }

    /// The global batch divides into micro-batches, not too many to simulate, and into a
    /// multiple of pp with the interleaved schedule.
    fn check_batch(&self) -> Result<(), Refusal> {
        let Layout { pp, dp, .. } = *self;
        let (mb, global) = (self.micro_batch, self.global_batch);
        if u64::from(mb) * u64::from(dp) > u64::from(global) {
            return Err(Refusal::new(
                "parallel.micro_batch",
                "a micro-batch per replica is more than the global batch",
                format!(
                    "micro_batch x dp = {mb} x {dp} is more sequences than global_batch = {global}"
                ),
            )
            .help("lower micro_batch, or raise global_batch to a multiple of micro_batch x dp"));
        }
        if !global.is_multiple_of(mb * dp) {
            return Err(Refusal::new(
                "parallel.global_batch",
                "the global batch is not a multiple of micro_batch x dp",
                format!(
                    "global_batch = {global} is not a multiple of micro_batch x dp = {mb} x {dp} = {}",
                    mb * dp
                ),
            )
            .help(format!(
                "use a multiple of {}, e.g. {}",
                mb * dp,
                mb * dp * (global / (mb * dp)).max(1)
            )));
        }
        let accumulation = self.accumulation();
        if accumulation > MAX_ACCUMULATION {
            return Err(Refusal::new(
                "parallel.global_batch",
                "too many micro-batches per replica to simulate",
                format!(
                    "global_batch = {global} over micro_batch x dp = {} is {accumulation} \
                     micro-batches per replica a step; each is simulated, at most \
                     {MAX_ACCUMULATION}",
                    mb * dp
                ),
            )
            .help("raise micro_batch (or dp), or lower global_batch"));
        }
        if self.schedule == Schedule::Interleaved1F1B && pp > 1 && !accumulation.is_multiple_of(pp)
        {
            return Err(Refusal::new(
                "parallel.global_batch",
                "the interleaved schedule needs a multiple of pp micro-batches",
                format!(
                    "the interleaved schedule needs the {accumulation} micro-batches per replica to be a multiple of pp = {pp}"
                ),
            )
            .help(format!(
                "use a global batch of a multiple of micro_batch x dp x pp = {}",
                u64::from(mb * dp) * u64::from(pp)
            )));
        }
        Ok(())
    }

    /// ZeRO's stage is 0 to 3.
    fn check_zero(&self) -> Result<(), Refusal> {
        if self.zero > 3 {
            return Err(Refusal::new(
                "parallel.zero",
                "no such ZeRO stage",
                format!("ZeRO has stages 0 to 3, not {}", self.zero),
            )
            .help("0 none, 1 optimizer states sharded, 2 gradients too, 3 weights too (FSDP)"));
        }
        Ok(())
    }
}
