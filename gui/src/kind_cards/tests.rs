//! Headless tests of the serving, diffusion, collective and federated cards.

use super::*;
use crate::cards::Summary;
use clustersim::report::any::Report;
use egui_kittest::kittest::Queryable;
use serde_json::Value;
use std::path::PathBuf;

/// The report of a shipped scenario, with `sets` overrides (to keep debug runs short).
fn report(file: &str, sets: &[&str]) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = clustersim::Scenario::load(&path, &sets).unwrap();
    clustersim::run(&scenario).unwrap().report
}

/// Renders the cards of `r` and checks each caption is there with a value that is not "—".
fn shows(r: &Value, captions: &[&str]) -> egui_kittest::Harness<'static> {
    let s = Summary::from_report(r);
    assert!(s.kind_cards.is_some(), "no cards for {}", r["kind"]);
    let mut h = egui_kittest::Harness::new_ui(move |ui| crate::cards::show(ui, &s));
    h.run();
    for caption in captions {
        h.get_by_label(caption);
    }
    assert!(
        h.query_all_by_label("—").next().is_none(),
        "a card reads \"—\" for {}",
        r["kind"]
    );
    h
}

#[test]
fn a_serving_run_has_its_own_cards_and_no_dash() {
    let r = report(
        "serving/llama-3-70b-tp4-poisson-slo.toml",
        &["workload.requests=200"],
    );
    let h = shows(
        &r,
        &[
            "Throughput",
            "Time to first token, p50",
            "Time per output token, p50",
            "SLO attainment",
            "Replicas",
            "End-to-end latency, p50",
            "KV cache peak",
            "Memory per GPU",
        ],
    );
    h.get_by_label("4 × TP4");
    assert!(h.query_all_by_label_contains("requests/s").count() >= 2);
    h.get_by_label_contains("output tokens/s");
    assert!(h.query_by_label("Iteration time").is_none());
}

#[test]
fn a_diffusion_run_has_its_own_cards_and_bars() {
    let r = report("diffusion/hunyuanvideo-720p-8xh100-ulysses.toml", &[]);
    let h = shows(
        &r,
        &[
            "Video latency",
            "Denoising step",
            "Videos per hour",
            "Memory peak per GPU",
            "Where a video's time goes",
        ],
    );
    h.get_by_label_contains("one video on 8 ×");
    h.get_by_label_contains("denoise compute");
    h.get_by_label_contains("VAE decode");
    // At its peak (decoding) a GPU holds the weights and the VAE's activations, not the
    // denoiser's: the parts add up to the peak.
    h.get_by_label("Memory per GPU at peak (decode phase)");
    let KindCards::Diffusion(d) = KindCards::of(&Report::from_value(&r).unwrap()).unwrap() else {
        panic!("not diffusion");
    };
    // The parts of a video's time add up to its latency (the phases run one after another).
    let sum: f64 = d.time_parts.iter().map(|p| p.1).sum();
    let latency = d.latency_s.unwrap();
    assert!((sum / latency - 1.0).abs() < 0.01, "{sum} vs {latency}");
    let held: f64 = d.memory_parts.iter().map(|p| p.1).sum();
    let peak = d.peak_bytes.unwrap();
    assert!((held / peak - 1.0).abs() < 0.01, "{held} vs {peak}");
}

#[test]
fn a_collective_run_has_its_own_cards() {
    let r = report("papers/zccl-all-reduce-16x4xa100-fast.toml", &[]);
    let h = shows(
        &r,
        &["Time", "Bus bandwidth", "Algorithm bandwidth", "Algorithm"],
    );
    h.get_by_label_contains("the uncompressed speed");
    h.get_by_label_contains("all-reduce of ");
    h.get_by_label_contains(" on 64 ranks");
}

#[test]
fn a_federated_run_has_its_own_cards() {
    let r = report(
        "papers/private-fl-nnlm-100k-vocab-peu-lora.toml",
        &["federated.rounds=5"],
    );
    let h = shows(
        &r,
        &[
            "Round time, p50",
            "Rounds per hour",
            "Upload per device",
            "Stragglers dropped",
        ],
    );
    h.get_by_label_contains("selected a round");
}

#[test]
fn a_report_of_another_version_says_why_and_training_has_none_of_these() {
    let s = Summary::from_report(&serde_json::json!({"kind": "serving"}));
    let e = s.unreadable.clone().expect("refused");
    assert!(e.starts_with("not a serving report: missing field"), "{e}");
    assert!(s.kind_cards.is_none());
    let mut h = egui_kittest::Harness::new_ui(move |ui| crate::cards::show(ui, &s));
    h.run();
    h.get_by_label_contains("does not read as one of this version's: not a serving report");
    assert!(h.query_by_label("Throughput").is_none());
    let training = report("training/gpt3-1.3b-8xh100.toml", &[]);
    assert!(KindCards::of(&Report::from_value(&training).unwrap()).is_none());
}
