//! Video DiT presets: the published shapes of eight video diffusion transformers, their text
//! encoders and their VAE decoders ([`find`] by name or alias, [`all`]). Each preset's `source`
//! names its main file and `// from` comments the rest. Sources:
//! docs/MODELS.md#video-preset-sources
//!
//! Conventions (in full: docs/MODELS.md#video-preset-conventions):
//! - `text_dim` is the width of the text features the blocks receive: every model here projects
//!   its encoder's output to `hidden` first, so `text_dim == hidden` (encoder widths in comments).
//! - `decoder_channels` lists the decoder's levels from full resolution down.
//! - `time_doubling_levels` lists the decoder levels reached by a time-upsampling step.
//! - VAE `params` are the decoder's alone, counted from its code and config.
//! - `params` is the denoiser's published count; the tests derive one from the shapes (attention
//!   `4 h^2`, MLP `2 h ffn` or `3 h ffn`, cross-attention `2 h^2 + 2 h text_dim` more), and each
//!   preset's comment gives the ratio and what the derivation leaves out (mostly adaptive
//!   layer-norm modulation weights).

use super::dit::{QkNorm, Rope, TextEncoder, Vae, VaeTiling, VideoDit};

/// T5 v1.1 XXL encoder (`google/t5-v1_1-xxl`, `DeepFloyd/t5-v1_1-xxl`): d_model 4096, 24 layers, 64
/// heads of 64, gated-GELU FFN 10240, vocabulary 32128: 32128·4096 + 24 × (4·4096² + 3·4096·10240)
/// ≈ 4.762e9.
const T5_XXL_PARAMS: u64 = 4_762_310_656;

/// LLaVA-LLaMA-3-8B's language model: Llama-3-8B, 8.03e9 as published by Meta.
const LLAVA_LLAMA3_8B_PARAMS: u64 = 8_030_000_000;

/// CLIP ViT-L/14 text tower (`openai/clip-vit-large-patch14`): 123.06e6.
const CLIP_L_PARAMS: u64 = 123_060_480;

const HUNYUAN_TEXT: &[TextEncoder] = &[
    TextEncoder {
        name: "llava-llama-3-8b",
        params: LLAVA_LLAMA3_8B_PARAMS,
        // from hyvideo/constants.py: the video prompt template's 95 tokens ("crop_start") precede
        // the 256 prompt tokens; the LLM encodes all 351 and the first 95 are cropped away.
        tokens: 256 + 95,
    },
    TextEncoder {
        name: "clip-vit-large-patch14",
        params: CLIP_L_PARAMS,
        // from hyvideo/config.py (--text-len-2); its pooled output feeds the modulation vector.
        tokens: 77,
    },
];

const COGVIDEOX_TEXT: &[TextEncoder] = &[TextEncoder {
    name: "t5-v1_1-xxl",
    params: T5_XXL_PARAMS,
    // from sat/configs/cogvideox_*.yaml (FrozenT5Embedder max_length).
    tokens: 226,
}];

const WAN_TEXT: &[TextEncoder] = &[TextEncoder {
    name: "umt5-xxl",
    // from wan/modules/t5.py `umt5_xxl` (vocabulary 256384, dim 4096, FFN 10240, 24 encoder layers,
    // per-layer relative position buckets): 256384·4096 + 24 × (4·4096² + 3·4096·10240 + 2·4096 +
    // 32·64) + 4096 ≈ 5.681e9.
    params: 5_680_910_336,
    tokens: 512,
}];

const OPEN_SORA_TEXT: &[TextEncoder] = &[TextEncoder {
    name: "t5-v1_1-xxl",
    params: T5_XXL_PARAMS,
    // from configs/opensora-v1-2/inference/sample.py (model_max_length).
    tokens: 300,
}];

