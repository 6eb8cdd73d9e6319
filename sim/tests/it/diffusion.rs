//! Video diffusion: one video on one or more GPUs, its parallelisms, memory and errors.

use crate::common;

use clustersim::report::diffusion::{DiffusionReport, Queue};
use clustersim::report::typed::TypedReport;

fn simulate(text: String) -> Result<DiffusionReport, String> {
    common::typed_outcome("video.toml", &text)
}

/// `preset` generating `video` (the [diffusion] body) with `parallel` (the [parallel] body) on
/// one node of 8 H100.
fn video(preset: &str, video: &str, parallel: &str) -> Result<DiffusionReport, String> {
    simulate(format!(
        "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"{preset}\"\n\
         [diffusion]\n{video}\n[parallel]\n{parallel}\n"
    ))
}

const HUNYUAN_720P: &str = "width = 1280\nheight = 720\nframes = 129\nsteps = 10";

#[test]
fn ulysses_divides_the_work_and_its_all_to_alls_grow_in_share() {
    let run = |u: u32| video("hunyuanvideo", HUNYUAN_720P, &format!("ulysses = {u}")).unwrap();
    let (one, two, eight) = (run(1), run(2), run(8));
    assert_eq!(one.video.tokens, 118_800);
    assert_eq!(one.breakdown_s.communication, 0.0);
    let step = |r: &DiffusionReport| r.denoise_step_s;
    // Nearly linear: attention dominates, and every GPU does 1/u of it.
    assert!(step(&two) < 0.55 * step(&one) && step(&two) > 0.45 * step(&one));
    assert!(step(&eight) < step(&two) / 3.5);
    let share = |r: &DiffusionReport| r.breakdown_s.communication / r.breakdown_s.denoise;
    assert!(share(&eight) > share(&two) && share(&two) > 0.0);
    // The VAE decodes on one GPU unless asked: the same time at any degree.
    let vae = |r: &DiffusionReport| r.breakdown_s.vae_decode;
    assert!((vae(&one) / vae(&eight) - 1.0).abs() < 1e-9);
    let parallel_vae = video(
        "hunyuanvideo",
        &format!("{HUNYUAN_720P}\nvae_parallel = true"),
        "ulysses = 8",
    )
    .unwrap();
    assert!(vae(&parallel_vae) < vae(&eight) / 4.0);
    // Every GPU of one video: one video at a time on the node; one GPU a video: eight.
    assert_eq!(eight.parallel.videos_at_once, 1);
    assert_eq!(one.parallel.videos_at_once, 8);
}

#[test]
fn ring_attention_overlaps_its_sends_with_the_attention() {
    let usp = video("hunyuanvideo", HUNYUAN_720P, "ulysses = 4\nring = 2").unwrap();
    let ulysses = video("hunyuanvideo", HUNYUAN_720P, "ulysses = 8").unwrap();
    // Same GPUs, same arithmetic; the ring's sends hide under the attention chunks, so USP is
    // within a few percent of pure Ulysses.
    let step = |r: &DiffusionReport| r.denoise_step_s;
    assert!((step(&usp) / step(&ulysses) - 1.0).abs() < 0.05);
    assert!(usp.breakdown_s.exposed_communication < usp.breakdown_s.communication);
}

#[test]
fn cfg_parallel_halves_each_gpus_batch() {
    let wan = "width = 1280\nheight = 720\nframes = 81\nsteps = 5\ncfg = true";
    let one_group = video("wan2.1-14b", wan, "ulysses = 4").unwrap();
    let two_groups = video("wan2.1-14b", wan, "ulysses = 4\ncfg = 2").unwrap();
    let ratio = two_groups.denoise_step_s / one_group.denoise_step_s;
    assert!(ratio > 0.45 && ratio < 0.6, "{ratio}");
    // Guidance off is one branch: half the work of guidance on one group.
    let off = video(
        "wan2.1-14b",
        &wan.replace("cfg = true", "cfg = false"),
        "ulysses = 4",
    )
    .unwrap();
    let half = off.denoise_step_s / one_group.denoise_step_s;
    assert!(half > 0.45 && half < 0.55, "{half}");
}

#[test]
fn pipefusion_splits_the_blocks_and_pays_a_pipeline_fill() {
    let cog = "width = 720\nheight = 480\nframes = 49\nsteps = 20\ncfg = true";
    let alone = video("cogvideox-5b", cog, "").unwrap();
    let piped = video("cogvideox-5b", cog, "pipefusion = 4").unwrap();
    let w = |r: &DiffusionReport| r.memory.weights_bytes_per_gpu;
    assert!((w(&piped) * 4.0 / w(&alone) - 1.0).abs() < 0.01);
    assert!(piped.breakdown_s.pipeline_wait > 0.0);
    let speedup = alone.breakdown_s.denoise / piped.breakdown_s.denoise;
    assert!(speedup > 2.5 && speedup < 4.0, "{speedup}");
    // Fewer patches than stages: every step waits for its first patch to come round.
    let short = video(
        "cogvideox-5b",
        cog,
        "pipefusion = 4\npipefusion_patches = 2",
    )
    .unwrap();
    assert!(short.breakdown_s.pipeline_wait > 2.0 * piped.breakdown_s.pipeline_wait);
    // The stale keys and values of a stage's blocks take memory.
    assert!(
        piped.memory.denoise_activation_bytes_per_gpu
            > alone.memory.denoise_activation_bytes_per_gpu
    );
}

