//! What the video presets carry beyond their shapes: three guided branches (Open-Sora 2.0), the
//! frame mask and temporal rotation of Open-Sora 1.2, and a decoder that ends in an unpatchify
//! (Wan2.2's VAE).

use crate::common;

use clustersim::report::diffusion::DiffusionReport;
use clustersim::report::typed::TypedReport;

/// The report of a diffusion run's output, typed.
fn typed(out: &clustersim::RunOutput) -> DiffusionReport {
    DiffusionReport::of_run(&out.report)
}

/// One H100 node generating `body` with `preset` on `parallel`; the run's report and graph.
fn run(preset: &str, body: &str, parallel: &str) -> clustersim::RunOutput {
    let text = format!(
        "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"{preset}\"\n\
         [diffusion]\n{body}\n[parallel]\n{parallel}\n"
    );
    common::run("video.toml", &text, &[])
}

/// Open-Sora 2.0 guides by text and by image at once: a guided step is a batch of three, and CFG
/// parallelism splits three branches, not two.
#[test]
fn open_sora_2_guides_with_three_branches() {
    let body =
        |cfg: bool| format!("width = 768\nheight = 768\nframes = 33\nsteps = 2\ncfg = {cfg}");
    let one = typed(&run("open-sora-2.0", &body(false), "ulysses = 1"));
    let three = typed(&run("open-sora-2.0", &body(true), "ulysses = 1"));
    let ratio = three.flops.per_step / one.flops.per_step;
    assert!((ratio - 3.0).abs() < 1e-9, "{ratio}");
    let split = typed(&run("open-sora-2.0", &body(true), "cfg = 3"));
    // Each group of cfg = 3 runs one branch, then the predictions are gathered.
    let share = split.denoise_step_s / one.denoise_step_s;
    assert!(share > 0.99 && share < 1.2, "{share}");
    let refused = common::outcome(
        "video.toml",
        &format!(
            "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \
             \"open-sora-2.0\"\n[diffusion]\n{}\n[parallel]\ncfg = 2\n",
            body(true)
        ),
    )
    .unwrap_err();
    assert!(
        refused.contains("video.toml:13") && refused.contains("3 branches"),
        "{refused}"
    );
}

/// Open-Sora 1.2's pipeline passes a frame mask, so every block selects between two
/// modulations (28 passes of its stream), and only its temporal blocks rotate queries and keys.
#[test]
fn open_sora_1_2_pays_its_frame_mask_and_rotates_along_time_only() {
    let out = run(
        "open-sora-1.2",
        "width = 640\nheight = 360\nframes = 51\nsteps = 1\ncfg = true",
        "ulysses = 1",
    );
    let tokens = typed(&out).video.tokens as f64;
    let bytes = |name: &str| -> Vec<f64> {
        out.graph
            .ops
            .iter()
            .filter(|o| o.name == name)
            .map(|o| o.bytes)
            .collect()
    };
    // 28 spatial and 28 temporal blocks, two branches of 1,152 wide activations in bf16.
    let select = bytes("frame_mask_select");
    assert_eq!(select.len(), 56);
    let stream = 2.0 * tokens * 1152.0 * 2.0;
    assert!(
        select
            .iter()
            .all(|&b| (b / (28.0 * stream) - 1.0).abs() < 1e-9)
    );
    let qk = bytes("qk_norm_rope");
    assert_eq!(qk.len(), 56);
    // Queries and keys: 36 bytes an element normalised; 58 more rotated in a temporal block.
    let norm = 2.0 * 2.0 * tokens * 1152.0 * 36.0;
    let rotated = 2.0 * 2.0 * tokens * 1152.0 * 58.0;
    let spatial = qk
        .iter()
        .filter(|&&b| (b / norm - 1.0).abs() < 1e-9)
        .count();
    let temporal = qk
        .iter()
        .filter(|&&b| (b / (norm + rotated) - 1.0).abs() < 1e-9)
        .count();
    assert_eq!((spatial, temporal), (28, 28));
    // No other preset passes a frame mask.
    let wan = run(
        "wan2.1-1.3b",
        "width = 832\nheight = 480\nframes = 17\nsteps = 1",
        "ulysses = 1",
    );
    assert!(!wan.graph.ops.iter().any(|o| o.name == "frame_mask_select"));
}

