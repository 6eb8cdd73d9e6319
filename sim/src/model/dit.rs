//! Video diffusion transformers (DiT): the denoiser's blocks, the latent the VAE makes of a
//! video, and the text encoder and VAE decoder priced as stages of their own.
//!
//! A video of `frames` x `height` x `width` pixels becomes a latent of
//! `(frames - 1) / temporal + 1` x `height / spatial` x `width / spatial` (a causal VAE keeps the
//! first frame apart), cut into patches of `patch` (t, h, w): one token each. Blocks are
//! dual-stream (MM-DiT: video and text tokens with weights of their own, attending jointly),
//! single-stream (video and text tokens concatenated through one set of weights) or
//! cross-attention (self-attention over the video tokens, then cross-attention to the text);
//! factorised attention (`factorised_attention`) attends within every frame, then along every
//! position. Queries and keys are normalised per head (`qk_norm`) and the video tokens' rotated
//! (`rope`) in separate passes, as the reference code has them: [`QkNorm`] and [`Rope`] count the
//! bytes each pass moves.
//! Units: counts, bytes, FLOPs. Ignored: timestep and modulation embeddings (a few small GEMMs a
//! step) and the scheduler's own arithmetic. Which model uses which: docs/MODELS.md

/// The VAE's compression and its decoder's convolutions.
#[derive(Clone, Debug, PartialEq)]
pub struct Vae {
    /// Frames per latent frame (after the first).
    pub temporal: u32,
    /// Pixels per latent pixel, along height and along width.
    pub spatial: u32,
    pub latent_channels: u32,
    /// Decoder channels from the full-resolution level down (e.g. [128, 256, 512, 512]); each
    /// level below the first halves height and width.
    pub decoder_channels: &'static [u32],
    /// The levels (full resolution first) that the decoder reaches by an up-step doubling the
    /// frames: a level sees the output's frames halved once for every such level above it (the
    /// first included). Empty for a 2-D decoder, which runs on every frame.
    pub time_doubling_levels: &'static [u32],
    /// The VAE encodes the video in chunks: (frames a chunk, latent frames it becomes), instead
    /// of keeping the first frame apart and compressing the rest `temporal` times.
    pub chunks: Option<(u32, u32)>,
    /// With chunks: frames past the last whole chunk are encoded too, padded to a multiple of
    /// `temporal` (Open-Sora 1.2's `get_latent_size`); false: they are dropped (Step-Video).
    pub chunk_remainder: bool,
    /// Residual blocks per level in the decoder (two convolutions each).
    pub blocks_per_level: u32,
    /// 3-D convolutions (3 x 3 x 3); false: 2-D convolutions per frame (3 x 3).
    pub conv3d: bool,
    /// How the model's own pipeline decodes in overlapping tiles by default (None: whole).
    pub tiling: Option<VaeTiling>,
    /// Pixels per position of the decoder's finest level, along height and width: 1, or 2 where
    /// the decoder ends in a 2 x 2 unpatchify of 12 channels (Wan2.2's VAE).
    pub unpatchify: u32,
    pub params: u64,
}

/// Tiled decoding: the latent cut into overlapping tiles, each decoded alone and the overlaps
/// blended, so the overlapping latent is decoded more than once. Sizes in latent pixels and
/// latent frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VaeTiling {
    /// Tile height and width, and the step between tile starts.
    pub size: u32,
    pub stride: u32,
    /// Latent frames a tile takes after its first (a tile is `frames + 1` long), and the step
    /// between tile starts; 0: no temporal tiling.
    pub frames: u32,
    pub frame_stride: u32,
}

/// The text encoder(s), run once per video (twice with classifier-free guidance).
#[derive(Clone, Debug, PartialEq)]
pub struct TextEncoder {
    pub name: &'static str,
    pub params: u64,
    /// Tokens it encodes.
    pub tokens: u32,
}