const STEP_VIDEO_TEXT: &[TextEncoder] = &[
    TextEncoder {
        name: "step-llm",
        // from stepvideo-t2v step_llm/config.json: 65536·6144 + 48 × (6144·(6144 + 2·8·128) +
        // 6144² + 3·6144·16896 + 2·6144) ≈ 19.58e9, matching the checkpoint's 39.2 GB in bf16.
        // StepFun publishes no parameter count for it.
        params: 19_579_600_896,
        // from the Step-Video tokenizer wrapper (`max_length=320`).
        tokens: 320,
    },
    TextEncoder {
        name: "hunyuan-clip",
        // from the Hunyuan-DiT CLIP text encoder's BertConfig (24 layers, 1024 wide, FFN 4096,
        // vocabulary 47020, 512 positions, no pooler) ≈ 351e6.
        params: 350_986_240,
        tokens: 77,
    },
];

/// HunyuanVideo's causal 3-D VAE ("884-16c-hy": 4× time, 8× space, 16 channels).
const HUNYUAN_VAE: Vae = Vae {
    temporal: 4,
    spatial: 8,
    latent_channels: 16,
    decoder_channels: &[128, 256, 512, 512],
    // Up blocks 1 and 2 (of 0..=3, coarse first) upsample time: full-resolution levels 0, 1, 2
    // and 3 see 1, 1/2, 1/4 and 1/4 of the frames.
    time_doubling_levels: &[0, 1],
    chunks: None,
    // layers_per_block 2 + 1.
    blocks_per_level: 3,
    conv3d: true,
    // The official pipeline decodes in tiles by default (hyvideo/config.py `vae_tiling` True):
    // `sample_size` 256 px → 32 latent pixels a tile, `tile_overlap_factor` 0.25 → a new tile
    // every 24; `sample_tsize` 64 frames → 16 latent frames (+1) a tile, a new one every 12
    // (hyvideo/vae/autoencoder_kl_causal_3d.py `spatial_tiled_decode`, `temporal_tiled_decode`).
    tiling: Some(VaeTiling {
        size: 32,
        stride: 24,
        frames: 16,
        frame_stride: 12,
    }),
    // Decoder only: conv_in 16 → 512, mid block of 2 resnets and attention at 512, 4 up blocks of
    // 3 resnets, 3 upsampling 3-D convolutions, conv_out 128 → 3.
    params: 146_100_000,
};

/// CogVideoX's causal 3-D VAE (shared by the 2B, 5B and ConsisID).
const COGVIDEOX_VAE: Vae = Vae {
    temporal: 4,
    spatial: 8,
    latent_channels: 16,
    decoder_channels: &[128, 256, 256, 512],
    // `compress_time = i < 2` for up blocks 0 and 1 (coarse first): full-resolution levels 0, 1, 2
    // and 3 see 1, 1, 1/2 and 1/4 of the frames.
    time_doubling_levels: &[1, 2],
    chunks: None,
    // layers_per_block 3 + 1 (SAT `num_res_blocks` 3, decoder loops `num_res_blocks + 1`).
    blocks_per_level: 4,
    // 3-D causal resnet convolutions; the upsamplers are 2-D.
    conv3d: true,
    tiling: None,
    // Decoder only: conv_in 16 → 512, mid block of 2 resnets (no attention), 4 up blocks of 4
    // resnets with spatially conditioned group norms, 3 upsampling 2-D convolutions, conv_out.
    params: 123_400_000,
};

/// Wan 2.1's causal 3-D VAE (Wan-VAE, shared by 14B and 1.3B).
const WAN_VAE: Vae = Vae {
    temporal: 4,
    spatial: 8,
    latent_channels: 16,
    // from wan/modules/vae.py Decoder3d: dims = 96 × [4, 4, 4, 2, 1], coarse first; the levels run
    // at 384, 384, 192 and 96 channels, each upsampler halving the channels.
    decoder_channels: &[96, 192, 384, 384],
    // `temperal_upsample` [True, True, False] (coarse first): full-resolution levels 0, 1, 2 and 3
    // see 1, 1, 1/2 and 1/4 of the frames.
    time_doubling_levels: &[1, 2],
    chunks: None,
    // num_res_blocks 2 + 1.
    blocks_per_level: 3,
    conv3d: true,
    tiling: None,
    // Decoder only (with its 1×1×1 input conv): the Wan paper gives 127 M for encoder and decoder.
    params: 73_300_000,
};