#[test]
fn every_preset_runs_and_chunked_vaes_count_their_latent_frames() {
    for (preset, v) in [
        ("hunyuanvideo", HUNYUAN_720P),
        (
            "cogvideox-2b",
            "width = 720\nheight = 480\nframes = 49\nsteps = 2",
        ),
        (
            "cogvideox-5b",
            "width = 720\nheight = 480\nframes = 49\nsteps = 2",
        ),
        (
            "wan2.1-14b",
            "width = 1280\nheight = 720\nframes = 81\nsteps = 2",
        ),
        (
            "wan2.1-1.3b",
            "width = 832\nheight = 480\nframes = 81\nsteps = 2",
        ),
        (
            "open-sora-1.2",
            "width = 1280\nheight = 720\nframes = 102\nsteps = 2",
        ),
        (
            "step-video-t2v",
            "width = 992\nheight = 544\nframes = 204\nsteps = 2",
        ),
        (
            "consisid",
            "width = 720\nheight = 480\nframes = 49\nsteps = 2",
        ),
    ] {
        let r = video(preset, v, "").unwrap_or_else(|e| panic!("{preset}: {e}"));
        assert!(r.latency_s > 0.0, "{preset}");
        // The peak holds the transformer's weights, unless the pipeline streams them (CogVideoX's
        // reference script on one GPU).
        let resident = r.memory.offload != "sequential";
        let above = r.memory.peak_bytes_per_gpu > r.memory.weights_bytes_per_gpu;
        assert!(above || !resident, "{preset}");
    }
    // Step-Video's VAE makes 3 latent frames of every 17: 204 frames, 36 latent frames.
    let step = video(
        "step-video-t2v",
        "width = 992\nheight = 544\nframes = 204\nsteps = 1",
        "",
    )
    .unwrap();
    assert_eq!(step.video.latent[0], 36);
    // Step-Video (30 B) and its 20 B text encoder do not fit one H100: a result, not an error.
    assert!(!step.memory.fits);
}

#[test]
fn bad_diffusion_input_names_the_key() {
    let e = video("hunyuanvideo", HUNYUAN_720P, "ulysses = 16").unwrap_err();
    assert!(e.contains("24 attention heads"), "{e}");
    let e = video("hunyuanvideo", HUNYUAN_720P, "cfg = 2").unwrap_err();
    assert!(e.contains("classifier-free guidance"), "{e}");
    let e = video("hunyuanvideo", HUNYUAN_720P, "dp = 2").unwrap_err();
    assert!(e.contains("parallel.dp") && e.contains("diffusion"), "{e}");
    let e = video("hunyuan", HUNYUAN_720P, "").unwrap_err();
    assert!(
        e.contains("unknown video DiT preset") && e.contains("hunyuanvideo"),
        "{e}"
    );
    let e = video("hunyuanvideo", "width = 1280\nheight = 720\nsteps = 10", "").unwrap_err();
    assert!(e.contains("missing key `frames`"), "{e}");
    let e = video("hunyuanvideo", HUNYUAN_720P, "ulysses = 8\nring = 2").unwrap_err();
    assert!(e.contains("needs 16 GPUs"), "{e}");
    let e = simulate(
        "kind = \"diffusion\"\n[cluster]\ngpu = \"A100\"\n[model]\npreset = \"hunyuanvideo\"\n\
         attention_kernel = \"flash-attention-3\"\n[diffusion]\nwidth = 64\nheight = 64\n\
         frames = 1\nsteps = 1\n"
            .into(),
    )
    .unwrap_err();
    assert!(e.contains("no figure for flash-attention-3"), "{e}");
}

