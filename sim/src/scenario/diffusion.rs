//! `[diffusion]`: the video a diffusion scenario generates, and how.

use crate::workload::diffusion::policy::VideoScheduler;
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffusionSection {
    /// Pixels.
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub frames: Option<u32>,
    /// Denoising steps.
    pub steps: Option<u32>,
    /// Classifier-free guidance: a conditional and an unconditional branch every step.
    pub cfg: Option<bool>,
    /// Decode the latent on every GPU of the video at once, split into tiles (xDiT's parallel
    /// VAE), instead of on one GPU.
    pub vae_parallel: Option<bool>,
    /// Where the pipeline keeps the models it is not running: "none", "model", "encoders" or
    /// "sequential" (default: the model's reference pipeline's).
    pub offload: Option<crate::workload::diffusion::policy::Offload>,
    /// PipeFusion: leading steps run synchronously, without stale activations (default 1).
    pub warmup_steps: Option<u32>,
    /// Serving (with `[workload]`): the videos requests ask for, each drawn with its share.
    pub videos: Option<Vec<VideoShape>>,
    /// Serving: which waiting request a free group takes.
    pub scheduler: Option<VideoScheduler>,
}

/// One kind of video in a served mix.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoShape {
    pub width: u32,
    pub height: u32,
    pub frames: u32,
    /// Relative frequency among the mix (default 1).
    pub share: Option<f64>,
}
