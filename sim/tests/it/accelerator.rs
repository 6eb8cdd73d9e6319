//! Accelerators defined by their own figures (`[cluster.accelerator]`): every workload prices
//! kernels on them as on a catalog GPU; bad figures are refused at their keys.

use crate::common;

use clustersim::report::serving::ServingReport;
use common::{number, section};

const SERVING: &str = r#"
name = "custom device"
kind = "serving"
[cluster]
gpus_per_node = 1
[cluster.accelerator]
name = "test device"
peak = { fp16 = "100 TFLOP/s" }
memory = "32 GiB"
memory_bandwidth = "1000 GB/s"
tdp = "300 W"
idle_power = "30 W"
[model]
preset = "llama-2-7b"
dtype = "fp16"
[serving]
max_batch_size = 1
[workload]
requests = 2
arrival = "offline"
prompt_tokens = 64
output_tokens = 64
"#;

#[test]
fn serving_runs_on_a_defined_device_and_bandwidth_sets_decode() {
    let slow = common::serving("device.toml", SERVING, &[]);
    assert_eq!(slow.cluster.gpu, "test device");
    let fast = common::serving(
        "device.toml",
        SERVING,
        &["cluster.accelerator.memory_bandwidth=\"2000 GB/s\""],
    );
    let tpot = |r: &ServingReport| r.tpot_s.p50.unwrap();
    assert!(
        tpot(&fast) < 0.7 * tpot(&slow),
        "{} {}",
        tpot(&fast),
        tpot(&slow)
    );
    // Busy all the time at batch 1: the board's full power.
    assert!((number(section(&slow.energy, "energy"), "board_watts_per_gpu") - 300.0).abs() < 1.0);
}

#[test]
fn a_device_and_a_catalog_gpu_are_not_both_given() {
    let text = SERVING.replace("gpus_per_node = 1", "gpus_per_node = 1\ngpu = \"H100\"");
    let e = common::refused("device.toml", &text, "both");
    assert!(e.to_string().contains("cluster.gpu"), "{e}");
}

#[test]
fn bad_figures_are_refused_at_their_keys() {
    for (from, to, says) in [
        (
            "peak = { fp16 = \"100 TFLOP/s\" }",
            "peak = { int8 = \"100 TOP/s\" }",
            "fp16 peak",
        ),
        (
            "idle_power = \"30 W\"",
            "idle_power = \"400 W\"",
            "above the board power",
        ),
        ("tdp = \"300 W\"", "tdp = \"300\"", "no unit"),
        (
            "idle_power = \"30 W\"",
            "[cluster.accelerator.efficiency]\nmemory_fraction = 1.5",
            "fraction",
        ),
        (
            "idle_power = \"30 W\"",
            "sustained_clock = 1.2",
            "outside (0, 1]",
        ),
    ] {
        let text = SERVING.replace(from, to);
        let e = common::outcome("device.toml", &text).expect_err(says);
        assert!(e.contains(says), "{says}: {e}");
        assert!(e.contains("device.toml:"), "located: {e}");
    }
}

#[test]
fn training_runs_on_a_defined_device_too() {
    let text = r#"
name = "training on a custom device"
kind = "training"
[cluster]
nodes = 1
gpus_per_node = 8
[cluster.accelerator]
name = "test device"
peak = { fp16 = "400 TFLOP/s", bf16 = "400 TFLOP/s", fp32 = "50 TFLOP/s" }
memory = "96 GiB"
memory_bandwidth = "3000 GB/s"
tdp = "500 W"
host_bandwidth = "64 GB/s"
[model]
preset = "llama-2-7b"
seq_len = 2048
dtype = "bf16"
[parallel]
tp = 8
micro_batch = 1
global_batch = 8
"#;
    let r = common::training("train.toml", text, &[]);
    assert!(r.iteration_time_s > 0.0);
    assert!(number(section(&r.energy, "energy"), "board_watts_per_gpu") <= 500.0);
    assert_eq!(number(section(&r.power, "power"), "gemm_clock"), 1.0);
    // A device that cannot hold its clock under sustained matrix work: its GEMMs run slower at
    // the same board power.
    let held = common::training(
        "train.toml",
        text,
        &["cluster.accelerator.sustained_clock=0.9"],
    );
    let clock = number(section(&held.power, "power"), "gemm_clock");
    assert!(clock > 0.89 && clock < 0.95, "{clock}");
    assert!(held.iteration_time_s > r.iteration_time_s);
    assert!(number(section(&held.power, "power"), "peak_watts") <= 500.0 + 1e-6);
}
