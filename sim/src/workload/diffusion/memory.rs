//! What one GPU holds while it makes one video, phase by phase, and what the pipeline's offload
//! moves over PCIe for it.
//!
//! Three phases: the text encoders encode, the transformer denoises, the VAE decodes. In each the
//! GPU holds the models that are resident then and the phase's activations: the denoising's (a
//! block's widest tensors on this GPU's tokens, the Ulysses buffers, with PipeFusion the stale
//! keys and values of its blocks for the whole sequence) or the VAE decoder's (three tensors of
//! its widest level, decoded in tiles of at most 256 x 256 pixels and all frames). The peak is
//! the largest phase. Which models are resident follows the offload ([`Offload`]):
//! - none: the transformer's share (over tp x pipefusion GPUs; every expert's), the text encoders
//!   and the VAE, in every phase;
//! - model: the encoders only while encoding; the transformer (one expert at a time, each swapped
//!   in once) only while denoising; the VAE throughout. Each video moves them to the GPU and back;
//! - encoders: the transformer throughout; the encoders and the VAE streamed from host memory a
//!   layer at a time (their resident share neglected), each moved once a video;
//! - sequential: every model streamed; the transformer once a denoising step.
//!
//! Bytes: weights in the activation format; the encoders' activations are not counted. Ignored:
//! the allocator's fragmentation and the framework's workspace, pageable (unpinned) host memory.

use super::layout::Layout;
use super::policy::Offload;
use super::vae;
use crate::hw::Dtype;
use crate::model::dit::{Video, VideoDit};

/// Tile edge of the VAE decoder, pixels.
const VAE_TILE: u64 = 256;

/// What a GPU holds for one video, bytes, and what crosses its PCIe link.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    pub offload: Offload,
    /// Its share of the transformer's weights.
    pub weights: f64,
    /// The text encoders' weights, and the VAE's.
    pub encoders: f64,
    pub vae: f64,
    /// Denoising activations, with PipeFusion's stale keys and values.
    pub denoise_act: f64,
    /// The VAE decoder's activations.
    pub vae_act: f64,
    /// The phases' footprints: encoding, denoising, decoding.
    pub phases: [f64; 3],
    pub peak: f64,
    pub fits: bool,
    /// Weight bytes moved between host and GPU before encoding, between encoding and denoising,
    /// for the denoising (streamed) and before decoding.
    pub moved: Moves,
}

/// Weight bytes a video moves between host memory and the GPU, by where they fall.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moves {
    pub before_encode: f64,
    pub before_denoise: f64,
    pub during_denoise: f64,
    pub before_decode: f64,
}

impl Moves {
    pub fn total(&self) -> f64 {
        self.before_encode + self.before_denoise + self.during_denoise + self.before_decode
    }
}

/// What sizes a video's memory: the model, how its GPUs split it, and the offload, on a GPU of
/// `capacity` bytes.
pub struct Sizing<'a> {
    pub model: &'a VideoDit,
    pub layout: Layout,
    pub act: Dtype,
    pub guidance: bool,
    pub vae_parallel: bool,
    pub steps: u32,
    pub offload: Offload,
    pub capacity: u64,
}