/// Without `attention_kernel` a video runs the kernel the reference pipelines run, FlashAttention
/// 2, where it has a figure on the GPU, the same as stating it; elsewhere the roofline's default.
#[test]
fn the_default_attention_is_flash_attention_2_where_it_has_a_figure() {
    let text = |gpu: &str, kernel: &str| {
        format!(
            "kind = \"diffusion\"\n[cluster]\ngpu = \"{gpu}\"\n[model]\npreset = \"hunyuanvideo\"\n\
             {kernel}\n[diffusion]\n{HUNYUAN_720P}\n"
        )
    };
    let default = simulate(text("H100", "")).unwrap();
    let fa2 = simulate(text("H100", "attention_kernel = \"flash-attention-2\"")).unwrap();
    let fa3 = simulate(text("H100", "attention_kernel = \"flash-attention-3\"")).unwrap();
    let step = |r: &DiffusionReport| r.denoise_step_s;
    assert_eq!(step(&default), step(&fa2));
    assert!(step(&fa3) < step(&fa2) / 1.2);
    let said = default.assumptions.join("\n");
    assert!(
        said.contains("flash-attention-2 (not stated") && said.contains("measured on an H200"),
        "{said}"
    );
    let l40s = simulate(text("L40S", "")).unwrap();
    let said = l40s.assumptions.join("\n");
    assert!(
        said.contains("the roofline's default attention efficiency"),
        "{said}"
    );
}

/// Wan 2.1 1.3B videos of two sizes served on 16 H100 in groups of 2, by `scheduler`.
fn served(scheduler: &str, rate: &str) -> DiffusionReport {
    simulate(format!(
        "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\nnodes = 2\n[cluster.inter_node]\n\
         nic_bandwidth = \"400 Gb/s\"\n[model]\npreset = \"wan2.1-1.3b\"\n[diffusion]\nsteps = 20\n\
         scheduler = \"{scheduler}\"\nvideos = [{{ width = 832, height = 480, frames = 81, share = 3 }}, \
         {{ width = 1280, height = 720, frames = 81 }}]\n[parallel]\nulysses = 2\n[workload]\n\
         requests = 200\narrival = \"poisson\"\nrate = \"{rate}\"\n"
    ))
    .unwrap()
}

#[test]
fn a_queue_of_videos_is_served_by_groups_and_sjf_cuts_the_median() {
    // About 80% of the groups' capacity: queues form and drain.
    let fcfs = served("fcfs", "33/min");
    let sjf = served("sjf", "33/min");
    let queue = |r: &DiffusionReport| -> Queue { r.serving.clone().expect("a queue of videos") };
    let (fcfs, sjf) = (queue(&fcfs), queue(&sjf));
    for q in [&fcfs, &sjf] {
        assert_eq!(q.completed, 200);
        assert_eq!(q.groups, 8);
        let videos = &q.videos;
        assert_eq!(videos[0].requests + videos[1].requests, 200);
        // The 720p video takes longer than the 480p one.
        assert!(videos[1].latency_s > 1.5 * videos[0].latency_s);
        // No video is served faster than its own generation.
        assert!(q.latency_s.p50.unwrap() >= videos[0].latency_s - 1e-9);
    }
    // Same arrivals, same work: the same videos per hour within the tail; a lower median with
    // shortest job first.
    assert!(
        sjf.latency_s.p50.unwrap() < fcfs.latency_s.p50.unwrap(),
        "{sjf:?} {fcfs:?}"
    );
    assert!(sjf.latency_s.mean.unwrap() <= fcfs.latency_s.mean.unwrap());
    // A light load does not queue.
    let light = queue(&served("fcfs", "1/h"));
    assert!(light.queueing_s.p99.unwrap() < 1e-9);
}

#[test]
fn a_video_mix_needs_a_workload_and_serving_refuses_token_lengths() {
    let e = video(
        "wan2.1-1.3b",
        "steps = 2\nvideos = [{ width = 832, height = 480, frames = 81 }]",
        "",
    )
    .unwrap_err();
    assert!(e.contains("needs a [workload]"), "{e}");
    let e = simulate(
        "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"wan2.1-1.3b\"\n\
         [diffusion]\nsteps = 2\nvideos = [{ width = 832, height = 480, frames = 81 }]\n\
         [workload]\nrequests = 3\narrival = \"offline\"\nprompt_tokens = 100\n"
            .into(),
    )
    .unwrap_err();
    assert!(e.contains("does not apply to serving videos"), "{e}");
}

#[test]
fn dsp_switches_the_split_with_fewer_all_to_alls_than_ulysses() {
    let open_sora = "width = 1280\nheight = 720\nframes = 204\nsteps = 5";
    let ulysses = video("open-sora-1.2", open_sora, "ulysses = 8").unwrap();
    let dsp = video("open-sora-1.2", open_sora, "dsp = 8").unwrap();
    let comm = |r: &DiffusionReport| r.breakdown_s.communication;
    // Two all-to-alls of the activations a depth step against four an attention (two
    // attentions a step): about a quarter of the bytes.
    let ratio = comm(&dsp) / comm(&ulysses);
    assert!(ratio > 0.15 && ratio < 0.4, "{ratio}");
    assert!(dsp.latency_s < ulysses.latency_s);
    let e = video("hunyuanvideo", HUNYUAN_720P, "dsp = 8").unwrap_err();
    assert!(e.contains("whole 3-D sequence"), "{e}");
    let e = video("open-sora-1.2", open_sora, "dsp = 4\nulysses = 2").unwrap_err();
    assert!(e.contains("DSP replaces Ulysses"), "{e}");
}

