//! ZeRO stages in the training workload: what each shards, and the collectives ZeRO-3 adds.

mod common;

use clustersim::RunOutput;
use common::{count_ops, number};

fn run(zero: u8, micro_batches: u32) -> RunOutput {
    let text = common::h100_training(
        8,
        r#"preset = "gpt3-1.3b""#,
        &format!(
            r#"
            micro_batch = 1
            global_batch = {}
            zero = {zero}
            "#,
            8 * micro_batches
        ),
    );
    common::run("zero.toml", &text, &[])
}

fn part(out: &RunOutput, name: &str) -> f64 {
    number(&out.report, &format!("memory.breakdown_bytes.{name}"))
}

#[test]
fn each_stage_shards_one_more_kind_of_state() {
    let z: Vec<_> = (0..=3).map(|stage| run(stage, 1)).collect();
    let ratio = |a: &RunOutput, b: &RunOutput, p| part(a, p) / part(b, p);
    assert!((ratio(&z[0], &z[1], "optimizer") - 8.0).abs() < 1e-6);
    assert!((ratio(&z[1], &z[2], "gradients") - 8.0).abs() < 1e-6);
    assert_eq!(part(&z[1], "weights"), part(&z[0], "weights"));
    // ZeRO-3 keeps 1/8 of the weights plus two gathered layers.
    let layers = 24.0;
    let expected = part(&z[2], "weights") / 8.0 + 2.0 * (part(&z[2], "weights") * 0.96 / layers);
    let got = part(&z[3], "weights");
    assert!(
        (got - expected).abs() / expected < 0.05,
        "{got} vs {expected}"
    );
}

#[test]
fn zero_3_gathers_every_layer_twice_and_scatters_its_gradients_every_micro_batch() {
    let layers = 24;
    for micro_batches in [1, 3] {
        let out = run(3, micro_batches);
        let count = |name: &str| count_ops(&out, name);
        assert_eq!(
            count("param_all_gather"),
            2 * layers * micro_batches as usize
        );
        // One reduce-scatter per layer and micro-batch, plus the embedding table's.
        assert!(count("grad_reduce") >= layers * micro_batches as usize);
    }
    // ZeRO 1 and 2 all-gather the updated weights once, after the optimizer step.
    let z1 = run(1, 2);
    assert_eq!(count_ops(&z1, "param_all_gather"), 1);
}