/// How a model normalises each head's queries and keys before attention, as its reference code
/// runs it. Bytes are per element of the queries (and again of the keys), 16-bit activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QkNorm {
    None,
    /// One kernel that reads and writes the 16-bit tensor, 4 bytes: `F.layer_norm` over each head
    /// (diffusers' CogVideoX and ConsisID attention), or Liger's fused RMS norm (Open-Sora 2.0).
    Fused,
    /// RMS normalisation written out in PyTorch with an fp32 upcast (HunyuanVideo's `RMSNorm`,
    /// Wan's `WanRMSNorm`, Open-Sora's `LlamaRMSNorm`, Step-Video's `RMSNorm`): `x.float()` (2
    /// read, 4 written), `pow(2)` (4 + 4), `mean` (4 read), `x * rsqrt(...)` (4 + 4), the cast
    /// back (4 + 2) and `* weight` (2 + 2): 36 bytes.
    RmsNormEager,
}

impl QkNorm {
    pub fn bytes_per_element(self) -> f64 {
        match self {
            QkNorm::None => 0.0,
            QkNorm::Fused => 4.0,
            QkNorm::RmsNormEager => 36.0,
        }
    }
}

/// How a model rotates its video tokens' queries and keys by their position (rotary embedding),
/// as its reference code runs it. Bytes are per element of the queries (and again of the keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rope {
    /// No rotary embedding, or one not counted (see the preset).
    None,
    /// Cosines and sines applied in fp32 with a `rotate_half` (HunyuanVideo's
    /// `apply_rotary_emb`): `x.float()` twice (2 + 4 each), the negated half (4), the `stack`
    /// (4 + 4), `* cos` (4 + 4), `* sin` (4 + 4), their sum (8 + 4) and the cast back (4 + 2):
    /// 58 bytes. diffusers' `apply_rotary_emb(use_real=True)` with the copy back into the
    /// sequence (CogVideoX, ConsisID) moves 56.
    RealEager,
    /// A complex multiplication in fp64 (Wan's `rope_apply`): `to(float64)` (2 + 8), the product
    /// (8 + 8), the `cat` and the `stack` of the sequences (8 + 8 each), `float()` (8 + 4) and
    /// the attention's cast to 16 bits (4 + 2): 76 bytes.
    ComplexF64,
    /// One fused kernel rotating queries and keys in place (Liger's rope, Open-Sora 2.0): 4 bytes.
    Fused,
}

impl Rope {
    pub fn bytes_per_element(self) -> f64 {
        match self {
            Rope::None => 0.0,
            Rope::RealEager => 58.0,
            Rope::ComplexF64 => 76.0,
            Rope::Fused => 4.0,
        }
    }
}

/// A video diffusion transformer.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoDit {
    pub name: &'static str,
    pub hidden: u32,
    pub heads: u32,
    pub head_dim: u32,
    pub dual_stream_blocks: u32,
    pub single_stream_blocks: u32,
    pub cross_attention_blocks: u32,
    /// MLP intermediate width.
    pub ffn: u32,
    /// A gated MLP (three matrices) instead of two.
    pub gated_mlp: bool,
    /// Spatial and temporal attention apart instead of full 3-D attention.
    pub factorised_attention: bool,
    /// Text tokens the blocks see (joint attention or cross-attention keys).
    pub text_tokens: u32,
    /// Width of the text features the blocks receive.
    pub text_dim: u32,
    /// Latent frames, height and width per token.
    pub patch: (u32, u32, u32),
    /// The queries' and keys' normalisation and rotary embedding (self-attention). A factorised
    /// model rotates along time only, in its temporal blocks.
    pub qk_norm: QkNorm,
    pub rope: Rope,
    /// Branches a guided step runs as one batch: 2 (conditional and unconditional), or 3 where
    /// the sampler guides by text and by image at once (Open-Sora 2.0).
    pub guided_branches: u32,
    /// The pipeline passes a per-frame conditioning mask even for text to video (Open-Sora 1.2's
    /// `x_mask`): each block normalises, modulates and gates its stream twice and picks per
    /// frame with `torch.where`, 28 more passes of the stream's 16-bit activations.
    pub frame_mask: bool,
    pub vae: Vae,
    pub text_encoders: &'static [TextEncoder],
    /// The denoiser's parameters as published (one expert's, with several).
    pub params: u64,
    /// Denoisers of this shape taking turns by timestep (Wan2.2-A14B: a high-noise and a
    /// low-noise expert): a step runs one, all are held unless offloaded.
    pub experts: u32,
    /// Where the shapes come from.
    pub source: &'static str,
}