impl Sizing<'_> {
    pub fn memory(&self, video: Video) -> Memory {
        let (model, layout, act) = (self.model, self.layout, self.act);
        // One expert's share, and every expert's (what a run that keeps them all holds).
        let expert = model.params as f64 * act.bytes() / (layout.tp * layout.pipefusion) as f64;
        let weights = expert * model.experts.max(1) as f64;
        let encoders = model
            .text_encoders
            .iter()
            .map(|e| e.params as f64)
            .sum::<f64>()
            * act.bytes();
        let vae = model.vae.params as f64 * act.bytes();
        let denoise_act = self.denoise_activations(video);
        let vae_act = self.vae_activations(video);
        let (phases, moved) = match self.offload {
            Offload::None => {
                let all = weights + encoders + vae;
                ([all, all + denoise_act, all + vae_act], Moves::default())
            }
            // One expert on the GPU at a time: each later one swapped in once (and the one
            // before it out) when the steps reach it.
            Offload::Model => (
                [encoders + vae, expert + vae + denoise_act, vae + vae_act],
                Moves {
                    before_encode: encoders,
                    before_denoise: encoders + expert,
                    during_denoise: 2.0 * (weights - expert),
                    before_decode: expert,
                },
            ),
            Offload::Encoders => (
                [weights, weights + denoise_act, weights + vae_act],
                Moves {
                    before_encode: encoders,
                    before_decode: vae,
                    ..Moves::default()
                },
            ),
            Offload::Sequential => (
                [0.0, denoise_act, vae_act],
                Moves {
                    before_encode: encoders,
                    during_denoise: expert * self.steps as f64,
                    before_decode: vae,
                    ..Moves::default()
                },
            ),
        };
        let peak = phases.iter().copied().fold(0.0, f64::max);
        Memory {
            offload: self.offload,
            weights,
            encoders,
            vae,
            denoise_act,
            vae_act,
            phases,
            peak,
            fits: peak <= self.capacity as f64,
            moved,
        }
    }

    /// The denoising's activations and, with PipeFusion, its stale keys and values.
    fn denoise_activations(&self, video: Video) -> f64 {
        let (model, l, act) = (self.model, self.layout, self.act);
        let branches = self.model.branches(self.guidance);
        let batch = l.branches_per_gpu(branches);
        let joint = if model.dual_stream_blocks + model.single_stream_blocks > 0 {
            model.text_tokens as u64
        } else {
            0
        };
        let tokens = model.tokens(video) + joint;
        let local = tokens.div_ceil((l.sp() * l.latent) as u64);
        let a = model.attention_width();
        let mlp = local
            * (model.ffn as u64 * if model.gated_mlp { 3 } else { 2 } / l.tp as u64
                + 2 * model.hidden as u64);
        let attention =
            tokens.div_ceil((l.ring * l.latent) as u64) * 4 * a / (l.tp * l.ulysses) as u64;
        // A Flux-style single block holds its fused input projection (queries, keys, values and
        // the MLP's input), the activation, the attention's output and their concatenation at once.
        let single = if model.flux_single_blocks() {
            local * (5 * a + 3 * model.ffn as u64) / l.tp as u64
        } else {
            0
        };
        let activations = (batch * mlp.max(attention).max(single)) as f64 * act.bytes();
        let stale_kv = if l.pipefusion > 1 {
            let stage_blocks = model.blocks().div_ceil(l.pipefusion) as u64;
            (stage_blocks * 2 * batch * tokens.div_ceil(l.ring as u64) * a
                / (l.tp * l.ulysses) as u64) as f64
                * act.bytes()
        } else {
            0.0
        };
        activations + stale_kv
    }

    /// The VAE decoder's activations: three tensors of its widest level, in tiles.
    fn vae_activations(&self, video: Video) -> f64 {
        let share = if self.vae_parallel {
            self.layout.world() as u64
        } else {
            1
        };
        vae::levels(self.model, video)
            .iter()
            .map(|&(c, voxels, _)| {
                let frames_pixels = voxels.div_ceil(share);
                let tile = frames_pixels.min(video.frames as u64 * VAE_TILE * VAE_TILE);
                3.0 * (tile * c) as f64 * self.act.bytes()
            })
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dit_preset;

    fn sizing(offload: Offload) -> Memory {
        let model = dit_preset::find("wan2.1-14b").unwrap();
        Sizing {
            model: &model,
            layout: Layout {
                tp: 1,
                ulysses: 1,
                ring: 1,
                pipefusion: 1,
                patches: 1,
                cfg: 1,
                dsp: 1,
                latent: 1,
                latent_overlap: 0,
            },
            act: Dtype::Bf16,
            guidance: true,
            vae_parallel: false,
            steps: 50,
            offload,
            capacity: 48 << 30,
        }
        .memory(Video {
            width: 1280,
            height: 720,
            frames: 81,
        })
    }

    #[test]
    fn offload_lowers_the_peak_and_moves_bytes() {
        let none = sizing(Offload::None);
        let model = sizing(Offload::Model);
        let encoders = sizing(Offload::Encoders);
        let sequential = sizing(Offload::Sequential);
        assert_eq!(none.moved.total(), 0.0);
        assert!(model.peak < none.peak && encoders.peak < none.peak);
        assert!(sequential.peak < model.peak && sequential.peak < encoders.peak);
        // Without offload the peak is every weight and the larger activations.
        let all = none.weights + none.encoders + none.vae;
        assert_eq!(none.peak, all + none.denoise_act.max(none.vae_act));
        // Wan's offload: the encoders twice and the transformer twice a video.
        assert_eq!(model.moved.total(), 2.0 * (model.encoders + model.weights));
        // Sequential offload streams the transformer every step.
        assert_eq!(sequential.moved.during_denoise, 50.0 * sequential.weights);
    }
}
