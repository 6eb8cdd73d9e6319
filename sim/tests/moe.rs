//! Mixture-of-experts training with expert parallelism: sharded experts, all-to-all dispatch and
//! combine, FLOPs counted on the active parameters.

use clustersim::Scenario;
use std::path::Path;

fn parse(ep: u32, extra: &str) -> Result<Scenario, clustersim::scenario::error::ScenarioError> {
    let text = format!(
        r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "mixtral-8x7b"
seq_len = 2048
layers = 4
{extra}
[parallel]
ep = {ep}
micro_batch = 1
global_batch = 8
"#
    );
    Scenario::parse(Path::new("moe.toml"), text, &[])
}

fn run(ep: u32) -> clustersim::RunOutput {
    let s = parse(ep, "").unwrap_or_else(|e| panic!("{e}"));
    clustersim::run(&s).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn expert_parallelism_shards_the_experts_and_exchanges_tokens() {
    let one = run(1);
    let eight = run(8);
    let weights = |o: &clustersim::RunOutput| {
        o.report["memory"]["breakdown_bytes"]["weights"]
            .as_f64()
            .unwrap()
    };
    // Four layers of 8 experts: with ep = 8 each GPU keeps one expert per layer.
    assert!(
        weights(&eight) < weights(&one) / 3.0,
        "{} {}",
        weights(&eight),
        weights(&one)
    );
    let count = |o: &clustersim::RunOutput, name: &str| {
        o.graph.ops.iter().filter(|op| op.name == name).count()
    };
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
    assert!(
        eight.report["communication_s"]["expert_parallel"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(eight.report["parallel"]["ep"], 8);
}

#[test]
fn model_flops_count_the_active_parameters() {
    let out = run(8);
    let r = &out.report;
    let active = r["model"]["active_params"].as_f64().unwrap();
    let total = r["model"]["params"].as_f64().unwrap();
    assert!(active < total / 2.0);
    let tokens = 8.0 * 2048.0;
    let flops = r["flops"]["model_per_step"].as_f64().unwrap();
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
    let e = match clustersim::run(&parse(3, "").unwrap()) {
        Err(err) => err,
        Ok(_) => panic!("ep = 3 accepted"),
    };
    assert!(e.message.contains("does not divide"), "{}", e.message);
    let dense = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "gpt3-1.3b"
[parallel]
ep = 2
"#;
    let s = Scenario::parse(Path::new("dense.toml"), dense.into(), &[]).unwrap();
    let err = clustersim::run(&s)
        .err()
        .expect("ep on a dense model is refused");
    assert!(
        err.message.contains("needs a mixture-of-experts model"),
        "{}",
        err.message
    );
}