/// Open-Sora 1.2's video compression network: the SDXL 2-D VAE (8× space, 4 channels) with a
/// temporal VAE (4× time) stacked on its latent. Decoding runs the temporal decoder on the latent,
/// then the 2-D decoder on every frame; the shapes below are the 2-D decoder's. The temporal
/// decoder (`VAE_Temporal_SD`: 3-D causal convolutions at latent resolution, channels 128 ×
/// [1, 2, 2, 4], 4 residual blocks per level, time upsampling in the two coarsest levels) adds
/// about 20 % to the 2-D decoder's arithmetic, counted from `vae_temporal.py`; it is not
/// represented. The VAE encodes 17-frame micro-batches into 5 latent frames each, so a
/// 17 n-frame video has 5 n latent frames rather than (17 n − 1) / 4 + 1.
const OPEN_SORA_VAE: Vae = Vae {
    temporal: 4,
    spatial: 8,
    latent_channels: 4,
    // from the SDXL VAE config (block_out_channels [128, 256, 512, 512], layers_per_block 2).
    decoder_channels: &[128, 256, 512, 512],
    // The 2-D decoder runs on every frame.
    time_doubling_levels: &[],
    chunks: Some((17, 5)),
    blocks_per_level: 3,
    conv3d: false,
    tiling: None,
    // Both decoders: 49.5 M (2-D) + 165.3 M (temporal). The report gives 384 M for the whole
    // network (83 M 2-D + 300 M 3-D, encoders included).
    params: 214_800_000,
};

/// Step-Video-T2V's Video-VAE v2 (`vae_v2.safetensors`, `version=2`): 16× space, 8× time, 64
/// channels. The decoder first expands the latent with a 3×3×3 convolution (2048 → 4096 channels)
/// and a 2×2×2 pixel shuffle, which gives the levels below their 1/8 spatial and 1/4 temporal
/// start; that convolution holds 226 M of the decoder's weights and is not represented as a level.
/// The VAE encodes 17-frame chunks into 3 latent frames each (the pipelines compute
/// `num_frames // 17 * 3` latent frames: 204 frames → 36), so its effective time compression is
/// 17/3 ≈ 5.7, not the nominal 8 that `temporal` holds.
const STEP_VIDEO_VAE: Vae = Vae {
    temporal: 8,
    spatial: 16,
    latent_channels: 64,
    decoder_channels: &[128, 256, 512, 512],
    // `temporal_up_layers` [2, 3]: full-resolution levels 0, 1, 2 and 3 see 1, 1, 1/2 and 1/4 of
    // the frames.
    time_doubling_levels: &[1, 2],
    chunks: Some((17, 3)),
    // num_res_blocks 2 + 1.
    blocks_per_level: 3,
    conv3d: true,
    tiling: None,
    // Decoder only, the pixel-shuffle expansion included.
    params: 388_900_000,
};

