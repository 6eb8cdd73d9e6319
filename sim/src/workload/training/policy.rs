//! Training's policies: how a step is scheduled, what it recomputes, gathers, offloads and
//! optimizes, how context parallelism and packing work, how elementwise operations run. The
//! workload (`workload::training`) decides with them; the scenario file names them
//! (`[parallel]`, `[sequences] packing`, `[model] elementwise`), deserialized here by serde.

use serde::Deserialize;

/// Which GPUs a step simulates (`sim.ranks`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ranks {
    /// One GPU per pipeline stage, standing for the identical ranks of its stage.
    #[default]
    Stage,
    /// Every GPU its own timeline; collectives wait for their group's last member.
    All,
}

impl Ranks {
    pub fn name(self) -> &'static str {
        match self {
            Ranks::Stage => "stage",
            Ranks::All => "all",
        }
    }
}

/// How an fp8 run puts its GEMMs' operands into fp8 (`parallel.fp8_casts`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fp8Casts {
    /// Every GEMM call casts its activation and its weight (torchao's float8 with dynamic
    /// scaling).
    PerCall,
    /// Transformer Engine: the fp8 copy of each weight (and its transpose) is made on a step's
    /// first micro-batch and reused by the others (`is_first_microbatch`); activations are cast
    /// at every call.
    TransformerEngine,
}

/// ZeRO-3: how a layer's sharded parameters come together before it runs
/// (`parallel.param_gather`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParamGather {
    /// The layer's parameters in one all-gather, issued while the layer before computes (FSDP's
    /// one-layer prefetch; DeepSpeed's prefetching stage 3).
    Prefetch,
    /// Each weight matrix in an all-gather of its own, issued when the layer is about to run
    /// with the GPU drained, into a list of one tensor per rank that the collective library then
    /// fills with one copy per rank; each layer's gradients reduce-scattered the same way from
    /// a list, the compute stream waiting for them. DeepSpeed's first ZeRO-3 (v0.3, 2021:
    /// `torch.cuda.synchronize()` before each parameter's `torch.distributed.all_gather`).
    OnDemand,
}

impl ParamGather {
    pub fn name(self) -> &'static str {
        match self {
            ParamGather::Prefetch => "prefetch",
            ParamGather::OnDemand => "on-demand",
        }
    }
}

/// Where the optimizer states live and the step runs (`parallel.optimizer_offload`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerOffload {
    Gpu,
    Host,
    Network,
}

impl OptimizerOffload {
    pub fn name(self) -> &'static str {
        match self {
            OptimizerOffload::Gpu => "gpu",
            OptimizerOffload::Host => "host",
            OptimizerOffload::Network => "network",
        }
    }
}

/// The optimizer whose states the memory model counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    /// Mixed-precision Adam: fp32 master weights and two fp32 moments, 12 bytes a parameter.
    Adam,
    /// Adam with 8-bit moments (bitsandbytes, Dettmers et al. 2022): fp32 master weights and two
    /// 8-bit moments with their block-wise scales, about 6 bytes a parameter.
    #[serde(rename = "adam-8bit")]
    Adam8bit,
    /// Adafactor (Shazeer and Stern 2018) without momentum (its default): fp32 master weights and,
    /// per weight matrix, the row and column sums of the second moment instead of the full one.
    Adafactor,
    /// GaLore (Zhao et al., ICML 2024): Adam whose moments live in a rank-r projection of each
    /// layer weight matrix's gradient, the projection refreshed by an SVD every few hundred steps.
    Galore,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    Gpipe,
    #[serde(rename = "1f1b")]
    OneFOneB,
    #[serde(rename = "interleaved-1f1b")]
    Interleaved1F1B,
    /// Asynchronous 1F1B without a flush (PipeDream, SpecTrain): every micro-batch is a
    /// mini-batch with its own weight update, and the pipeline never drains between steps.
    #[serde(rename = "async-1f1b")]
    Async1F1B,
}

impl Schedule {
    /// The name a scenario writes.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Gpipe => "gpipe",
            Schedule::OneFOneB => "1f1b",
            Schedule::Interleaved1F1B => "interleaved-1f1b",
            Schedule::Async1F1B => "async-1f1b",
        }
    }
}

/// How context parallelism exchanges keys and values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContextAlgorithm {
    /// Ring attention (Megatron-LM's default): KV blocks pass around the ring, overlapped with
    /// the attention of the block in hand.
    Ring,
    /// All-gather the keys and values before attention, reduce-scatter their gradients (Llama 3).
    AllGather,
}

impl ContextAlgorithm {
    /// Its name in scenarios and reports.
    pub fn name(self) -> &'static str {
        match self {
            ContextAlgorithm::Ring => "ring",
            ContextAlgorithm::AllGather => "all-gather",
        }
    }
}

/// Activation recomputation, as Korthikanti et al. 2022 define it, plus torchtitan's
/// operator-level policy and the adaptive one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recompute {
    None,
    Selective,
    Full,
    /// torchtitan's operator-level selective checkpointing (`selective_ac_option = "op"`): the
    /// outputs of attention and of every matrix multiply but every second one are kept, the rest
    /// of the layer is recomputed in the backward (`workload::training::op_checkpoint`).
    Op,
    /// Per class of saved tensor: keep, recompute or compress (`[compression.activations]`),
    /// chosen to fit `memory_cap` (Adacc-style; `workload::training::activation_plan`).
    Adaptive,
}

impl Recompute {
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
            Recompute::Op => "op",
            Recompute::Adaptive => "adaptive",
        }
    }
}

/// How sequences become micro-batches.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Packing {
    /// Batch-level pipelining at a fixed shape: whole sequences packed first-fit decreasing into
    /// micro-batches of exactly `micro_batch_tokens` (padded).
    Fixed,
    /// The sequence-parallel baseline: whole sequences packed into micro-batches of up to
    /// `micro_batch_tokens`, each split over the context-parallel ranks.
    SequenceParallel,
    /// Elastic pipelining (InfiniPipe): sequences longer than `micro_batch_tokens` split into
    /// chunks (token level), the rest packed into micro-batches of balanced cost (batch level),
    /// each micro-batch's recomputation chosen per stage to fit memory.
    Elastic,
}

impl Packing {
    pub fn name(self) -> &'static str {
        match self {
            Packing::Fixed => "fixed",
            Packing::SequenceParallel => "sequence-parallel",
            Packing::Elastic => "elastic",
        }
    }
}

/// `[model] elementwise`: how a training layer's elementwise operations run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ElementwiseMode {
    Fused,
    Eager,
}
