//! `[diffusion] offload`: where the pipeline keeps the models it is not running. Unstated, it is
//! the model's reference pipeline's; stating that changes nothing.

use crate::common;

use clustersim::report::diffusion::DiffusionReport;

fn run(preset: &str, gpus: u32, extra: &str) -> DiffusionReport {
    let text = format!(
        "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"{preset}\"\n\
         [diffusion]\nwidth = 848\nheight = 480\nframes = 49\nsteps = 10\n{extra}\n\
         [parallel]\nulysses = {gpus}\n"
    );
    common::typed_outcome("offload.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The figures a stated default must leave as they are, by name.
fn figures(r: &DiffusionReport) -> [(&'static str, f64); 5] {
    [
        ("latency_s", r.latency_s),
        ("breakdown_s.offload", r.breakdown_s.offload),
        ("memory.peak_bytes_per_gpu", r.memory.peak_bytes_per_gpu),
        (
            "memory.phase_bytes_per_gpu.decode",
            r.memory.phase_bytes_per_gpu.decode,
        ),
        (
            "memory.offload_bytes_per_video",
            r.memory.offload_bytes_per_video,
        ),
    ]
}

#[test]
fn the_reference_pipelines_offload_is_the_default() {
    for (preset, gpus, offload) in [
        ("wan2.1-14b", 1, "model"),
        ("wan2.1-14b", 2, "none"),
        ("hunyuanvideo", 1, "encoders"),
        ("hunyuanvideo", 4, "none"),
        ("cogvideox-5b", 1, "sequential"),
        ("wan2.2-ti2v-5b", 1, "model"),
        ("cogvideox1.5-5b", 1, "sequential"),
        ("open-sora-2.0", 1, "none"),
        ("wan2.2-t2v-a14b", 1, "model"),
        ("open-sora-1.2", 1, "none"),
    ] {
        let silent = run(preset, gpus, "");
        let stated = run(preset, gpus, &format!("offload = \"{offload}\""));
        for ((key, a), (_, b)) in figures(&silent).into_iter().zip(figures(&stated)) {
            assert_eq!(a, b, "{preset} x{gpus}: {key}");
        }
        assert_eq!(silent.memory.offload, offload, "{preset} x{gpus}");
        let said = silent.assumptions.join("\n");
        assert!(said.contains(&format!("offload = \"{offload}\"")), "{said}");
    }
}

/// Offloading trades memory for PCIe time: the peak falls, the copies lengthen the video, and
/// streaming the transformer every step costs the most time.
#[test]
fn offload_trades_memory_for_pcie_time() {
    let at = |offload: &str| run("cogvideox-5b", 1, &format!("offload = \"{offload}\""));
    let none = at("none");
    assert_eq!(none.breakdown_s.offload, 0.0);
    assert_eq!(none.memory.offload_bytes_per_video, 0.0);
    let mut previous_peak = none.memory.peak_bytes_per_gpu;
    for offload in ["encoders", "sequential"] {
        let r = at(offload);
        let peak = r.memory.peak_bytes_per_gpu;
        assert!(peak < previous_peak, "{offload}: {peak} {previous_peak}");
        previous_peak = peak;
        let moved = r.breakdown_s.offload;
        assert!(moved > 0.0, "{offload}");
        let extra = r.latency_s - none.latency_s;
        assert!(
            (extra - moved).abs() < 1e-6 * moved.max(1.0),
            "{offload}: {extra} {moved}"
        );
    }
    // Ten steps of 5B bf16 weights streamed: at least 100 GB.
    assert!(at("sequential").memory.offload_bytes_per_video > 100e9);
}

#[test]
fn a_bad_offload_is_refused_with_the_choices() {
    let text = "kind = \"diffusion\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"wan2.1-14b\"\n\
                [diffusion]\nwidth = 848\nheight = 480\nframes = 49\nsteps = 10\n\
                offload = \"cpu\"\n";
    let e = common::outcome("bad-offload.toml", text).unwrap_err();
    for needle in [
        "bad-offload.toml:11",
        "cpu",
        "none",
        "model",
        "encoders",
        "sequential",
    ] {
        assert!(e.contains(needle), "{needle} not in {e}");
    }
}
