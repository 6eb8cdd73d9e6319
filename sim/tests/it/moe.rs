//! Mixture-of-experts training with expert parallelism: sharded experts, all-to-all dispatch and
//! combine, FLOPs counted on the active parameters.

use crate::common;

use clustersim::RunOutput;
use common::{count_ops as count, training_of};

fn text(ep: u32) -> String {
    common::h100_training(
        8,
        r#"
        preset = "mixtral-8x7b"
        seq_len = 2048
        layers = 4
        "#,
        &format!(
            r#"
            ep = {ep}
            micro_batch = 1
            global_batch = 8
            "#
        ),
    )
}

fn run(ep: u32) -> RunOutput {
    common::run("moe.toml", &text(ep), &[])
}

#[test]
fn expert_parallelism_shards_the_experts_and_exchanges_tokens() {
    let one = run(1);
    let eight = run(8);
    let weights = |o: &RunOutput| training_of(o).memory.breakdown_bytes.weights as f64;
    // Four layers of 8 experts: with ep = 8 each GPU keeps one expert per layer.
    assert!(
        weights(&eight) < weights(&one) / 3.0,
        "{} {}",
        weights(&eight),
        weights(&one)
    );
    assert_eq!(
        count(&one, "ep_dispatch"),
        0,
        "no exchange without expert parallelism"
    );
    // Per layer: dispatch and combine forward, and again backward.
    assert_eq!(
        count(&eight, "ep_dispatch") + count(&eight, "ep_combine"),
        4 * 4
    );
    let r = training_of(&eight);
    assert!(r.communication_s.expert_parallel > 0.0);
    assert_eq!(r.parallel.ep, 8);
}

#[test]
fn model_flops_count_the_active_parameters() {
    let r = training_of(&run(8));
    let active = r.model.active_params as f64;
    let total = r.model.params as f64;
    assert!(active < total / 2.0);
    let tokens = 8.0 * 2048.0;
    let flops = r.flops.model_per_step;
    // 6 FLOPs per active weight per token (the input embedding is a lookup, the output projection
    // a GEMM: Mixtral's tables are untied, 32000 x 4096 each), plus attention.
    let table = 32000.0 * 4096.0;
    let dense_estimate = 6.0 * (active - table) * tokens;
    assert!(
        flops > dense_estimate && flops < dense_estimate * 1.3,
        "{flops} {dense_estimate}"
    );
}

#[test]
fn expert_parallelism_needs_experts_it_can_divide() {
    let e = common::refused("moe.toml", &text(3), "ep = 3 accepted");
    assert!(e.message.contains("does not divide"), "{}", e.message);
    let dense = common::h100_training(8, r#"preset = "gpt3-1.3b""#, "ep = 2");
    let err = common::refused("dense.toml", &dense, "ep on a dense model is refused");
    assert!(
        err.message.contains("needs a mixture-of-experts model"),
        "{}",
        err.message
    );
}

/// Bytes of every operation named `name`, distinct and sorted.
fn bytes_of(o: &RunOutput, name: &str) -> Vec<u64> {
    let (ops, _) = o.graph.expand(&o.timeline);
    let mut b: Vec<u64> = ops
        .ops
        .iter()
        .filter(|op| op.name == name)
        .map(|op| op.bytes as u64)
        .collect();
    b.sort_unstable();
    b.dedup();
    b
}

#[test]
fn tensor_parallel_experts_exchange_a_ranks_share_and_gather_the_routed_copies() {
    // A micro-batch's activation on a tensor-parallel group: 2,048 tokens of 4,096 bf16 values.
    let act = 2048 * 4096 * 2;
    let top_k = 2; // Mixtral
    let with_tp = |sp: bool| {
        let t = text(4).replace(
            "ep = 4",
            &format!("ep = 4\ntp = 2\nsequence_parallel = {sp}"),
        );
        common::run("moe.toml", &t, &[])
    };
    let sp = with_tp(true);
    // Under sequence parallelism a rank sends its own tokens' copies: half the group's.
    assert_eq!(bytes_of(&sp, "ep_dispatch"), [top_k * act / 2]);
    // Between the two all-to-alls the gathers carry the routed copies, elsewhere the activation.
    assert_eq!(bytes_of(&sp, "tp_all_gather"), [act, top_k * act]);
    // Without it every rank holds the group's tokens and sends all their copies.
    assert_eq!(bytes_of(&with_tp(false), "ep_dispatch"), [top_k * act]);
}
