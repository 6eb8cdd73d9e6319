//! Local SGD across sites (`parallel.local_steps`, DiLoCo and DiLoCoX).

use crate::common;

use clustersim::report::training::TrainingReport;
use common::{number, section};
use serde_json::Value;

const TEXT: &str = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 2
gpus_per_node = 8
[cluster.inter_node]
topology = "wan"
sites = 2
nic_bandwidth = "400 Gb/s"
wan_bandwidth = "1 Gb/s"
wan_latency = "10 ms"
[model]
preset = "gpt3-1.3b"
seq_len = 1024
[parallel]
tp = 2
order = "tp-cp-pp-dp"
micro_batch = 1
global_batch = 64
"#;

fn run(sets: &[&str]) -> TrainingReport {
    common::training("local-sgd.toml", TEXT, sets)
}

/// A training report's `local_sgd` section.
fn local_sgd(r: &TrainingReport) -> &Value {
    section(&r.local_sgd, "local_sgd")
}

#[test]
fn local_steps_keep_the_slow_link_out_of_most_steps() {
    let sync = run(&[]);
    let local = run(&["parallel.local_steps=50"]);
    let step = |r: &TrainingReport| r.iteration_time_s;
    assert!(
        step(&local) < step(&sync) / 5.0,
        "{} vs {}",
        step(&local),
        step(&sync)
    );
    let l = local_sgd(&local);
    let (inner, outer) = (number(l, "inner_step_s"), number(l, "outer_sync_s"));
    // Blocking outer synchronisation: its time spread over the round.
    assert!((step(&local) - (inner + outer / 50.0)).abs() < 1e-9 * step(&local));
    // Each site reduces gradients over its own 4 replicas; the outer state costs memory.
    assert_eq!(l["replicas_per_site"], 4);
    assert!(local.memory.breakdown_bytes.outer_optimizer > 0);
    assert_eq!(sync.memory.breakdown_bytes.outer_optimizer, 0);
}

#[test]
fn overlap_hides_the_outer_sync_behind_the_next_round() {
    let blocking = run(&["parallel.local_steps=50"]);
    let overlapped = run(&["parallel.local_steps=50", "parallel.outer_overlap=true"]);
    let l = local_sgd(&overlapped);
    let (inner, outer) = (number(l, "inner_step_s"), number(l, "outer_sync_s"));
    let expected = inner + (outer - 50.0 * inner).max(0.0) / 50.0;
    assert!((overlapped.iteration_time_s - expected).abs() < 1e-9 * expected);
    assert!(overlapped.iteration_time_s < blocking.iteration_time_s);
}

#[test]
fn compressing_the_outer_sync_shrinks_it() {
    let raw = run(&["parallel.local_steps=50"]);
    let small = run(&[
        "parallel.local_steps=50",
        "compression.outer.ratio=16",
        "compression.outer.compress=\"100 GB/s\"",
        "compression.outer.decompress=\"100 GB/s\"",
    ]);
    let outer = |r: &TrainingReport| number(local_sgd(r), "outer_sync_s");
    assert!(
        outer(&small) < outer(&raw) / 8.0,
        "{} vs {}",
        outer(&small),
        outer(&raw)
    );
}

#[test]
fn local_sgd_needs_sites_and_replicas_that_split() {
    let cases = [
        (
            vec![
                "parallel.local_steps=10",
                "cluster.inter_node.topology=fat-tree",
            ],
            "this cluster is one site",
        ),
        (
            vec!["parallel.local_steps=10", "parallel.order=tp-cp-dp-pp"],
            "data parallelism outermost",
        ),
        (
            vec!["parallel.local_steps=10", "parallel.tp=8", "parallel.pp=2"],
            "split evenly",
        ),
    ];
    for (sets, says) in cases {
        let s = common::scenario("local-sgd.toml", TEXT, &sets);
        let e = clustersim::run(&s)
            .err()
            .unwrap_or_else(|| panic!("{sets:?} ran"));
        assert!(e.to_string().contains(says), "{sets:?}: {e}");
    }
}
