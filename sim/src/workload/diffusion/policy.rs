//! Diffusion's policies: which waiting video request a free group of GPUs takes (the video queue,
//! `workload::diffusion::queue`, serves by it), and where the pipeline keeps the models it is not
//! running (`workload::diffusion::memory`). The scenario's `[diffusion] scheduler` and `offload`
//! name them.

use serde::Deserialize;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VideoScheduler {
    /// First come, first served.
    Fcfs,
    /// Shortest job first: the waiting video with the least simulated latency.
    Sjf,
}

/// Where the pipeline keeps the models it is not running (`[diffusion] offload`), as the
/// reference pipelines' switches do.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Offload {
    /// Everything on every GPU for the whole video (xDiT; diffusers' `.to("cuda")`).
    None,
    /// The text encoders come to the GPU to encode and leave after; the transformer leaves
    /// before the VAE decodes and comes back for the next video (Wan's `offload_model`).
    Model,
    /// The text encoders and the VAE stay in host memory, streamed to the GPU layer by layer when
    /// they run; the transformer stays on the GPU (HunyuanVideo's `--use-cpu-offload`).
    Encoders,
    /// Every model stays in host memory, streamed layer by layer at every use: the transformer
    /// once a step (diffusers' `enable_sequential_cpu_offload`, CogVideoX's `cli_demo.py`).
    Sequential,
}

impl Offload {
    pub fn name(self) -> &'static str {
        match self {
            Offload::None => "none",
            Offload::Model => "model",
            Offload::Encoders => "encoders",
            Offload::Sequential => "sequential",
        }
    }
}

/// The offload a model's reference pipeline runs on `gpus` GPUs, and where that is written: on
/// one GPU the official script's (Wan's `generate.py`, HunyuanVideo's README command, CogVideoX's
/// `cli_demo.py`); on several, none (Wan shards with FSDP instead, HunyuanVideo refuses offload
/// with sequence parallelism, CogVideoX's README says to turn it off; xDiT keeps every model
/// resident). Models without a table entry keep everything resident. Notes:
/// validation/video-pipelines.md.
pub fn reference_offload(model: &str, gpus: u32) -> (Offload, &'static str) {
    const SEVERAL: &str = "the reference pipelines keep every model resident on several GPUs";
    if gpus > 1 {
        return (Offload::None, SEVERAL);
    }
    let table: [(&str, Offload, &str); 4] = [
        (
            "wan2.1",
            Offload::Model,
            "Wan2.1 generate.py: offload_model defaults to True on one GPU",
        ),
        (
            "wan2.2",
            Offload::Model,
            "Wan2.2 generate.py: offload_model defaults to True on one GPU",
        ),
        (
            "hunyuanvideo",
            Offload::Encoders,
            "HunyuanVideo's README runs sample_video.py with --use-cpu-offload (the transformer \
             stays on the GPU)",
        ),
        (
            "cogvideox",
            Offload::Sequential,
            "CogVideoX inference/cli_demo.py calls enable_sequential_cpu_offload()",
        ),
    ];
    table
        .iter()
        .find(|(prefix, _, _)| model.starts_with(prefix))
        .map_or(
            (Offload::None, "no reference offload known for this model"),
            |&(_, o, why)| (o, why),
        )
}
