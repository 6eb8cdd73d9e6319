//! Rank order, optimizer state format and tensor-parallel communication overlap.

use crate::common;

use clustersim::report::training::TrainingReport;

fn report(sets: &[&str]) -> TrainingReport {
    let text = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 2
gpus_per_node = 8
[cluster.inter_node]
nic_bandwidth = "400 Gb/s"
[model]
preset = "gpt3-6.7b"
[parallel]
tp = 8
micro_batch = 1
global_batch = 8
"#;
    common::training("layout.toml", text, sets)
}

#[test]
fn tensor_parallel_groups_across_nodes_are_slower() {
    let inside = report(&[]);
    // With data parallelism (dp = 2) innermost, each tensor-parallel group spans both nodes.
    let across = report(&["parallel.order=dp-tp-cp-pp"]);
    let tp = |r: &TrainingReport| r.communication_s.tensor_parallel;
    assert!(
        tp(&across) > 2.0 * tp(&inside),
        "{} vs {}",
        tp(&across),
        tp(&inside)
    );
}

#[test]
fn eight_bit_adam_halves_the_optimizer_states() {
    let fp32 = report(&[]).memory.breakdown_bytes.optimizer as f64;
    let int8 = report(&["parallel.optimizer=adam-8bit"])
        .memory
        .breakdown_bytes
        .optimizer as f64;
    assert!((fp32 / int8 - 2.0).abs() < 1e-9);
}

#[test]
fn overlapping_tensor_parallel_communication_hides_it() {
    let blocking = report(&[]);
    let overlapped = report(&["parallel.tp_comm_overlap=true"]);
    let exposed = |r: &TrainingReport| r.breakdown_s.exposed_communication;
    // Small GEMMs at tp = 8 hide only part of their collectives.
    assert!(
        exposed(&overlapped) < 0.9 * exposed(&blocking),
        "{} vs {}",
        exposed(&overlapped),
        exposed(&blocking)
    );
    assert!(overlapped.iteration_time_s < blocking.iteration_time_s);
    // The same collectives run either way.
    assert_eq!(
        overlapped.communication_s.tensor_parallel,
        blocking.communication_s.tensor_parallel
    );
}
