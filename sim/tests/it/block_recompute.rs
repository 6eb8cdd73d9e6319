//! `parallel.recompute_layers`: full recomputation of only the first layers of each pipeline
//! chunk (Megatron-LM's block method, fms-fsdp's share of checkpointed blocks), the others
//! keeping their activations.

use crate::common;

use clustersim::report::training::TrainingReport;
use common::{count_ops as count, training_of};

fn scenario(parallel: &str) -> String {
    common::h100_training(
        8,
        "preset = \"llama-3.1-8b\"\nseq_len = 4096",
        &format!("dp = 8\nmicro_batch = 1\nglobal_batch = 8\nzero = 3\n{parallel}"),
    )
}

fn report(parallel: &str) -> TrainingReport {
    common::typed_outcome("blocks.toml", &scenario(parallel)).unwrap_or_else(|e| panic!("{e}"))
}

fn recomputed(r: &TrainingReport) -> f64 {
    r.flops.hardware_per_step / r.flops.model_per_step - 1.0
}

#[test]
fn a_share_of_the_layers_recomputes_a_share_of_the_forward() {
    let none = report("recompute = \"none\"");
    let full = report("recompute = \"full\"");
    let half = report("recompute = \"full\"\nrecompute_layers = 16");
    assert!(none.iteration_time_s < half.iteration_time_s);
    assert!(half.iteration_time_s < full.iteration_time_s);
    let activations = |r: &TrainingReport| r.memory.breakdown_bytes.activations;
    assert!(activations(&full) < activations(&half) && activations(&half) < activations(&none));
    // Half the layers rerun their forward: half full recomputation's extra FLOPs.
    let share = recomputed(&half) / recomputed(&full);
    assert!((share - 0.5).abs() < 1e-9, "{share}");
    // The step graph reruns 16 of 32 layers' forwards: 48 QKV projections forward, not 64.
    let out = common::run(
        "blocks.toml",
        &scenario("recompute = \"full\"\nrecompute_layers = 16"),
        &[],
    );
    assert_eq!(count(&out, "qkv_proj"), 32 + 16);
    assert_eq!(training_of(&out).parallel.recompute_layers, Some(16));
}

#[test]
fn every_layer_is_full_recomputation() {
    let full = report("recompute = \"full\"");
    let all = report("recompute = \"full\"\nrecompute_layers = 32");
    assert_eq!(full.iteration_time_s, all.iteration_time_s);
    assert_eq!(
        full.memory.peak_bytes_per_gpu,
        all.memory.peak_bytes_per_gpu
    );
    assert_eq!(full.flops.hardware_per_step, all.flops.hardware_per_step);
}

/// Under pipeline parallelism the count is per chunk: 4 layers of each of 2 stages' 16.
#[test]
fn the_count_is_per_pipeline_chunk() {
    let text = |parallel: &str| {
        common::h100_training(
            8,
            "preset = \"llama-3.1-8b\"\nseq_len = 4096",
            &format!("pp = 2\ndp = 4\nmicro_batch = 1\nglobal_batch = 8\n{parallel}"),
        )
    };
    let run = |p: &str| -> TrainingReport {
        common::typed_outcome("pp.toml", &text(p)).unwrap_or_else(|e| panic!("{e}"))
    };
    let full = run("recompute = \"full\"");
    let four = run("recompute = \"full\"\nrecompute_layers = 4");
    let share = recomputed(&four) / recomputed(&full);
    assert!((share - 8.0 / 32.0).abs() < 1e-9, "{share}");
}

#[test]
fn recompute_layers_errors_name_the_key() {
    let err = |parallel: &str| {
        common::typed_outcome::<TrainingReport>("bad.toml", &scenario(parallel)).unwrap_err()
    };
    let e = err("recompute = \"selective\"\nrecompute_layers = 4");
    assert!(
        e.contains("bad.toml") && e.contains("recompute_layers"),
        "{e}"
    );
    assert!(e.contains("recompute = \"full\""), "{e}");
    let e = err("recompute = \"full\"\nrecompute_layers = 0");
    assert!(e.contains("from 1 to the model's 32 layers"), "{e}");
    let e = err("recompute = \"full\"\nrecompute_layers = 33");
    assert!(e.contains("32 layers"), "{e}");
}