const PRESETS: &[VideoDit] = &[
    VideoDit {
        name: "hunyuanvideo",
        hidden: 3072,
        heads: 24,
        head_dim: 128,
        dual_stream_blocks: 20,
        single_stream_blocks: 40,
        cross_attention_blocks: 0,
        // mlp_width_ratio 4; GELU-tanh, two matrices.
        ffn: 12288,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 256,
        // LLM features are 4096 wide; the token refiner (`txt_in`) projects them to 3072.
        text_dim: 3072,
        patch: (1, 2, 2),
        // hyvideo/modules: `RMSNorm` on each head's queries and keys (qk_norm_type "rms"), and
        // `apply_rotary_emb` on the video tokens'.
        qk_norm: QkNorm::RmsNormEager,
        rope: Rope::RealEager,
        vae: HUNYUAN_VAE,
        text_encoders: HUNYUAN_TEXT,
        // Derived count 9.06e9 (0.70×): the blocks' modulation (6·h² per stream per double block,
        // 3·h² per single block, 3.4e9 in all) brings the blocks to 12.46e9, the refiner and
        // embedders to about 12.8e9.
        params: 13_000_000_000,
        source: "Tencent/HunyuanVideo hyvideo/modules/models.py, hyvideo/config.py",
    },
    VideoDit {
        name: "cogvideox-2b",
        hidden: 1920,
        heads: 30,
        head_dim: 64,
        dual_stream_blocks: 0,
        // Expert blocks: text and video tokens share the attention and MLP weights, with their
        // own adaptive layernorms.
        single_stream_blocks: 30,
        cross_attention_blocks: 0,
        // diffusers FeedForward default 4 × dim, gelu-approximate.
        ffn: 7680,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 226,
        // T5 features are 4096 wide; `text_proj` maps them to 1920.
        text_dim: 1920,
        // patch_size 2 with no temporal patching in the 1.0 models.
        patch: (1, 2, 2),
        // diffusers CogVideoX: LayerNorm on queries and keys; the 2B adds sinusoidal positions once
        // (use_rotary_positional_embeddings false), no rotary embedding.
        qk_norm: QkNorm::LayerNorm,
        rope: Rope::None,
        vae: COGVIDEOX_VAE,
        text_encoders: COGVIDEOX_TEXT,
        // Derived count 1.33e9 (0.66×): the two expert adaptive layernorms per block
        // (2 × 512 × 6·1920) add 0.35e9, giving ≈ 1.69e9 with the embedders; "2B" is the
        // published, rounded name.
        params: 2_000_000_000,
        source: "THUDM/CogVideo sat/configs/cogvideox_2b.yaml; CogVideoX paper (2B)",
    },
    VideoDit {
        name: "cogvideox-5b",
        hidden: 3072,
        heads: 48,
        head_dim: 64,
        dual_stream_blocks: 0,
        single_stream_blocks: 42,
        cross_attention_blocks: 0,
        ffn: 12288,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 226,
        text_dim: 3072,
        patch: (1, 2, 2),
        // diffusers CogVideoX: LayerNorm on queries and keys, rotary embedding on the video tokens'.
        qk_norm: QkNorm::LayerNorm,
        rope: Rope::RealEager,
        vae: COGVIDEOX_VAE,
        text_encoders: COGVIDEOX_TEXT,
        // Derived count 4.76e9 (0.95×); with the adaptive layernorms ≈ 5.57e9.
        params: 5_000_000_000,
        source: "THUDM/CogVideo sat/configs/cogvideox_5b.yaml; CogVideoX paper (5B)",
    },
    VideoDit {
        name: "wan2.1-14b",
        hidden: 5120,
        heads: 40,
        head_dim: 128,
        dual_stream_blocks: 0,
        single_stream_blocks: 0,
        cross_attention_blocks: 40,
        ffn: 13824,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 512,
        // umT5 features are 4096 wide; `text_embedding` maps them to 5120, and the cross-attention
        // keys and values are dim × dim.
        text_dim: 5120,
        patch: (1, 2, 2),
        // wan/modules/model.py: `WanRMSNorm` on queries and keys, `rope_apply` in fp64.
        qk_norm: QkNorm::RmsNormEager,
        rope: Rope::ComplexF64,
        vae: WAN_VAE,
        text_encoders: WAN_TEXT,
        // Derived count 14.05e9 (1.00×); the modulation is a learned 6 × dim table per block.
        params: 14_000_000_000,
        source: "Wan-Video/Wan2.1 wan/configs/wan_t2v_14B.py, wan/modules/model.py",
    },
    VideoDit {
        name: "wan2.1-1.3b",
        hidden: 1536,
        heads: 12,
        head_dim: 128,
        dual_stream_blocks: 0,
        single_stream_blocks: 0,
        cross_attention_blocks: 30,
        ffn: 8960,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 512,
        text_dim: 1536,
        patch: (1, 2, 2),
        // As the 14B.
        qk_norm: QkNorm::RmsNormEager,
        rope: Rope::ComplexF64,
        vae: WAN_VAE,
        text_encoders: WAN_TEXT,
        // Derived count 1.39e9 (1.07×).
        params: 1_300_000_000,
        source: "Wan-Video/Wan2.1 wan/configs/wan_t2v_1_3B.py, wan/modules/model.py",
    },
    VideoDit {
        name: "open-sora-1.2",
        hidden: 1152,
        heads: 16,
        head_dim: 72,
        dual_stream_blocks: 0,
        single_stream_blocks: 0,
        // 28 depth steps, each a spatial STDiT3Block followed by a temporal one. Both are complete
        // blocks: self-attention (within a frame, or along time at one position), cross-attention
        // to the text, and an MLP. A step therefore has two self-attentions, two cross-attentions
        // and two MLPs.
        cross_attention_blocks: 28,
        // mlp_ratio 4.
        ffn: 4608,
        gated_mlp: false,
        factorised_attention: true,
        text_tokens: 300,
        // T5 features are 4096 wide; `y_embedder` maps them to 1152.
        text_dim: 1152,
        patch: (1, 2, 2),
        // qk_norm with `LlamaRMSNorm`; the rotary embedding of the temporal blocks is not counted.
        qk_norm: QkNorm::RmsNormEager,
        rope: Rope::None,
        vae: OPEN_SORA_VAE,
        text_encoders: OPEN_SORA_TEXT,
        // Derived count 1.19e9 (1.08×), counting each step as two complete blocks.
        params: 1_100_000_000,
        source: "hpcaitech/Open-Sora opensora/models/stdit/stdit3.py, docs/report_03.md",
    },
    VideoDit {
        name: "step-video-t2v",
        hidden: 6144,
        heads: 48,
        head_dim: 128,
        dual_stream_blocks: 0,
        single_stream_blocks: 0,
        cross_attention_blocks: 48,
        // FeedForward default 4 × dim, GELU-tanh, two matrices.
        ffn: 24576,
        gated_mlp: false,
        factorised_attention: false,
        // 77 Hunyuan-CLIP tokens (projected 1024 → 6144) followed by 320 Step-LLM tokens
        // (projected 6144 → 6144), concatenated as the cross-attention keys.
        text_tokens: 77 + 320,
        text_dim: 6144,
        // patch_size 1: one token per latent pixel (the VAE already compresses 16 × 16).
        patch: (1, 1, 1),
        // `RMSNorm` on queries and keys; its 3-D rotary embedding is not counted (not checked
        // against its code).
        qk_norm: QkNorm::RmsNormEager,
        rope: Rope::None,
        vae: STEP_VIDEO_VAE,
        text_encoders: STEP_VIDEO_TEXT,
        // Derived count 28.99e9 (0.97×); the modulation is a learned 6 × dim table per block.
        params: 30_000_000_000,
        source: "stepfun-ai/Step-Video-T2V stepvideo/modules/model.py; arXiv 2502.10248 (30B)",
    },
    VideoDit {
        name: "consisid",
        hidden: 3072,
        heads: 48,
        head_dim: 64,
        dual_stream_blocks: 0,
        // The CogVideoX-5B block stack. Every second block is followed by a perceiver
        // cross-attention from the video tokens (3072 → 16 heads of 128) to 32 face tokens; those
        // 21 layers cost about 3 % of the blocks' arithmetic and are not represented.
        single_stream_blocks: 42,
        cross_attention_blocks: 0,
        ffn: 12288,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 226,
        text_dim: 3072,
        patch: (1, 2, 2),
        // As CogVideoX-5B (diffusers' ConsisID attention processor).
        qk_norm: QkNorm::LayerNorm,
        rope: Rope::RealEager,
        vae: COGVIDEOX_VAE,
        text_encoders: COGVIDEOX_TEXT,
        // No published count. CogVideoX-5B's published 5e9 plus the identity modules counted from
        // the diffusers defaults: 21 perceiver cross-attentions of 21.0e6 (0.44e9) and the local
        // facial extractor (≈ 0.15e9). Derived count 4.76e9 (0.85×).
        params: 5_600_000_000,
        source: "diffusers consisid_transformer_3d.py (ConsisID on CogVideoX-5B)",
    },
];

