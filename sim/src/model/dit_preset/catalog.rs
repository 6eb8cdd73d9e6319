//! The video presets' shapes, each from its model's reference code (`source`, `// from`); a
//! model built on another's shapes names only what differs.

use super::components::*;
use crate::model::dit::{QkNorm, Rope, VideoDit};

const COGVIDEOX_5B: VideoDit = VideoDit {
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
    qk_norm: QkNorm::Fused,
    rope: Rope::RealEager,
    guided_branches: 2,
    frame_mask: false,
    vae: COGVIDEOX_VAE,
    text_encoders: COGVIDEOX_TEXT,
    // Derived count 4.76e9 (0.95×); with the adaptive layernorms ≈ 5.57e9.
    params: 5_000_000_000,
    experts: 1,
    source: "THUDM/CogVideo sat/configs/cogvideox_5b.yaml; CogVideoX paper (5B)",
};

const WAN21_14B: VideoDit = VideoDit {
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
    guided_branches: 2,
    frame_mask: false,
    vae: WAN_VAE,
    text_encoders: WAN_TEXT,
    // Derived count 14.05e9 (1.00×); the modulation is a learned 6 × dim table per block.
    params: 14_000_000_000,
    experts: 1,
    source: "Wan-Video/Wan2.1 wan/configs/wan_t2v_14B.py, wan/modules/model.py",
};

