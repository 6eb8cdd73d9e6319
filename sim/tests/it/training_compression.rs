//! Compressed collectives per parallel dimension of a training step (`[compression]`).

use crate::common;

use clustersim::report::training::TrainingReport;
use common::number;

/// Data parallelism over a slow network: the gradient reduction is what compression can shrink.
const SLOW: &str = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 4
gpus_per_node = 8
[cluster.inter_node]
nic_bandwidth = "10 Gb/s"
nics_per_node = 1
[model]
preset = "gpt3-1.3b"
seq_len = 1024
[parallel]
tp = 8
micro_batch = 1
global_batch = 4
"#;

fn data(ratio: f64, compress: &str) -> Vec<String> {
    vec![
        format!("compression.data.ratio={ratio}"),
        format!("compression.data.compress={compress}"),
        format!("compression.data.decompress={compress}"),
    ]
}

fn step(sets: &[String]) -> TrainingReport {
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    common::training("compression.toml", SLOW, &sets)
}

#[test]
fn compressing_gradients_on_a_slow_network_shortens_the_step() {
    let raw = step(&[]);
    let fast = step(&data(8.0, "200 GB/s"));
    let comm = |r: &TrainingReport| r.communication_s.data_parallel;
    assert!(
        comm(&fast) < comm(&raw) / 4.0,
        "{} vs {}",
        comm(&fast),
        comm(&raw)
    );
    assert!(fast.iteration_time_s < raw.iteration_time_s);
    assert_eq!(fast.parallel.compression["data"]["ratio"], 8.0);
    assert!(
        raw.parallel
            .compression
            .as_object()
            .is_some_and(|o| o.is_empty())
    );
}

#[test]
fn a_slow_compressor_costs_more_than_it_saves() {
    let raw = step(&[]).communication_s.data_parallel;
    let slow = step(&data(1.2, "0.2 GB/s")).communication_s.data_parallel;
    assert!(slow > raw, "{slow} vs {raw}");
}

#[test]
fn only_the_named_dimension_is_compressed() {
    let raw = step(&[]);
    let tensor = step(&[
        "compression.tensor.ratio=4".to_string(),
        "compression.tensor.compress=\"50 GB/s\"".to_string(),
        "compression.tensor.decompress=\"50 GB/s\"".to_string(),
    ]);
    assert_eq!(
        raw.communication_s.data_parallel,
        tensor.communication_s.data_parallel
    );
    assert_ne!(
        raw.communication_s.tensor_parallel,
        tensor.communication_s.tensor_parallel
    );
}

#[test]
fn bad_compression_settings_are_located_errors() {
    let mut sets = data(0.5, "100 GB/s");
    let s = common::scenario(
        "compression.toml",
        SLOW,
        &sets.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let e = clustersim::run(&s)
        .err()
        .expect("a ratio below 1 is refused");
    assert!(e.to_string().contains("ratio is 1 or more"), "{e}");
    sets.truncate(1);
    let text = format!("{SLOW}[compression.data]\nratio = 2.0\n");
    let e = common::outcome("compression.toml", &text).expect_err("throughputs are required");
    assert!(e.contains("compress"), "{e}");
}

/// Four pipeline stages over a slow network, one GPU each: what Clapping compresses.
const PIPELINE: &str = r#"
kind = "training"
[cluster]
gpu = "A100-80GB"
nodes = 4
gpus_per_node = 1
[cluster.inter_node]
nic_bandwidth = "1 Gb/s"
nics_per_node = 1
[model]
preset = "gpt3-1.3b"
seq_len = 1024
[parallel]
pp = 4
micro_batch = 2
global_batch = 16
"#;

const PIPELINE_COMPRESSION: &str = "[compression.pipeline]\nratio = 4.0\ncompress = \"100 GB/s\"\ndecompress = \"100 GB/s\"\nper_hop = false\n";

#[test]
fn error_feedback_keeps_a_buffer_per_message_sent() {
    let plain = common::training(
        "pipeline.toml",
        &format!("{PIPELINE}{PIPELINE_COMPRESSION}"),
        &[],
    );
    let text = format!("{PIPELINE}{PIPELINE_COMPRESSION}error_feedback = true\n");
    let fed = common::training("pipeline.toml", &text, &[]);
    assert_eq!(fed.parallel.compression["pipeline"]["error_feedback"], true);
    // The same step: the buffers cost memory, not time.
    assert_eq!(plain.iteration_time_s, fed.iteration_time_s);
    assert_eq!(plain.memory.breakdown_bytes.error_feedback, 0);
    // The first stage (the peak here) sends one forward message per micro-batch: 8 micro-batches
    // of 2 x 1,024 tokens x 2,048 hidden in fp32.
    let buffers = fed.memory.breakdown_bytes.error_feedback as f64;
    assert_eq!(fed.memory.stage, 0);
    assert_eq!(buffers, 8.0 * 4.0 * 2048.0 * 2048.0);
    // A middle stage sends both ways: twice the buffers.
    let s = common::scenario("pipeline.toml", &text, &[]);
    let setup = clustersim::scenario::lower::training::resolve(&s).expect("resolves");
    let middle = clustersim::workload::training::memory::error_feedback(&setup, 1);
    assert_eq!(middle, 2.0 * buffers);
}

#[test]
fn error_feedback_is_refused_outside_pipeline_messages() {
    let text = format!(
        "{SLOW}[compression.data]\nratio = 4.0\ncompress = \"100 GB/s\"\ndecompress = \"100 GB/s\"\nerror_feedback = true\n"
    );
    let e = common::outcome("compression.toml", &text).expect_err("data-parallel error feedback");
    assert!(e.contains("compression.toml:"), "{e}");
    assert!(e.contains("pipeline-parallel messages only"), "{e}");
}

/// A per-hop gradient codec pipelined with the ring (NCCLZ's overlap) costs the step less than
/// the same codec added to each ring step; saved activations refuse the key.
#[test]
fn an_overlapped_gradient_codec_shortens_the_step() {
    let mut sets = data(8.0, "20 GB/s");
    sets.push("compression.data.per_hop=true".into());
    let added = step(&sets);
    sets.push("compression.data.overlap=true".into());
    let piped = step(&sets);
    let seconds = |r: &TrainingReport| r.iteration_time_s;
    assert!(
        seconds(&piped) < seconds(&added),
        "{} vs {}",
        seconds(&piped),
        seconds(&added)
    );
    assert_eq!(
        number(&piped.parallel.compression, "data.overlap_slice_bytes"),
        1048576.0
    );
    let text = format!(
        "{SLOW}[compression.activations]\nratio = 2.0\ncompress = \"100 GB/s\"\ndecompress = \"100 GB/s\"\noverlap = true\n"
    );
    let e = common::outcome("compression.toml", &text).expect_err("overlap on activations");
    assert!(e.contains("overlap") && e.contains("does not apply"), "{e}");
}
