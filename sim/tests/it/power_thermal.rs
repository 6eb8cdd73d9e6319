//! Board power over time and clocks under a power limit (`[cluster] power_limit`, `hw::clock`),
//! and the paper gallery's replay of "Characterizing the efficiency of distributed training: a
//! power, performance and thermal perspective" (docs/PAPERS.md): 32 H200 against 64 H100.

use crate::common;

use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use common::{number, section};
use serde_json::Value;

/// The typed report of the gallery scenario `file`.
fn paper(file: &str, sets: &[&str]) -> TrainingReport {
    common::typed_paper(file, sets)
}

/// A training report's `power` section.
fn power(r: &TrainingReport) -> &Value {
    section(&r.power, "power")
}

/// A small model on one H100 node, TP2 PP2 DP2: quick, with bubbles and collectives.
fn small(power_limit: Option<&str>) -> String {
    let text = common::h100_training(
        8,
        "preset = \"llama-3-8b\"\nseq_len = 2048",
        "tp = 2\npp = 2\nmicro_batch = 1\nglobal_batch = 16",
    );
    match power_limit {
        Some(l) => text.replace(
            "gpus_per_node = 8",
            &format!("gpus_per_node = 8\npower_limit = \"{l}\""),
        ),
        None => text,
    }
}

#[test]
fn a_limit_at_the_tdp_changes_nothing_and_is_said_when_absent() {
    let free = common::training("free.toml", &small(None), &[]);
    let at_tdp = common::training("tdp.toml", &small(Some("700 W")), &[]);
    assert_eq!(free.iteration_time_s, at_tdp.iteration_time_s);
    assert_eq!(power(&free)["limited"], false);
    assert_eq!(power(&at_tdp)["limited"], false);
    // At its TDP an H100 runs GEMMs at about its sustained clock, not the isolated kernels' one.
    let clock = number(power(&free), "gemm_clock");
    assert!(clock > 0.92 && clock < 0.96, "{clock}");
    let said = free
        .assumptions
        .iter()
        .any(|a| a.contains("board power limit: the TDP (700 W)"));
    assert!(said, "{:?}", free.assumptions);
}

#[test]
fn a_limit_slows_the_step_caps_the_power_and_saves_energy() {
    let free = common::training("free.toml", &small(None), &[]);
    let held = common::training("held.toml", &small(Some("450 W")), &[]);
    let step = |r: &TrainingReport| r.iteration_time_s;
    let slowdown = step(&held) / step(&free);
    // GEMMs at ((450 - 105) / 595)^(1/3) = 0.83 of the clock they hold at the TDP; memory-bound
    // kernels and waits not at all: the step slows by less than that ratio's inverse.
    let (clock, at_tdp) = (
        number(power(&held), "gemm_clock"),
        number(power(&free), "gemm_clock"),
    );
    assert!(
        (clock / at_tdp - (345.0_f64 / 595.0).cbrt()).abs() < 0.02,
        "{clock} against {at_tdp}"
    );
    assert!(
        slowdown > 1.03 && slowdown < at_tdp / clock,
        "{slowdown} against a clock of {clock} ({at_tdp} at the TDP)"
    );
    assert!(number(power(&held), "peak_watts") <= 450.0 + 1e-6);
    assert!(number(power(&free), "peak_watts") > 600.0);
    // Energy a step (mean board power x step) falls: power drops faster than time grows.
    let joules = |r: &TrainingReport| number(power(r), "mean_watts") * step(r);
    assert!(joules(&held) < joules(&free));
    // Energy is the same per-kernel model: one mean board power in both sections.
    let board = |r: &TrainingReport| number(section(&r.energy, "energy"), "board_watts_per_gpu");
    for r in [&held, &free] {
        assert_eq!(board(r), number(power(r), "mean_watts"));
    }
    assert!(board(&held) < 450.0);
}