/// Other names a preset answers to, besides its name with any case, spaces or punctuation
/// (so "hunyuan-video" and "CogVideoX 2B" need no entry).
const ALIASES: &[(&str, &[&str])] = &[
    (
        "hunyuanvideo",
        &["hunyuanvideo-t2v", "hunyuanvideo-13b", "hyvideo"],
    ),
    ("wan2.1-14b", &["wan2.1-t2v-14b", "wan-14b"]),
    ("wan2.1-1.3b", &["wan2.1-t2v-1.3b", "wan-1.3b"]),
    (
        "open-sora-1.2",
        &["opensora-v1.2", "opensora-stdit-v3", "stdit3-xl/2"],
    ),
    ("step-video-t2v", &["stepvideo", "stepvideo-t2v-30b"]),
    ("consisid", &["consisid-preview"]),
];

/// Every preset.
pub fn all() -> Vec<VideoDit> {
    PRESETS.to_vec()
}

/// The preset called `name` (case-insensitive; aliases allowed, e.g. "hunyuan-video",
/// "wan2.1-14b", "Wan-AI/Wan2.1-T2V-14B"). Spaces and punctuation are ignored, and a Hugging Face
/// organisation before a `/` may be given.
pub fn find(name: &str) -> Option<VideoDit> {
    let full = normalise(name);
    let repo = name.rsplit_once('/').map(|(_, r)| normalise(r));
    let matches = |candidate: &str| {
        let c = normalise(candidate);
        c == full || repo.as_deref() == Some(c.as_str())
    };
    PRESETS
        .iter()
        .find(|p| {
            matches(p.name)
                || ALIASES
                    .iter()
                    .filter(|(preset, _)| *preset == p.name)
                    .any(|(_, aliases)| aliases.iter().any(|a| matches(a)))
        })
        .cloned()
}

