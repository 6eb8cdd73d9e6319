//! The text encoders and VAE decoders the video presets share, with the counts and shapes
//! their code gives (conventions: the parent module).

use crate::model::dit::{TextEncoder, Vae, VaeTiling};

/// T5 v1.1 XXL encoder (`google/t5-v1_1-xxl`, `DeepFloyd/t5-v1_1-xxl`): d_model 4096, 24 layers, 64
/// heads of 64, gated-GELU FFN 10240, vocabulary 32128: 32128·4096 + 24 × (4·4096² + 3·4096·10240)
/// ≈ 4.762e9.
pub(super) const T5_XXL_PARAMS: u64 = 4_762_310_656;

/// LLaVA-LLaMA-3-8B's language model: Llama-3-8B, 8.03e9 as published by Meta.
pub(super) const LLAVA_LLAMA3_8B_PARAMS: u64 = 8_030_000_000;

/// CLIP ViT-L/14 text tower (`openai/clip-vit-large-patch14`): 123.06e6.
pub(super) const CLIP_L_PARAMS: u64 = 123_060_480;

pub(super) const HUNYUAN_TEXT: &[TextEncoder] = &[
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

pub(super) const COGVIDEOX_TEXT: &[TextEncoder] = &[TextEncoder {
    name: "t5-v1_1-xxl",
    params: T5_XXL_PARAMS,
    // from sat/configs/cogvideox_*.yaml (FrozenT5Embedder max_length).
    tokens: 226,
}];

pub(super) const WAN_TEXT: &[TextEncoder] = &[TextEncoder {
    name: "umt5-xxl",
    // from wan/modules/t5.py `umt5_xxl` (vocabulary 256384, dim 4096, FFN 10240, 24 encoder layers,
    // per-layer relative position buckets): 256384·4096 + 24 × (4·4096² + 3·4096·10240 + 2·4096 +
    // 32·64) + 4096 ≈ 5.681e9.
    params: 5_680_910_336,
    tokens: 512,
}];

pub(super) const OPEN_SORA_TEXT: &[TextEncoder] = &[TextEncoder {
    name: "t5-v1_1-xxl",
    params: T5_XXL_PARAMS,
    // from configs/opensora-v1-2/inference/sample.py (model_max_length).
    tokens: 300,
}];

pub(super) const OPEN_SORA_2_TEXT: &[TextEncoder] = &[
    TextEncoder {
        name: "t5-v1_1-xxl",
        params: T5_XXL_PARAMS,
        // from configs/diffusion/inference/256px.py (t5 `max_length`).
        tokens: 512,
    },
    TextEncoder {
        name: "clip-vit-large-patch14",
        params: CLIP_L_PARAMS,
        // from the same config (clip `max_length`); its pooled output feeds the modulation vector.
        tokens: 77,
    },
];

pub(super) const STEP_VIDEO_TEXT: &[TextEncoder] = &[
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
pub(super) const HUNYUAN_VAE: Vae = Vae {
    temporal: 4,
    spatial: 8,
    latent_channels: 16,
    decoder_channels: &[128, 256, 512, 512],
    // Up blocks 1 and 2 (of 0..=3, coarse first) upsample time: full-resolution levels 0, 1, 2
    // and 3 see 1, 1/2, 1/4 and 1/4 of the frames.
    time_doubling_levels: &[0, 1],
    chunks: None,
    chunk_remainder: false,
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
    unpatchify: 1,
    // Decoder only: conv_in 16 → 512, mid block of 2 resnets and attention at 512, 4 up blocks of
    // 3 resnets, 3 upsampling 3-D convolutions, conv_out 128 → 3.
    params: 146_100_000,
};

/// Open-Sora 2.0's VAE: HunyuanVideo's, decoded in spatial tiles only (configs/diffusion/inference
/// `use_spatial_tiling=True`, `use_temporal_tiling=False`; opensora/models/hunyuan_vae
/// `sample_size` 256, `tile_overlap_factor` 0.25).
pub(super) const OPEN_SORA_2_VAE: Vae = Vae {
    tiling: Some(VaeTiling {
        size: 32,
        stride: 24,
        frames: 0,
        frame_stride: 0,
    }),
    unpatchify: 1,
    ..HUNYUAN_VAE
};

/// CogVideoX's causal 3-D VAE (shared by the 2B, 5B and ConsisID).
pub(super) const COGVIDEOX_VAE: Vae = Vae {
    temporal: 4,
    spatial: 8,
    latent_channels: 16,
    decoder_channels: &[128, 256, 256, 512],
    // `compress_time = i < 2` for up blocks 0 and 1 (coarse first): full-resolution levels 0, 1, 2
    // and 3 see 1, 1, 1/2 and 1/4 of the frames.
    time_doubling_levels: &[1, 2],
    chunks: None,
    chunk_remainder: false,
    // layers_per_block 3 + 1 (SAT `num_res_blocks` 3, decoder loops `num_res_blocks + 1`).
    blocks_per_level: 4,
    // 3-D causal resnet convolutions; the upsamplers are 2-D.
    conv3d: true,
    tiling: None,
    unpatchify: 1,
    // Decoder only: conv_in 16 → 512, mid block of 2 resnets (no attention), 4 up blocks of 4
    // resnets with spatially conditioned group norms, 3 upsampling 2-D convolutions, conv_out.
    params: 123_400_000,
};

/// Wan 2.1's causal 3-D VAE (Wan-VAE, shared by 14B and 1.3B).
pub(super) const WAN_VAE: Vae = Vae {
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
    chunk_remainder: false,
    // num_res_blocks 2 + 1.
    blocks_per_level: 3,
    conv3d: true,
    tiling: None,
    unpatchify: 1,
    // Decoder only (with its 1×1×1 input conv): the Wan paper gives 127 M for encoder and decoder.
    params: 73_300_000,
};

/// Wan2.2's high-compression VAE (TI2V-5B): 4x time, 16x space, 48 channels. The decoder's levels
/// run at 1/2 to 1/16 of the video's height and width, and a 2 x 2 unpatchify of its 12 output
/// channels gives the pixels.
pub(super) const WAN22_VAE: Vae = Vae {
    temporal: 4,
    spatial: 16,
    latent_channels: 48,
    // from wan/modules/vae2_2.py `Decoder3d`: dec_dim 256 x [4, 4, 4, 2, 1], coarse first; the
    // levels run at 1024, 1024, 512 and 256 channels.
    decoder_channels: &[256, 512, 1024, 1024],
    // upsample3d in the two coarsest up blocks: levels 1 and 2 are reached by doubling time.
    time_doubling_levels: &[1, 2],
    chunks: None,
    chunk_remainder: false,
    // num_res_blocks 2 + 1.
    blocks_per_level: 3,
    conv3d: true,
    // The official code and diffusers decode whole (one latent frame at a time, cached).
    tiling: None,
    unpatchify: 2,
    // Decoder only, counted from vae2_2.py: 555.0 M.
    params: 555_049_228,
};

/// Open-Sora 1.2's video compression network: the SDXL 2-D VAE (8× space, 4 channels) with a
/// temporal VAE (4× time) stacked on its latent. Decoding runs the temporal decoder on the latent,
/// then the 2-D decoder on every frame; the shapes below are the 2-D decoder's. The temporal
/// decoder (`VAE_Temporal_SD`: 3-D causal convolutions at latent resolution, channels 128 ×
/// [1, 2, 2, 4], 4 residual blocks per level, time upsampling in the two coarsest levels) adds
/// about 20 % to the 2-D decoder's arithmetic, counted from `vae_temporal.py`; it is not
/// represented. The VAE encodes 17-frame micro-batches into 5 latent frames each, so a
/// 17 n-frame video has 5 n latent frames rather than (17 n − 1) / 4 + 1; the frames past the last
/// whole micro-batch give one latent frame per 4, rounded up (`VideoAutoencoderPipeline`).
pub(super) const OPEN_SORA_VAE: Vae = Vae {
    temporal: 4,
    spatial: 8,
    latent_channels: 4,
    // from the SDXL VAE config (block_out_channels [128, 256, 512, 512], layers_per_block 2).
    decoder_channels: &[128, 256, 512, 512],
    // The 2-D decoder runs on every frame.
    time_doubling_levels: &[],
    chunks: Some((17, 5)),
    chunk_remainder: true,
    blocks_per_level: 3,
    conv3d: false,
    tiling: None,
    unpatchify: 1,
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
pub(super) const STEP_VIDEO_VAE: Vae = Vae {
    temporal: 8,
    spatial: 16,
    latent_channels: 64,
    decoder_channels: &[128, 256, 512, 512],
    // `temporal_up_layers` [2, 3]: full-resolution levels 0, 1, 2 and 3 see 1, 1, 1/2 and 1/4 of
    // the frames.
    time_doubling_levels: &[1, 2],
    chunks: Some((17, 3)),
    chunk_remainder: false,
    // num_res_blocks 2 + 1.
    blocks_per_level: 3,
    conv3d: true,
    tiling: None,
    unpatchify: 1,
    // Decoder only, the pixel-shuffle expansion included.
    params: 388_900_000,
};
