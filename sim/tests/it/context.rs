//! Context parallelism: the sequence split over ranks, with ring attention or all-gathered keys
//! and values.

use crate::common;

use clustersim::RunOutput;
use common::{count_ops as count, training_of};

fn run(cp: u32, algorithm: &str) -> RunOutput {
    run_with(&format!(
        r#"
        cp = {cp}
        cp_algorithm = "{algorithm}"
        micro_batch = 1
        global_batch = {}
        "#,
        8 / cp
    ))
}

/// Four Llama 3 8B layers on 8 H100s with the `[parallel]` keys `parallel`.
fn run_with(parallel: &str) -> RunOutput {
    let text = common::h100_training(
        8,
        r#"
        preset = "llama-3-8b"
        layers = 4
        "#,
        parallel,
    );
    common::run("cp.toml", &text, &[])
}

#[test]
fn activations_divide_by_cp() {
    let one = run(1, "ring");
    let four = run(4, "ring");
    let act = |o: &RunOutput| training_of(o).memory.breakdown_bytes.activations as f64;
    assert!((act(&one) / act(&four) - 4.0).abs() < 1e-9);
    assert_eq!(training_of(&four).parallel.dp, 2);
}

#[test]
fn ring_attention_passes_blocks_and_all_gather_gathers_them() {
    let layers = 4;
    let ring = run(4, "ring");
    // cp - 1 passes per attention, forward and backward; cp blocks each way.
    assert_eq!(count(&ring, "cp_ring_pass"), 2 * layers * 3);
    assert_eq!(count(&ring, "attention"), layers * 4);
    assert_eq!(count(&ring, "attention_bwd"), layers * 4);
    let gather = run(4, "all-gather");
    assert_eq!(count(&gather, "cp_kv_all_gather"), 2 * layers);
    assert_eq!(count(&gather, "cp_dkv_reduce_scatter"), layers);
    assert!(training_of(&gather).communication_s.context_parallel > 0.0);
}

#[test]
fn sequences_must_split_into_balanced_chunks() {
    let text = common::h100_training(
        8,
        r#"
        preset = "llama-3-8b"
        seq_len = 1000
        "#,
        "cp = 8",
    );
    let e = common::refused("cp.toml", &text, "1000 tokens do not split into 16 chunks");
    assert!(
        e.message.contains("2 x cp = 16 equal chunks"),
        "{}",
        e.message
    );
}

/// Context-parallel ranks hold the same weights: their gradients are reduced together with the
/// data-parallel replicas', and ZeRO shards the optimizer over both (Megatron-Core's and
/// torchtitan's grouping), so with one replica and eight context ranks the gradients are still
/// reduced and each GPU keeps an eighth of the optimizer states.
#[test]
fn zero_shards_and_gradients_reduce_over_context_ranks_too() {
    let with_zero = |zero: u32| {
        run_with(&format!(
            r#"
            cp = 8
            micro_batch = 1
            global_batch = 1
            zero = {zero}
            "#
        ))
    };
    let (none, one) = (with_zero(0), with_zero(1));
    assert_eq!(training_of(&one).parallel.dp, 1);
    assert!(
        count(&one, "grad_reduce") > 0,
        "the context ranks' gradients are reduced"
    );
    let optimizer = |o: &RunOutput| training_of(o).memory.breakdown_bytes.optimizer as f64;
    assert!((optimizer(&none) / optimizer(&one) - 8.0).abs() < 1e-9);
}

/// A rank holds a load-balanced share of the causal sequence, so either algorithm computes an
/// equal share of one sequence's causal attention: `cp` ranks together do what one GPU does
/// alone, forward and backward, and all-gathering the keys first adds no work.
#[test]
fn each_rank_computes_its_share_of_causal_attention_under_either_algorithm() {
    let flops = |o: &RunOutput, name: &str| -> f64 {
        o.graph
            .expand(&o.timeline)
            .0
            .ops
            .iter()
            .filter(|op| op.name == name)
            .map(|op| op.flops)
            .sum()
    };
    let one = run(1, "ring");
    for algorithm in ["ring", "all-gather"] {
        let four = run(4, algorithm);
        for name in ["attention", "attention_bwd"] {
            let share = flops(&four, name) * 4.0 / flops(&one, name);
            assert!((share - 1.0).abs() < 1e-9, "{algorithm} {name}: {share}");
        }
    }
}