#[test]
fn power_swings_between_kernels_and_waits() {
    let r = common::training("free.toml", &small(None), &[]);
    let (peak, floor, mean) = (
        number(power(&r), "peak_watts"),
        number(power(&r), "p1_watts"),
        number(power(&r), "mean_watts"),
    );
    assert_eq!(floor, 105.0, "idle: 15% of the TDP");
    assert!(peak > mean && mean > floor, "{peak} {mean} {floor}");
    let series = power(&r)["series"]["watts"].as_array().unwrap();
    assert_eq!(series.len(), 100);
    let values: Vec<f64> = series.iter().map(|v| v.as_f64().unwrap()).collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    assert!(hi - lo > 100.0, "the series swings: {lo} to {hi}");
    // Both pipeline stages have their own figures.
    assert_eq!(power(&r)["stages"].as_array().unwrap().len(), 2);
}

#[test]
fn the_trace_draws_board_power_as_a_counter_track() {
    let out = common::run("free.toml", &small(None), &[]);
    let mut bytes = Vec::new();
    out.write_trace(&mut bytes).unwrap();
    let trace: Value = serde_json::from_slice(&bytes).unwrap();
    let counters: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C")
        .collect();
    assert!(counters.len() > 100, "{}", counters.len());
    assert!(counters.iter().all(|e| e["name"] == "board power (W)"));
    let peak = counters
        .iter()
        .map(|e| e["args"]["W"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    let report = TrainingReport::of_run(&out.report);
    assert!((peak - number(power(&report), "peak_watts")).abs() < 1e-9);
}

#[test]
fn limits_outside_the_boards_range_are_refused_at_the_key() {
    for (limit, why) in [
        ("800 W", "above the TDP"),
        ("200 W", "below memory-bound draw"),
    ] {
        let e = common::refused("bad.toml", &small(Some(limit)), why).to_string();
        assert!(e.contains("power_limit"), "{e}");
        assert!(e.contains("301 W") && e.contains("700 W"), "{e}");
    }
}

/// The replay: scale-up (32 H200) against scale-out (64 H100) on Llama 3 70B.
#[test]
fn h200_fits_without_recomputation_and_wins_per_gpu_but_not_in_total() {
    let h100 = paper("power-thermal-llama-3-70b-64xh100-mb2.toml", &[]);
    let h200 = paper("power-thermal-llama-3-70b-32xh200-mb2.toml", &[]);
    let no_recompute = paper(
        "power-thermal-llama-3-70b-64xh100-mb2-no-recompute.toml",
        &[],
    );
    assert!(!no_recompute.memory.fits);
    assert!(h200.memory.fits);
    let per_gpu = |r: &TrainingReport| r.tokens_per_s / r.cluster.gpus as f64;
    let gain = per_gpu(&h200) / per_gpu(&h100);
    assert!(
        gain > 1.25,
        "per GPU: H200 {} against H100 {}",
        per_gpu(&h200),
        per_gpu(&h100)
    );
    // Twice the GPUs still train faster in total here.
    assert!(h100.tokens_per_s > h200.tokens_per_s);
    // At the same setting the H200 gains only from its HBM bandwidth: a few percent.
    let same = paper("power-thermal-llama-3-70b-32xh100-mb1.toml", &[]);
    let faster = paper("power-thermal-llama-3-70b-32xh200-mb1.toml", &[]);
    let bandwidth_gain = same.iteration_time_s / faster.iteration_time_s;
    assert!(
        bandwidth_gain > 1.0 && bandwidth_gain < 1.1,
        "{bandwidth_gain}"
    );
    // The MI250X (383 TFLOP/s, 560 W) trains slower per device and spends more energy a token.
    let mi250x = paper("power-thermal-llama-3-70b-32xmi250x-mb1.toml", &[]);
    assert!(per_gpu(&mi250x) < 0.6 * per_gpu(&faster));
    let joules_per_token = |r: &TrainingReport| {
        number(power(r), "mean_watts") * r.cluster.gpus as f64 / r.tokens_per_s
    };
    assert!(joules_per_token(&mi250x) > 1.5 * joules_per_token(&faster));
}

#[test]
fn h200_held_to_500_w_is_slower_and_draws_less() {
    let free = paper("power-thermal-llama-3-70b-32xh200-mb2.toml", &[]);
    let held = paper("power-thermal-llama-3-70b-32xh200-mb2-500w.toml", &[]);
    let slowdown = held.iteration_time_s / free.iteration_time_s;
    assert!(slowdown > 1.05 && slowdown < 1.15, "{slowdown}");
    assert!(number(power(&held), "mean_watts") < 0.8 * number(power(&free), "mean_watts"));
}
