//! The report of a diffusion run, typed (`report::typed`): what `workload::diffusion` writes and
//! the summary and the planner read. Times in seconds, sizes in bytes, FLOPs as counted. Keys
//! other stages add (`uncertainty`, `cost`) stay JSON; every other key is a field.

use super::percentiles::Percentiles;
use super::typed::{Sim, TypedReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A diffusion run's report: one video, or a queue of them (`serving`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffusionReport {
    /// Always `"diffusion"`.
    pub kind: String,
    pub scenario: String,
    /// One video's generation; with a queue, the mean from a request's arrival to its video.
    pub latency_s: f64,
    pub denoise_step_s: f64,
    /// Every group of the cluster's GPUs making videos at this pace.
    pub videos_per_hour: f64,
    pub tflops_per_gpu: f64,
    pub breakdown_s: Breakdown,
    pub communication_bytes_per_gpu: f64,
    pub memory: Memory,
    pub video: VideoShape,
    pub parallel: Parallel,
    pub flops: Flops,
    pub model: Model,
    pub sim: Sim,
    pub cluster: Cluster,
    pub fidelity: Fidelity,
    pub assumptions: Vec<String>,
    /// The queue of requests, when the scenario has a `[workload]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<Queue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// Where one video's time went on the simulated GPU.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    pub text_encode: f64,
    /// From the first denoising operation's start to the last one's end.
    pub denoise: f64,
    pub denoise_compute: f64,
    pub communication: f64,
    pub exposed_communication: f64,
    pub pipeline_wait: f64,
    pub vae_decode: f64,
    pub offload: f64,
}

/// Memory per GPU, its peak and its phases.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub peak_bytes_per_gpu: f64,
    pub weights_bytes_per_gpu: f64,
    pub encoder_and_vae_weights_bytes_per_gpu: f64,
    pub denoise_activation_bytes_per_gpu: f64,
    pub vae_activation_bytes_per_gpu: f64,
    pub capacity_bytes: u64,
    pub fits: bool,
    pub offload: String,
    pub phase_bytes_per_gpu: Phases,
    pub offload_bytes_per_video: f64,
}

/// Memory per GPU in each phase of a video.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phases {
    pub encode: f64,
    pub denoise: f64,
    pub decode: f64,
}

/// The video simulated.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoShape {
    pub width: u32,
    pub height: u32,
    pub frames: u32,
    pub steps: u32,
    pub guidance: bool,
    /// Model evaluations a step (1 unguided, 2 with classifier-free guidance, or more).
    pub branches: u64,
    /// Latent frames, height and width.
    pub latent: [u32; 3],
    pub tokens: u64,
    pub text_tokens: u32,
}

/// How a video's GPUs divide its work.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parallel {
    pub gpus_per_video: u32,
    pub tp: u32,
    pub ulysses: u32,
    pub ring: u32,
    pub pipefusion: u32,
    pub pipefusion_patches: u32,
    pub cfg: u32,
    pub dsp: u32,
    pub latent: u32,
    pub vae_parallel: bool,
    pub videos_at_once: u32,
}

/// FLOPs of every GPU of a video together.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flops {
    pub per_step: f64,
    pub per_video: f64,
}

/// The diffusion transformer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub name: String,
    pub params: u64,
    pub experts: u32,
    pub blocks: u32,
    pub hidden: u32,
    pub heads: u32,
    pub dtype: String,
}

/// The cluster a run names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub gpu: String,
    pub gpus: u32,
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub profile: Option<String>,
}

/// How the run was priced and what stood for what.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fidelity {
    pub compute: String,
    pub network: String,
    pub symmetry: String,
}

/// A queue of video requests served by groups of GPUs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Queue {
    pub requests: u64,
    pub completed: u64,
    pub groups: u32,
    /// `"fcfs"` or `"sjf"`.
    pub scheduler: String,
    pub videos_per_hour: f64,
    /// From arrival to video.
    pub latency_s: Percentiles,
    /// From arrival to the start of generation.
    pub queueing_s: Percentiles,
    /// Each size of the mix.
    pub videos: Vec<QueuedVideo>,
    pub events: u64,
}

/// One size of a queue's mix: its share of the requests, its latency, how many were drawn.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuedVideo {
    pub width: u32,
    pub height: u32,
    pub frames: u32,
    pub share: f64,
    pub latency_s: f64,
    pub requests: u64,
}

impl TypedReport for DiffusionReport {
    const KIND: &'static str = "diffusion";
}
