//! The report of a training run, typed (`report::typed`): what `workload::training` writes and
//! the summary, the planner and validation read. Times in seconds, sizes in bytes, FLOPs as
//! counted (`flops.convention`), rates per second. Sections only some set-ups have, and those
//! other stages add, stay JSON: `contention`, `power`, `energy`, `ranks`, `reliability`,
//! `capacity`, `local_sgd`, `sequences`, `optimizer_offload`, `links`, `uncertainty`, `cost`,
//! and the optimizer's and compression's settings.

use super::typed::{Sim, TypedReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A training run's report: one step.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingReport {
    /// Always `"training"`.
    pub kind: String,
    pub scenario: String,
    pub iteration_time_s: f64,
    pub tokens_per_s: f64,
    /// Model FLOPs a GPU a second, in TFLOP/s.
    pub tflops_per_gpu: f64,
    /// Model FLOPs with the recomputed forwards.
    pub hardware_tflops_per_gpu: f64,
    pub mfu: f64,
    pub hfu: f64,
    pub breakdown_s: Breakdown,
    pub contention: Value,
    pub communication_s: Communication,
    pub memory: Memory,
    pub flops: Flops,
    pub cluster: Cluster,
    pub model: Model,
    pub parallel: Parallel,
    pub fidelity: Fidelity,
    pub assumptions: Vec<String>,
    pub sim: Sim,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reliability: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_sgd: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer_offload: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// Where the step's time went on the critical stage.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    pub compute: f64,
    pub exposed_communication: f64,
    pub pipeline_bubble: f64,
    /// The host optimizer's tail past the GPU's step, when the optimizer is offloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer_offload: Option<f64>,
}

/// Communication time of each parallelism on the critical stage, overlapped or not.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Communication {
    pub data_parallel: f64,
    pub tensor_parallel: f64,
    pub pipeline: f64,
    pub expert_parallel: f64,
    pub context_parallel: f64,
}

/// Memory a GPU of the fullest stage holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub peak_bytes_per_gpu: u64,
    pub capacity_bytes: u64,
    pub fits: bool,
    pub breakdown_bytes: MemoryParts,
    /// The pipeline stage whose GPUs hold the most.
    pub stage: u32,
    /// The largest micro-batch that fits (none with `[sequences]`).
    pub largest_micro_batch: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloaded_bytes_per_gpu: Option<u64>,
    /// Adaptive recompute's choice per tensor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_plan: Option<Value>,
}

/// What a GPU's memory holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryParts {
    pub weights: u64,
    pub gradients: u64,
    pub optimizer: u64,
    pub activations: u64,
    pub logits: u64,
    pub buffers: u64,
    pub outer_optimizer: u64,
    pub error_feedback: u64,
}

/// FLOPs of a step, over every GPU.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flops {
    pub model_per_step: f64,
    pub hardware_per_step: f64,
    pub convention: String,
}

/// The cluster trained on.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub gpu: String,
    pub gpus: u32,
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub peak_tflops_per_gpu: f64,
    pub profile: Option<String>,
}

/// The model trained.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub name: String,
    pub params: u64,
    pub active_params: u64,
    pub layers: u32,
    pub hidden: u32,
    pub seq_len: u32,
    /// The GEMMs' format.
    pub dtype: String,
}

/// The layout and the training policies the step ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parallel {
    pub dp: u32,
    pub tp: u32,
    pub pp: u32,
    pub cp: u32,
    pub ep: u32,
    pub cp_algorithm: String,
    pub schedule: String,
    pub virtual_stages: u32,
    pub sequence_parallel: bool,
    pub micro_batch: u32,
    pub global_batch: u32,
    pub accumulation_steps: u32,
    pub recompute: String,
    /// Full recomputation of only the first this many layers of each pipeline chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_layers: Option<u32>,
    pub zero: u8,
    pub optimizer: Value,
    pub compression: Value,
}

/// How the step was priced and what stood for what.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    pub compute: String,
    pub network: String,
    pub topology: String,
    /// `"stage"` or `"all"`.
    pub ranks: String,
    pub symmetry: String,
}

impl TypedReport for TrainingReport {
    const KIND: &'static str = "training";
}
