//! Context parallelism: the sequence split over ranks, with ring attention or all-gathered keys
//! and values.

use clustersim::Scenario;
use std::path::Path;

fn run(cp: u32, algorithm: &str) -> clustersim::RunOutput {
    let text = format!(
        r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "llama-3-8b"
layers = 4
[parallel]
cp = {cp}
cp_algorithm = "{algorithm}"
micro_batch = 1
global_batch = {}
"#,
        8 / cp
    );
    let s = Scenario::parse(Path::new("cp.toml"), text, &[]).unwrap_or_else(|e| panic!("{e}"));
    clustersim::run(&s).unwrap_or_else(|e| panic!("{e}"))
}

fn count(out: &clustersim::RunOutput, name: &str) -> usize {
    out.graph.ops.iter().filter(|o| o.name == name).count()
}

#[test]
fn activations_divide_by_cp() {
    let one = run(1, "ring");
    let four = run(4, "ring");
    let act = |o: &clustersim::RunOutput| {
        o.report["memory"]["breakdown_bytes"]["activations"]
            .as_f64()
            .unwrap()
    };
    assert!((act(&one) / act(&four) - 4.0).abs() < 1e-9);
    assert_eq!(four.report["parallel"]["dp"], 2);
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
    assert!(
        gather.report["communication_s"]["context_parallel"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn sequences_must_split_into_balanced_chunks() {
    let text = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "llama-3-8b"
seq_len = 1000
[parallel]
cp = 8
"#;
    let s = Scenario::parse(Path::new("cp.toml"), text.into(), &[]).unwrap();
    let e = clustersim::run(&s)
        .err()
        .expect("1000 tokens do not split into 16 chunks");
    assert!(
        e.message.contains("2 x cp = 16 equal chunks"),
        "{}",
        e.message
    );
}