/// Wan2.2's decoder runs its finest level at half the video's height and width and ends in a 2 x
/// 2 unpatchify: its last convolution writes 12 channels at a quarter of the pixels, so the
/// decode costs about what its channels at those sizes give, not four times it.
#[test]
fn wan2_2_decodes_below_full_resolution_and_unpatchifies() {
    let body = "width = 1280\nheight = 704\nframes = 121\nsteps = 1\ncfg = true";
    let out = run("wan2.2-ti2v-5b", body, "ulysses = 1");
    // 31 latent frames of 44 x 80 latent pixels, 2 x 2 patches.
    let r = typed(&out);
    assert_eq!(r.video.latent, [31, 44, 80]);
    assert_eq!(r.video.tokens, 31 * 22 * 40);
    // The decoder's activations at its finest level: 256 channels at 640 x 352, every frame.
    let vae = r.memory.vae_activation_bytes_per_gpu;
    let finest = 121.0 * 352.0 * 640.0 * 256.0;
    assert!(vae < 8.0 * finest * 4.0, "{vae}");
    assert!(r.breakdown_s.vae_decode > 0.0);
}

/// Wan2.2-A14B's two experts take turns: a step's work is one expert's, a run without offload
/// holds both, and the reference pipeline's offload on one GPU holds one at a time and swaps them
/// once over PCIe.
#[test]
fn wan2_2_a14b_holds_both_experts_or_swaps_them() {
    let body = "width = 832\nheight = 480\nframes = 17\nsteps = 2\ncfg = true";
    let a14b = typed(&run("wan2.2-t2v-a14b", body, "ulysses = 1"));
    let wan21 = typed(&run("wan2.1-14b", body, "ulysses = 1"));
    assert_eq!(a14b.flops.per_step, wan21.flops.per_step);
    assert_eq!(a14b.model.experts, 2);
    let expert = 14e9 * 2.0;
    assert_eq!(a14b.memory.weights_bytes_per_gpu, 2.0 * expert);
    // One GPU: generate.py's offload, one expert resident while denoising.
    assert_eq!(a14b.memory.offload, "model");
    let denoise = a14b.memory.phase_bytes_per_gpu.denoise;
    let one_expert = wan21.memory.phase_bytes_per_gpu.denoise;
    assert!((denoise - one_expert).abs() < 1.0, "{denoise} {one_expert}");
    // The swap: the second expert in and the first out, beside the moves Wan 2.1 makes.
    let swap = a14b.memory.offload_bytes_per_video - wan21.memory.offload_bytes_per_video;
    assert!((swap - 2.0 * expert).abs() < 1.0, "{swap}");
    // Resident together without offload.
    let held = typed(&run("wan2.2-t2v-a14b", body, "ulysses = 2"));
    assert_eq!(held.memory.offload, "none");
    let all = held.memory.phase_bytes_per_gpu.denoise;
    assert!(all > denoise + expert, "{all} {denoise}");
}

/// A Flux-style single block (Open-Sora 2.0, HunyuanVideo) holds its fused input projection, the
/// MLP's activation, the attention's output and their concatenation at once: 5 x 3072 + 3 x
/// 12288 values a token, wider than its MLP alone; CogVideoX's expert blocks hold their MLP's.
#[test]
fn flux_single_blocks_hold_their_fused_tensors() {
    let body = "width = 768\nheight = 768\nframes = 33\nsteps = 1\ncfg = true";
    let r = typed(&run("open-sora-2.0", body, "ring = 1"));
    let tokens = r.video.tokens as f64 + r.video.text_tokens as f64;
    let want = 3.0 * tokens * (5.0 * 3072.0 + 3.0 * 12288.0) * 2.0;
    let got = r.memory.denoise_activation_bytes_per_gpu;
    assert!((got / want - 1.0).abs() < 1e-9, "{got} {want}");
    let cog = typed(&run(
        "cogvideox-5b",
        "width = 720\nheight = 480\nframes = 49\nsteps = 1\ncfg = true",
        "ulysses = 1",
    ));
    let tokens = cog.video.tokens as f64 + cog.video.text_tokens as f64;
    let mlp = 2.0 * tokens * (2.0 * 12288.0 + 2.0 * 3072.0) * 2.0;
    let got = cog.memory.denoise_activation_bytes_per_gpu;
    assert!((got / mlp - 1.0).abs() < 1e-9, "{got} {mlp}");
}
