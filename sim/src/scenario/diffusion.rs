//! `[diffusion]`: the video a diffusion scenario generates, and how.

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
    /// PipeFusion: leading steps run synchronously, without stale activations (default 1).
    pub warmup_steps: Option<u32>,
}