/// A video's size in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Video {
    pub width: u32,
    pub height: u32,
    pub frames: u32,
}

impl VideoDit {
    /// The latent of `v`: frames, height and width (a causal VAE keeps the first frame apart; a
    /// chunked one makes each whole chunk a few latent frames, and the rest as `chunk_remainder`
    /// says; a size that does not divide is padded up).
    pub fn latent(&self, v: Video) -> (u32, u32, u32) {
        let s = self.vae.spatial;
        let frames = match self.vae.chunks {
            Some((chunk, latent)) => {
                let whole = v.frames / chunk * latent;
                match self.vae.chunk_remainder {
                    true => (whole + (v.frames % chunk).div_ceil(self.vae.temporal)).max(1),
                    false => whole.max(latent),
                }
            }
            None => (v.frames.max(1) - 1).div_ceil(self.vae.temporal) + 1,
        };
        (frames, v.height.div_ceil(s), v.width.div_ceil(s))
    }

    /// Tokens of `v` along frames, height and width (patches of the latent, padded up).
    pub fn token_grid(&self, v: Video) -> (u64, u64, u64) {
        let (f, h, w) = self.latent(v);
        let (pt, ph, pw) = self.patch;
        (
            f.div_ceil(pt) as u64,
            h.div_ceil(ph) as u64,
            w.div_ceil(pw) as u64,
        )
    }

    /// Video tokens of `v`.
    pub fn tokens(&self, v: Video) -> u64 {
        let (f, h, w) = self.token_grid(v);
        f * h * w
    }

    /// Whether the single-stream blocks are Flux's, following dual-stream ones (HunyuanVideo,
    /// Open-Sora 2.0): attention and MLP side by side from one input projection, their outputs
    /// concatenated into one output projection. CogVideoX's expert blocks run them in turn.
    pub fn flux_single_blocks(&self) -> bool {
        self.dual_stream_blocks > 0 && self.single_stream_blocks > 0
    }

    pub fn blocks(&self) -> u32 {
        self.dual_stream_blocks + self.single_stream_blocks + self.cross_attention_blocks
    }

    /// Branches a step runs: 1, or `guided_branches` with guidance.
    pub fn branches(&self, guided: bool) -> u64 {
        if guided {
            self.guided_branches as u64
        } else {
            1
        }
    }

    /// Width of the attention's queries (heads x head_dim).
    pub fn attention_width(&self) -> u64 {
        self.heads as u64 * self.head_dim as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::dit_preset;
    use super::*;

    #[test]
    fn hunyuanvideo_720p_is_118800_tokens() {
        let m = dit_preset::find("hunyuanvideo").expect("a preset");
        let v = Video {
            width: 1280,
            height: 720,
            frames: 129,
        };
        assert_eq!(m.latent(v), (33, 90, 160));
        assert_eq!(m.tokens(v), 33 * 45 * 80);
    }

    /// Open-Sora 1.2 encodes the frames past its last 17-frame micro-batch too, one latent frame
    /// per 4 rounded up; Step-Video drops them.
    #[test]
    fn chunked_vaes_keep_or_drop_the_frames_past_the_last_chunk() {
        let at = |name: &str, frames: u32| {
            let m = dit_preset::find(name).expect("a preset");
            m.latent(Video {
                width: 854,
                height: 480,
                frames,
            })
            .0
        };
        assert_eq!(at("open-sora-1.2", 51), 15);
        assert_eq!(at("open-sora-1.2", 48), 2 * 5 + 4);
        assert_eq!(at("open-sora-1.2", 192), 11 * 5 + 2);
        assert_eq!(at("open-sora-1.2", 16), 4);
        assert_eq!(at("step-video-t2v", 48), 2 * 3);
        assert_eq!(at("step-video-t2v", 204), 36);
    }
}
