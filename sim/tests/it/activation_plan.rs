//! Adaptive recomputation (`recompute = "adaptive"`): per class of saved tensor keep, recompute
//! or compress (`[compression.activations]`) to fit a memory cap.

use crate::common;

use clustersim::report::training::TrainingReport;
use common::{number, outcome, section};

/// Llama-2 7B on 8 A100 80GB, ZeRO-3, 4 sequences of 4,096 tokens a micro-batch: without
/// recomputation the activations overflow the GPU.
fn scenario(recompute: &str, extra: &str) -> String {
    format!(
        r#"
kind = "training"
[cluster]
gpu = "A100-80GB"
nodes = 1
gpus_per_node = 8
[model]
preset = "llama-2-7b"
[parallel]
micro_batch = 4
global_batch = 64
zero = 3
recompute = "{recompute}"
{extra}
[compression.activations]
ratio = 4.0
compress = "400 GB/s"
decompress = "400 GB/s"
"#
    )
}

fn run(recompute: &str, extra: &str) -> TrainingReport {
    common::training("adaptive.toml", &scenario(recompute, extra), &[])
}

/// The report's adaptive recomputation plan.
fn plan(r: &TrainingReport) -> &serde_json::Value {
    section(&r.memory.activation_plan, "activation_plan")
}

#[test]
fn adaptive_fits_between_none_and_full_and_beats_full() {
    let none = run("none", "");
    let full = run("full", "");
    let adaptive = run("adaptive", "");
    assert!(!none.memory.fits);
    assert!(full.memory.fits);
    assert!(adaptive.memory.fits);
    let t = |r: &TrainingReport| r.iteration_time_s;
    assert!(t(&adaptive) < t(&full), "{} vs {}", t(&adaptive), t(&full));
    assert!(t(&adaptive) >= t(&none), "{} vs {}", t(&adaptive), t(&none));
    // The plan is reported, and it drops something.
    let tensors = plan(&adaptive)["tensors"]
        .as_array()
        .expect("the plan's tensors")
        .clone();
    // Llama-2's config trains without dropout: no class of dropout masks.
    assert_eq!(tensors.len(), 7);
    assert!(tensors.iter().all(|t| t["name"] != "dropout_masks"));
    assert!(tensors.iter().any(|t| t["choice"] != "keep"));
    let stated = common::training(
        "adaptive.toml",
        &scenario("adaptive", "").replacen("[model]", "[model]\ndropout = 0.1", 1),
        &[],
    );
    let tensors = section(&stated.memory.activation_plan, "activation_plan")["tensors"]
        .as_array()
        .expect("the plan's tensors")
        .len();
    assert_eq!(tensors, 8, "the dropout masks are a class of their own");
}

#[test]
fn a_generous_cap_keeps_everything_and_a_tight_one_drops_more() {
    let roomy = run("adaptive", "memory_cap = \"1000 GiB\"");
    let none = run("none", "");
    // Everything kept: the same memory and step as no recomputation (so the classes add up to
    // the memory model's activations of a layer).
    assert_eq!(
        roomy.memory.peak_bytes_per_gpu,
        none.memory.peak_bytes_per_gpu
    );
    assert_eq!(roomy.iteration_time_s, none.iteration_time_s);
    let kept = |r: &TrainingReport| number(plan(r), "stored_bytes_per_layer");
    let loose = run("adaptive", "memory_cap = \"75 GiB\"");
    let tight = run("adaptive", "memory_cap = \"40 GiB\"");
    assert!(kept(&tight) < kept(&loose));
    assert!(tight.memory.peak_bytes_per_gpu as f64 <= 40.0 * (1u64 << 30) as f64);
    assert!(tight.iteration_time_s >= loose.iteration_time_s);
}

#[test]
fn adaptive_is_refused_with_tensor_parallelism_and_cap_needs_it() {
    let text = scenario("adaptive", "tp = 2");
    let e = outcome("adaptive.toml", &text).expect_err("tp under adaptive");
    assert!(e.contains("adaptive recomputation is modelled"), "{e}");
    assert!(e.contains("adaptive.toml:"), "{e}");
    let text = scenario("full", "memory_cap = \"40 GiB\"");
    let e = outcome("adaptive.toml", &text).expect_err("a cap without adaptive");
    assert!(e.contains("memory_cap"), "{e}");
}
