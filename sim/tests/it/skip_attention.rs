//! `[model] skip_attention_layers`: the last layers without their attention sublayer, in serving
//! (iteration time, weights, KV cache) and in training (step graph, estimate, memory).

use crate::common;

use clustersim::report::serving::ServingReport;
use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use clustersim::workload::training::{self, estimate::Estimator};

/// Attention weights of one Llama 2 7B layer: Q, K, V and output projections, 4096 x 4096 each.
const LLAMA_2_7B_ATTENTION: f64 = 4.0 * 4096.0 * 4096.0;

fn serving(skip: u32) -> ServingReport {
    let text = format!(
        r#"
kind = "serving"
[cluster]
gpu = "A100-80GB"
nodes = 1
gpus_per_node = 2
[model]
preset = "llama-2-7b"
dtype = "fp16"
skip_attention_layers = {skip}
[serving]
replicas = 1
tp = 2
max_batch_size = 8
[workload]
requests = 8
arrival = "offline"
prompt_tokens = 1024
output_tokens = 64
"#
    );
    common::serving("skip.toml", &text, &[])
}

#[test]
fn serving_without_attention_in_the_last_layers_is_faster_and_holds_more_kv() {
    let (full, skip) = (serving(0), serving(8));
    // Each of the two tensor-parallel GPUs holds half of 8 layers' attention weights fewer.
    let weights = |r: &ServingReport| r.memory.weights_bytes_per_gpu.unwrap() as f64;
    let saved = weights(&full) - weights(&skip);
    assert!(
        (saved - 8.0 * LLAMA_2_7B_ATTENTION / 2.0 * 2.0).abs() < 1.0,
        "{saved} bytes"
    );
    // 24 layers of KV cache a token instead of 32, in more memory: over 32/24 times the blocks.
    let blocks = |r: &ServingReport| r.kv_cache.blocks_per_replica.unwrap() as f64;
    assert!(blocks(&skip) > blocks(&full) * 32.0 / 24.0);
    // Decode and prefill both lose a quarter of their attention sublayers.
    for (metric, a, b) in [
        ("tpot_s.p50", full.tpot_s.p50, skip.tpot_s.p50),
        ("ttft_s.p50", full.ttft_s.p50, skip.ttft_s.p50),
    ] {
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(b < 0.95 * a && b > 0.6 * a, "{metric}: {b} vs {a}");
    }
}

fn training_text(skip: u32, parallel: &str) -> String {
    common::h100_training(
        8,
        &format!(
            "preset = \"llama-2-7b\"\nlayers = 8\nseq_len = 2048\nskip_attention_layers = {skip}"
        ),
        &format!("micro_batch = 1\nglobal_batch = 8\n{parallel}"),
    )
}

#[test]
fn training_without_attention_in_the_last_layers_is_faster_and_lighter() {
    for parallel in ["tp = 2\npp = 2", "tp = 2\ncp = 2", "zero = 3"] {
        let run = |skip| common::training("skip.toml", &training_text(skip, parallel), &[]);
        let (full, skip) = (run(0), run(3));
        let step = |r: &TrainingReport| r.iteration_time_s;
        assert!(
            step(&skip) < 0.97 * step(&full),
            "{parallel}: {} vs {}",
            step(&skip),
            step(&full)
        );
        // The busiest stage's weights; with pp = 2 the skipped layers are all on the other stage.
        let weights = |r: &TrainingReport| r.memory.breakdown_bytes.weights;
        if parallel.contains("pp") {
            assert_eq!(weights(&skip), weights(&full));
        } else {
            assert!(weights(&skip) < weights(&full), "{parallel}");
        }
    }
}

#[test]
fn the_planner_estimate_follows_the_skipped_layers() {
    for parallel in ["tp = 2\npp = 2", "tp = 2\ncp = 2"] {
        let times = |skip| {
            let scenario = common::scenario("skip.toml", &training_text(skip, parallel), &[]);
            let mut setup =
                clustersim::scenario::lower::training::resolve(&scenario).expect("resolves");
            let compute =
                clustersim::scenario::lower::training::compute_model(&scenario, &mut setup)
                    .expect("compute");
            let estimate = Estimator::new(&compute).estimate(&setup).iteration_s;
            let simulated = training::simulate(setup, &compute).expect("one GPU per stage");
            (
                estimate,
                TrainingReport::of_run(&simulated.report).iteration_time_s,
            )
        };
        let (full, skip) = (times(0), times(3));
        assert!(
            skip.0 < 0.97 * full.0,
            "{parallel}: estimate {skip:?} vs {full:?}"
        );
        // The estimate keeps close to the simulation with the sublayers gone.
        assert!(
            (skip.0 / skip.1 - 1.0).abs() < 0.25,
            "{parallel}: estimate {} vs simulated {}",
            skip.0,
            skip.1
        );
    }
}

#[test]
fn skipping_every_attention_sublayer_is_refused_at_its_key() {
    let e = common::refused(
        "skip.toml",
        &training_text(8, "tp = 2"),
        "skip_attention_layers",
    );
    assert!(e.to_string().contains("use 0 to 7"), "{e}");
}