/// Lower-case ASCII letters and digits only.
fn normalise(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A rough denoiser count from the shapes: attention 4·h² (q, k, v, out), MLP 2 or 3·h·ffn;
    /// dual-stream blocks count twice (a stream each); cross-attention blocks add
    /// 2·h² + 2·h·text_dim (q and out, k and v from the text); a factorised (spatial + temporal)
    /// cross-attention block is two complete blocks. Embedders and modulation weights are left
    /// out.
    fn derived_params(d: &VideoDit) -> f64 {
        let h = f64::from(d.hidden);
        let mlp_mats = if d.gated_mlp { 3.0 } else { 2.0 };
        let block = 4.0 * h * h + mlp_mats * h * f64::from(d.ffn);
        let cross = block + 2.0 * h * h + 2.0 * h * f64::from(d.text_dim);
        let cross = if d.factorised_attention {
            2.0 * cross
        } else {
            cross
        };
        f64::from(d.dual_stream_blocks) * 2.0 * block
            + f64::from(d.single_stream_blocks) * block
            + f64::from(d.cross_attention_blocks) * cross
    }

    #[test]
    fn derived_counts_are_near_the_published_ones() {
        for d in all() {
            let ratio = derived_params(&d) / d.params as f64;
            assert!(
                (0.6..=1.4).contains(&ratio),
                "{}: derived {:.3e} is {ratio:.2}x the published {:.3e}",
                d.name,
                derived_params(&d),
                d.params as f64
            );
        }
    }

    #[test]
    fn the_required_presets_are_there_once() {
        let names: Vec<_> = all().iter().map(|d| d.name).collect();
        for want in [
            "hunyuanvideo",
            "cogvideox-2b",
            "cogvideox-5b",
            "wan2.1-14b",
            "wan2.1-1.3b",
            "open-sora-1.2",
            "step-video-t2v",
            "consisid",
        ] {
            assert!(names.contains(&want), "{want} missing");
        }
        let keys: HashSet<_> = names.iter().map(|n| normalise(n)).collect();
        assert_eq!(keys.len(), names.len(), "names collide");
    }

    #[test]
    fn aliases_name_presets_and_do_not_collide() {
        let mut seen: HashSet<String> = all().iter().map(|d| normalise(d.name)).collect();
        for (preset, aliases) in ALIASES {
            assert!(PRESETS.iter().any(|p| p.name == *preset), "{preset}");
            for alias in *aliases {
                assert!(seen.insert(normalise(alias)), "alias {alias} collides");
                assert_eq!(find(alias).map(|d| d.name), Some(*preset), "{alias}");
            }
        }
    }

    #[test]
    fn find_takes_names_aliases_and_repositories() {
        let name = |q: &str| find(q).map(|d| d.name);
        assert_eq!(name("HunyuanVideo"), Some("hunyuanvideo"));
        assert_eq!(name("hunyuan-video"), Some("hunyuanvideo"));
        assert_eq!(name("tencent/HunyuanVideo"), Some("hunyuanvideo"));
        assert_eq!(name("CogVideoX-2B"), Some("cogvideox-2b"));
        assert_eq!(name("THUDM/CogVideoX-5b"), Some("cogvideox-5b"));
        assert_eq!(name("wan2.1-14b"), Some("wan2.1-14b"));
        assert_eq!(name("Wan-AI/Wan2.1-T2V-14B"), Some("wan2.1-14b"));
        assert_eq!(name("Wan-AI/Wan2.1-T2V-1.3B"), Some("wan2.1-1.3b"));
        assert_eq!(name("Open-Sora 1.2"), Some("open-sora-1.2"));
        assert_eq!(name("hpcai-tech/OpenSora-STDiT-v3"), Some("open-sora-1.2"));
        assert_eq!(name("stepfun-ai/stepvideo-t2v"), Some("step-video-t2v"));
        assert_eq!(name("BestWishYsh/ConsisID-preview"), Some("consisid"));
        assert_eq!(name("ConsisID"), Some("consisid"));
        assert_eq!(name("wan2.2-14b"), None);
        assert_eq!(name("cogvideox"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn shapes_are_consistent() {
        for d in all() {
            assert_eq!(d.heads * d.head_dim, d.hidden, "{}", d.name);
            let kinds = [
                d.dual_stream_blocks,
                d.single_stream_blocks,
                d.cross_attention_blocks,
            ]
            .iter()
            .filter(|&&n| n > 0)
            .count();
            // Only HunyuanVideo mixes kinds (double then single blocks).
            let want = if d.name == "hunyuanvideo" { 2 } else { 1 };
            assert_eq!(kinds, want, "{}", d.name);
            if d.factorised_attention {
                assert!(d.cross_attention_blocks > 0, "{}", d.name);
            }
            assert!(d.ffn > d.hidden && d.text_tokens > 0 && d.text_dim > 0);
            let (t, ph, pw) = d.patch;
            assert!(t >= 1 && ph >= 1 && ph == pw, "{}", d.name);
            let v = &d.vae;
            let levels = v.decoder_channels.len() as u32;
            assert!(levels >= 2, "{}", d.name);
            assert!(
                v.time_doubling_levels.iter().all(|&l| l < levels),
                "{}",
                d.name
            );
            // Each level below the first halves height and width; a latent pixel-shuffle
            // (Step-Video) may add one more factor of two.
            let halvings = 1u32 << (levels - 1);
            assert!(
                v.spatial == halvings || v.spatial == 2 * halvings,
                "{}",
                d.name
            );
            assert!(
                v.temporal >= 1 << v.time_doubling_levels.len(),
                "{}",
                d.name
            );
            assert!(v.blocks_per_level >= 1 && v.params > 0 && v.latent_channels > 0);
            assert!(!d.text_encoders.is_empty() && !d.source.is_empty());
            for e in d.text_encoders {
                assert!(e.params > 0 && e.tokens > 0, "{} {}", d.name, e.name);
            }
        }
    }
}