pub(super) const PRESETS: &[VideoDit] = &[
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
        guided_branches: 2,
        frame_mask: false,
        vae: HUNYUAN_VAE,
        text_encoders: HUNYUAN_TEXT,
        // Derived count 9.06e9 (0.70×): the blocks' modulation (6·h² per stream per double block,
        // 3·h² per single block, 3.4e9 in all) brings the blocks to 12.46e9, the refiner and
        // embedders to about 12.8e9.
        params: 13_000_000_000,
        experts: 1,
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
        qk_norm: QkNorm::Fused,
        rope: Rope::None,
        guided_branches: 2,
        frame_mask: false,
        vae: COGVIDEOX_VAE,
        text_encoders: COGVIDEOX_TEXT,
        // Derived count 1.33e9 (0.66×): the two expert adaptive layernorms per block
        // (2 × 512 × 6·1920) add 0.35e9, giving ≈ 1.69e9 with the embedders; "2B" is the
        // published, rounded name.
        params: 2_000_000_000,
        experts: 1,
        source: "THUDM/CogVideo sat/configs/cogvideox_2b.yaml; CogVideoX paper (2B)",
    },
    COGVIDEOX_5B,
    VideoDit {
        name: "cogvideox1.5-5b",
        // diffusers' pipeline pads the T5 prompt to 226 (the SAT code to 224). patch_size_t 2: the
        // pipeline pads an odd latent frame count by one frame, and the decoder drops it again
        // (pipeline_cogvideox.py). The rest is CogVideoX-5B's, LayerNorm on queries and keys and
        // diffusers' fp32 rotary embedding included; 5.57e9 counted with the expert layer norms.
        patch: (2, 2, 2),
        source: "zai-org/CogVideo sat/configs/cogvideox1.5_5b.yaml; diffusers \
                 scripts/convert_cogvideox_to_diffusers.py (1.5)",
        ..COGVIDEOX_5B
    },
    WAN21_14B,
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
        guided_branches: 2,
        frame_mask: false,
        vae: WAN_VAE,
        text_encoders: WAN_TEXT,
        // Derived count 1.39e9 (1.07×).
        params: 1_300_000_000,
        experts: 1,
        source: "Wan-Video/Wan2.1 wan/configs/wan_t2v_1_3B.py, wan/modules/model.py",
    },
    VideoDit {
        name: "wan2.2-ti2v-5b",
        hidden: 3072,
        heads: 24,
        head_dim: 128,
        dual_stream_blocks: 0,
        single_stream_blocks: 0,
        cross_attention_blocks: 30,
        ffn: 14336,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 512,
        text_dim: 3072,
        // With the VAE's 16 x 16, 32 x 32 pixels a token.
        patch: (1, 2, 2),
        // As Wan2.1: `WanRMSNorm` on queries and keys, `rope_apply` in fp64. The reference runs
        // guidance as two forward passes of one branch each; priced as one batch of two.
        qk_norm: QkNorm::RmsNormEager,
        rope: Rope::ComplexF64,
        guided_branches: 2,
        frame_mask: false,
        vae: WAN22_VAE,
        text_encoders: WAN_TEXT,
        // Derived count 4.96e9 (0.99x).
        params: 5_000_000_000,
        experts: 1,
        source: "Wan-Video/Wan2.2 wan/configs/wan_ti2v_5B.py, wan/modules/model.py, vae2_2.py",
    },
    VideoDit {
        name: "wan2.2-t2v-a14b",
        // Two experts of Wan2.1-14B's shape (high noise above the boundary timestep, low noise
        // below); each step runs one, so the work is one expert's. `params` is one expert's. On
        // one GPU generate.py keeps the idle one on the CPU and swaps them once, at the boundary;
        // runs on several GPUs hold both.
        experts: 2,
        source: "Wan-Video/Wan2.2 wan/configs/wan_t2v_A14B.py, wan/text2video.py",
        ..WAN21_14B
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
        // qk_norm with `LlamaRMSNorm`; the temporal blocks rotate with rotary_embedding_torch's
        // `apply_rotary_emb` (fp32 cosines and sines, `rotate_half`, the `* scale`s and the `cat`:
        // about the bytes of `RealEager`).
        qk_norm: QkNorm::RmsNormEager,
        rope: Rope::RealEager,
        guided_branches: 2,
        // from opensora/utils/inference_utils.py `apply_mask_strategy` (a mask for every prompt,
        // none left `None`) and schedulers/rf `RFLOW.sample` (`x_mask` whenever there is a mask).
        frame_mask: true,
        vae: OPEN_SORA_VAE,
        text_encoders: OPEN_SORA_TEXT,
        // Derived count 1.19e9 (1.08×), counting each step as two complete blocks.
        params: 1_100_000_000,
        experts: 1,
        source: "hpcaitech/Open-Sora opensora/models/stdit/stdit3.py, docs/report_03.md",
    },
    VideoDit {
        name: "open-sora-2.0",
        hidden: 3072,
        heads: 24,
        head_dim: 128,
        // Flux's MMDiT (`depth` 19, `depth_single_blocks` 38); a single block runs attention and
        // MLP side by side from one input projection, as HunyuanVideo's.
        dual_stream_blocks: 19,
        single_stream_blocks: 38,
        cross_attention_blocks: 0,
        // mlp_ratio 4, GELU-tanh, two matrices.
        ffn: 12288,
        gated_mlp: false,
        factorised_attention: false,
        text_tokens: 512,
        // T5 features are 4096 wide (`context_in_dim`); `txt_in` projects them to 3072.
        text_dim: 3072,
        // `in_channels` 64 = 16 latent channels x 2 x 2.
        patch: (1, 2, 2),
        // opensora/models/mmdit/layers.py: Liger's fused RMS norm on queries and keys, and Liger's
        // rope kernel (`use_liger_rope=True`).
        qk_norm: QkNorm::Fused,
        rope: Rope::Fused,
        // from opensora/utils/sampling.py `I2VDenoiser` (`method="i2v"`, hard-coded for text to
        // video too): conditional, text-unconditional and image-unconditional, one batch of 3.
        guided_branches: 3,
        frame_mask: false,
        vae: OPEN_SORA_2_VAE,
        text_encoders: OPEN_SORA_2_TEXT,
        // Derived count 8.61e9 (0.78x): modulation and embedders are left out.
        params: 11_000_000_000,
        experts: 1,
        source: "hpcaitech/Open-Sora configs/diffusion/inference/256px.py, opensora/models/mmdit",
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
        guided_branches: 2,
        frame_mask: false,
        vae: STEP_VIDEO_VAE,
        text_encoders: STEP_VIDEO_TEXT,
        // Derived count 28.99e9 (0.97×); the modulation is a learned 6 × dim table per block.
        params: 30_000_000_000,
        experts: 1,
        source: "stepfun-ai/Step-Video-T2V stepvideo/modules/model.py; arXiv 2502.10248 (30B)",
    },
    VideoDit {
        name: "consisid",
        // The CogVideoX-5B block stack and attention (diffusers' ConsisID attention processor).
        // Every second block is followed by a perceiver cross-attention from the video tokens
        // (3072 → 16 heads of 128) to 32 face tokens; those 21 layers cost about 3 % of the
        // blocks' arithmetic and are not represented.
        // No published count. CogVideoX-5B's published 5e9 plus the identity modules counted from
        // the diffusers defaults: 21 perceiver cross-attentions of 21.0e6 (0.44e9) and the local
        // facial extractor (≈ 0.15e9). Derived count 4.76e9 (0.85×).
        params: 5_600_000_000,
        source: "diffusers consisid_transformer_3d.py (ConsisID on CogVideoX-5B)",
        ..COGVIDEOX_5B
    },
];