#[test]
fn latent_parallelism_trades_all_to_alls_for_one_gather_a_step() {
    let wan = "width = 1280\nheight = 720\nframes = 81\nsteps = 6";
    let ulysses = video("wan2.1-1.3b", wan, "ulysses = 4").unwrap();
    let latent = video("wan2.1-1.3b", wan, "latent = 4").unwrap();
    let comm = |r: &DiffusionReport| r.breakdown_s.communication;
    assert!(comm(&latent) < 0.05 * comm(&ulysses));
    // Attention within a region does a quarter of the whole sequence's pairs: less arithmetic.
    assert!(latent.denoise_step_s < ulysses.denoise_step_s);
    // Wider overlaps cost more.
    let wide = video("wan2.1-1.3b", wan, "latent = 4\nlatent_overlap = 4").unwrap();
    assert!(wide.denoise_step_s > latent.denoise_step_s);
    let e = video("wan2.1-1.3b", wan, "latent = 2\nulysses = 2").unwrap_err();
    assert!(e.contains("latent parallelism is modelled alone"), "{e}");
}

/// Each block normalises its queries and keys and rotates the video tokens' as the model's code
/// does: HunyuanVideo (fp32 RMS norm, 36 bytes an element, and fp32 rotary, 58) moves both over
/// every block; CogVideoX-2B (one layer-norm kernel, 4 bytes; no rotary embedding) only the norm.
#[test]
fn queries_and_keys_are_normalised_and_rotated_as_the_model_code_does() {
    let passes = |preset: &str, body: &str| {
        let text = format!(
            "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"{preset}\"\n\
             [diffusion]\n{body}\nsteps = 1\n[parallel]\nulysses = 1\n"
        );
        let out = common::run("video.toml", &text, &[]);
        let ops: Vec<f64> = out
            .graph
            .ops
            .iter()
            .filter(|o| o.name == "qk_norm_rope")
            .map(|o| o.bytes)
            .collect();
        (ops, DiffusionReport::of_run(&out.report))
    };
    let (hunyuan, report) = passes("hunyuanvideo", "width = 1280\nheight = 720\nframes = 129");
    // 20 double-stream and 40 single-stream blocks, one pass each.
    assert_eq!(hunyuan.len(), 60);
    let video = report.video.tokens as f64;
    let text = report.video.text_tokens as f64;
    let width = 3072.0;
    // Queries and keys of every token normalised; the video tokens' rotated.
    let expected = 2.0 * width * ((video + text) * 36.0 + video * 58.0);
    assert!(hunyuan.iter().all(|&b| (b / expected - 1.0).abs() < 1e-9));
    let (cog, report) = passes("cogvideox-2b", "width = 720\nheight = 480\nframes = 49");
    let tokens = report.video.tokens as f64 + report.video.text_tokens as f64;
    assert_eq!(cog.len(), 30);
    assert!(
        cog.iter()
            .all(|&b| (b / (2.0 * 1920.0 * tokens * 4.0) - 1.0).abs() < 1e-9)
    );
}

/// Every Ulysses all-to-all is bracketed by copies of its tensor into the order it sends and out
/// of the order it receives: two passes, each reading and writing the exchanged bytes, before the
/// queries', keys' and values' exchange and after the output's; none without Ulysses.
#[test]
fn ulysses_exchanges_copy_their_tensors_on_either_side() {
    let ops = |parallel: &str| {
        let text = format!(
            "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"hunyuanvideo\"\n\
             [diffusion]\n{HUNYUAN_720P}\n[parallel]\n{parallel}\n"
        );
        common::run("video.toml", &text, &[]).graph.ops
    };
    let bytes = |ops: &[clustersim::exec::Op], name: &str| -> Vec<f64> {
        ops.iter()
            .filter(|o| o.name == name)
            .map(|o| o.bytes)
            .collect()
    };
    let two = ops("ulysses = 2");
    let copies = bytes(&two, "ulysses_layout_copies");
    let qkv = bytes(&two, "ulysses_all_to_all_qkv");
    let out = bytes(&two, "ulysses_all_to_all_out");
    assert_eq!(copies.len(), qkv.len() + out.len());
    // In graph order: the copies before each QKV exchange, then those after its output's.
    for (i, (q, o)) in qkv.iter().zip(&out).enumerate() {
        assert!((copies[2 * i] - 4.0 * q).abs() <= 1e-6 * q);
        assert!((copies[2 * i + 1] - 4.0 * o).abs() <= 1e-6 * o);
    }
    assert!(bytes(&ops("ulysses = 1"), "ulysses_layout_copies").is_empty());
}
