//! Unfused attention (`attention_kernel = "unfused"`, Megatron-LM before FlashAttention): its
//! score matrices cost time and memory, and selective recomputation trades the memory back for
//! a recomputed attention forward (Korthikanti et al. 2022).

use crate::common;

use clustersim::RunOutput;
use common::{count_ops as count, training_of};

fn run(kernel: Option<&str>, recompute: &str) -> RunOutput {
    let attention = kernel.map_or(String::new(), |k| format!("attention_kernel = \"{k}\""));
    let text = common::h100_training(
        8,
        &format!("preset = \"gpt3-1.3b\"\n{attention}"),
        &format!(
            r#"
            tp = 8
            micro_batch = 2
            global_batch = 2
            recompute = "{recompute}"
            "#
        ),
    );
    common::run("unfused.toml", &text, &[])
}

fn activations(out: &RunOutput) -> f64 {
    training_of(out).memory.breakdown_bytes.activations as f64
}

fn step(out: &RunOutput) -> f64 {
    training_of(out).iteration_time_s
}

#[test]
fn scores_are_kept_unless_selective_recomputation_recomputes_them() {
    let fused = run(None, "none");
    let unfused = run(Some("unfused"), "none");
    let selective = run(Some("unfused"), "selective");
    // GPT-3 1.3B: 24 layers, 16 heads (2 per rank at tp 8), seq 2048, micro-batch 2: each layer
    // keeps 5 a s^2 b / t bytes of softmax output, dropout mask and dropped probabilities.
    let per_layer = 5.0 * 2.0 * 2.0 * 2048.0 * 2048.0;
    let extra = activations(&unfused) - activations(&fused);
    assert!((extra / (24.0 * per_layer) - 1.0).abs() < 1e-9, "{extra}");
    assert_eq!(activations(&selective), activations(&fused));
    // With fused attention selective recomputation has nothing to recompute.
    assert_eq!(step(&run(None, "selective")), step(&fused));
}

#[test]
fn unfused_attention_is_slower_and_its_recomputation_costs_a_forward() {
    let fused = step(&run(None, "none"));
    let unfused = run(Some("unfused"), "none");
    let selective = run(Some("unfused"), "selective");
    assert!(step(&unfused) > fused, "{} vs {fused}", step(&unfused));
    assert!(step(&selective) > step(&unfused));
    // One recomputed attention forward per layer (24 layers, one micro-batch).
    assert_eq!(count(&selective, "attention"), 2 * 24);
    assert_eq!(count(&unfused, "attention"), 24);
}
