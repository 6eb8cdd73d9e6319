//! Per-link traffic of a training step (`[sim] record_links`): every group of every collective
//! counted on the links it crosses, as many times as the step runs it.

use crate::common;

use clustersim::report::training::TrainingReport;
use common::section;
use serde_json::Value;

fn report(text: &str, sets: &[&str]) -> TrainingReport {
    common::training("links.toml", text, sets)
}

fn links(r: &TrainingReport) -> &Vec<Value> {
    section(&r.links, "links")
        .as_array()
        .expect("record_links lists the links")
}

#[test]
fn pipeline_sends_cross_every_link_of_their_route_once_per_micro_batch() {
    // Two servers of one GPU, a stage on each: 4 micro-batches of 2,048 tokens x 2,048 hidden in
    // bf16 go forward (8 MiB each) and their gradients come back.
    let text = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 2
gpus_per_node = 1
[cluster.inter_node]
nic_bandwidth = "400 Gb/s"
[model]
preset = "gpt3-1.3b"
[parallel]
pp = 2
micro_batch = 1
global_batch = 4
[sim]
record_links = true
"#;
    let r = report(text, &[]);
    let per_direction = 4.0 * 2048.0 * 2048.0 * 2.0;
    let listed = links(&r);
    assert!(!listed.is_empty());
    for l in listed {
        let bytes = l["bytes"].as_f64().unwrap();
        assert!(
            (bytes - per_direction).abs() < 1e-6 * per_direction,
            "{} -> {}: {bytes}",
            l["from"],
            l["to"]
        );
        let busy = l["busy"].as_f64().unwrap();
        assert!(busy > 0.0 && busy < 1.0, "{busy}");
    }
    // Both directions of the route, and nothing else.
    let from = |name: &str| listed.iter().filter(|l| l["from"] == name).count();
    assert_eq!(from("node0/gpu0"), 1, "{listed:?}");
    assert_eq!(from("node1/gpu0"), 1, "{listed:?}");
}

#[test]
fn recording_changes_nothing_else_and_every_replica_is_counted() {
    let text = common::h100_training(
        8,
        r#"preset = "gpt3-1.3b""#,
        "tp = 2\ndp = 4\nmicro_batch = 1\nglobal_batch = 8",
    );
    let plain = report(&text, &[]);
    let recorded = report(&text, &["sim.record_links=true"]);
    assert!(plain.links.is_none());
    for (key, a, b) in [
        (
            "iteration_time_s",
            plain.iteration_time_s,
            recorded.iteration_time_s,
        ),
        (
            "tflops_per_gpu",
            plain.tflops_per_gpu,
            recorded.tflops_per_gpu,
        ),
        (
            "memory.peak_bytes_per_gpu",
            plain.memory.peak_bytes_per_gpu as f64,
            recorded.memory.peak_bytes_per_gpu as f64,
        ),
    ] {
        assert_eq!(a, b, "{key}");
    }
    // Every GPU of the node sends: tensor-parallel pairs and the data-parallel groups of both
    // tensor ranks.
    let senders: std::collections::BTreeSet<&str> = links(&recorded)
        .iter()
        .filter(|l| l["bytes"].as_f64().unwrap() > 0.0)
        .map(|l| l["from"].as_str().unwrap())
        .filter(|n| n.contains("/gpu"))
        .collect();
    assert_eq!(senders.len(), 8, "{senders:?}");
}

#[test]
fn other_kinds_refuse_to_record_links_at_the_key() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/serving/llama-3.1-8b-1xh100-offline.toml"
    ))
    .unwrap();
    let err = common::outcome(
        "serving.toml",
        &format!("{text}\n[sim]\nrecord_links = true\n"),
    )
    .expect_err("a serving run cannot record links");
    assert!(
        err.contains("sim.record_links") || err.contains("record_links"),
        "{err}"
    );
    assert!(err.contains("does not record link traffic"), "{err}");
}
