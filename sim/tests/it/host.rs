//! The host as a place to keep and compute things (`hw::host`, `[cluster.host]`): serving's
//! offloaded weights streamed layer by layer or computed on the CPUs (TwinPilots, paper #9);
//! training's optimizer on the host CPUs (ZeRO-Offload) or an in-network node (LuWu, paper #16).

use crate::common;

use clustersim::report::serving::ServingReport;
use clustersim::report::training::TrainingReport;
use common::{number, outcome, section, typed_paper};

/// A serving report's `offload` section: the first kind of replica's figure `key`.
fn first_kind(r: &ServingReport, key: &str) -> f64 {
    section(&r.offload, "offload")["kinds"][0][key]
        .as_f64()
        .unwrap()
}

const T4_13B: &str = r#"
name = "LLaMA-2-13B on a T4 with offloaded weights"
kind = "serving"
[cluster]
gpu = "T4"
gpus_per_node = 1
[model]
preset = "llama-2-13b"
dtype = "fp16"
[serving]
max_batch_size = 1
weights_offload = "14 GB"
[workload]
requests = 1
arrival = "offline"
prompt_tokens = 256
output_tokens = 16
"#;

/// TwinPilots: the CPUs compute where the weights lie, against streaming them over PCIe.
#[test]
fn twinpilots_computes_the_host_weights_on_the_cpus() {
    let prefetch: ServingReport = typed_paper("twinpilots-llama-2-13b-t4-prefetch.toml", &[]);
    let twin: ServingReport = typed_paper("twinpilots-llama-2-13b-t4-cpu.toml", &[]);
    let tpot = |r: &ServingReport| r.tpot_s.p50.unwrap();
    let ttft = |r: &ServingReport| r.ttft_s.p50.unwrap();
    // A batch-1 decode: DRAM at 70% of 282 GB/s against PCIe at 80% of 16 GB/s.
    assert!(
        tpot(&twin) < tpot(&prefetch) / 8.0,
        "{} {}",
        tpot(&twin),
        tpot(&prefetch)
    );
    // A 256-token prefill is more arithmetic for the CPUs: a smaller gain.
    let prefill_gain = ttft(&prefetch) / ttft(&twin);
    assert!(prefill_gain > 1.2, "{prefill_gain}");
    assert!(prefill_gain < tpot(&prefetch) / tpot(&twin));
    assert_eq!(section(&twin.offload, "offload")["mode"], "cpu");
    assert!(first_kind(&twin, "cpu_share_one_token") > 0.8);
    // A host with no memory bandwidth to speak of is left out: the prefetching baseline (at
    // 1 GB/s it would still take a thirty-second of the weights, in parallel with PCIe).
    let weak: ServingReport = typed_paper(
        "twinpilots-llama-2-13b-t4-cpu.toml",
        &[
            "cluster.host.memory_bandwidth=\"0.01 GB/s\"",
            "cluster.host.cpu_flops=\"10 GFLOP/s\"",
        ],
    );
    assert_eq!(tpot(&weak), tpot(&prefetch));
    assert_eq!(first_kind(&weak, "cpu_share_one_token"), 0.0);
}

/// Prefetching hides the kernels behind the copy; serial reading adds them.
#[test]
fn prefetching_overlaps_the_copy_with_the_kernels() {
    let mode = |m: &str| {
        common::serving(
            "t4.toml",
            T4_13B,
            &[&format!("serving.weights_offload_mode=\"{m}\"")],
        )
    };
    let (serial, prefetch) = (mode("serial"), mode("prefetch"));
    let copy = first_kind(&prefetch, "pcie_copy_s");
    // 14 GB at 12.8 GB/s.
    assert!((copy - 14e9 / 12.8e9).abs() < 1e-6, "{copy}");
    let (s, p) = (serial.tpot_s.p50.unwrap(), prefetch.tpot_s.p50.unwrap());
    assert!(p < s, "{p} {s}");
    assert!(
        p > copy && p < copy * 1.05,
        "prefetch {p} against the copy {copy}"
    );
    // The default (no mode) is serial, and says so.
    let default = common::serving("t4.toml", T4_13B, &[]);
    assert_eq!(default.tpot_s.p50.unwrap(), s);
    assert!(default.assumptions.iter().any(|a| a.contains("serial")));
    // The host's figures default to the DGX H100's and are listed.
    assert!(
        prefetch
            .assumptions
            .iter()
            .any(|a| a.contains("host memory of 2 TB")),
        "{:?}",
        prefetch.assumptions
    );
}

#[test]
fn host_figures_and_offload_modes_are_checked_at_their_keys() {
    let bad = |extra: &str, sets: &str| {
        let text = format!("{T4_13B}{extra}").replace(
            "weights_offload = \"14 GB\"",
            &format!("weights_offload = \"14 GB\"\n{sets}"),
        );
        outcome("t4.toml", &text).unwrap_err()
    };
    let e = bad(
        "[cluster.host]\ncpu_flops = \"0 TFLOP/s\"\n",
        "weights_offload_mode = \"cpu\"",
    );
    assert!(e.contains("cluster.host.cpu_flops"), "{e}");
    assert!(e.contains("must be positive"), "{e}");
    assert!(e.contains("t4.toml:"), "{e}");
    let e = bad(
        "[cluster.host]\nmemory = \"8 GB\"\n",
        "weights_offload_mode = \"cpu\"",
    );
    assert!(e.contains("more than the host's"), "{e}");
    let e = outcome(
        "t4.toml",
        &T4_13B.replace(
            "weights_offload = \"14 GB\"",
            "weights_offload_mode = \"prefetch\"",
        ),
    )
    .unwrap_err();
    assert!(e.contains("with no weights offloaded"), "{e}");
    let e = outcome(
        "t4.toml",
        &T4_13B.replace(
            "weights_offload = \"14 GB\"",
            "weights_offload = \"14 GB\"\nweights_offload_mode = \"disk\"",
        ),
    )
    .unwrap_err();
    assert!(e.contains("prefetch"), "{e}");
}

// ---- Training: the optimizer on the host CPUs (ZeRO-Offload) or on a node in the network (LuWu)

const ZERO_OFFLOAD_13B: &str = r#"
name = "ZeRO-Offload: 13B on one A100"
kind = "training"
[cluster]
gpu = "A100-80GB"
nodes = 1
gpus_per_node = 1
[model]
preset = "gpt3-13b"
seq_len = 2048
[parallel]
micro_batch = 1
global_batch = 4
zero = 2
recompute = "full"
optimizer_offload = "host"
"#;

/// ZeRO-Offload: a model whose Adam states overflow the GPU trains once they live on the host,
/// at the price of PCIe copies and a CPU step after the backward.
#[test]
fn zero_offload_moves_the_states_to_the_host_and_pays_pcie_and_cpu_time() {
    let offload = common::training("zo.toml", ZERO_OFFLOAD_13B, &[]);
    let on_gpu = common::training(
        "zo.toml",
        ZERO_OFFLOAD_13B,
        &["parallel.optimizer_offload=\"gpu\""],
    );
    assert!(!on_gpu.memory.fits);
    assert!(offload.memory.fits);
    assert_eq!(offload.memory.breakdown_bytes.optimizer, 0);
    // 12 bytes of Adam state and 4 of fp32 gradient a parameter, on the host.
    let params = offload.model.params as f64;
    let host = offload.memory.offloaded_bytes_per_gpu.unwrap() as f64;
    assert!((host / params - 16.0).abs() < 0.5, "{}", host / params);
    // The copies: 4 bytes a parameter of gradients down and 2 of weights up at 80% of Gen4 x16.
    let host_step = |r: &TrainingReport, key: &str| {
        number(section(&r.optimizer_offload, "optimizer_offload"), key)
    };
    let copies = host_step(&offload, "host_copies_s");
    let expected = 6.0 * params / (32e9 * 0.8);
    assert!(
        (copies / expected - 1.0).abs() < 0.05,
        "{copies} vs {expected}"
    );
    // The CPU step streams Adam's 30 bytes a parameter at 70% of 614 GB/s.
    let cpu = host_step(&offload, "optimizer_s");
    let expected = 30.0 * params / (614.4e9 * 0.7);
    assert!((cpu / expected - 1.0).abs() < 0.05, "{cpu} vs {expected}");
    // After the backward, the CPU step and the weights' return are exposed.
    let exposed = offload.breakdown_s.optimizer_offload.unwrap();
    assert!(exposed >= cpu, "{exposed} {cpu}");
    assert!(
        offload.iteration_time_s > on_gpu.iteration_time_s + cpu,
        "offloading is slower than the step that does not fit"
    );
    // A slower host shows in the step.
    let slow = common::training(
        "zo.toml",
        &format!("{ZERO_OFFLOAD_13B}[cluster.host]\nmemory_bandwidth = \"100 GB/s\"\n"),
        &[],
    );
    assert!(host_step(&slow, "optimizer_s") > 5.0 * cpu);
}

/// LuWu: the in-network optimizer takes the states and the parameters off the workers and hides
/// its step behind the backward; with the same traffic on the same links the step gains only
/// what the CPU optimizer cost.
#[test]
fn luwu_in_network_optimizer_removes_the_host_step_from_the_critical_path() {
    let host: TrainingReport = typed_paper("luwu-gpt3-175b-8xa100-100g-host.toml", &[]);
    let node: TrainingReport = typed_paper("luwu-gpt3-175b-8xa100-100g-network.toml", &[]);
    let t = |r: &TrainingReport| r.iteration_time_s;
    let exposed = host.breakdown_s.optimizer_offload.unwrap();
    assert!(exposed > 1.0, "{exposed}");
    assert!(node.breakdown_s.optimizer_offload.unwrap() < 0.1);
    assert!(t(&node) < t(&host));
    // Communication is the same pattern and bytes: the gain is the host's exposed step.
    assert_eq!(
        host.communication_s.data_parallel,
        node.communication_s.data_parallel
    );
    let gain = t(&host) - t(&node);
    assert!((gain - exposed).abs() < 0.1, "{gain} vs {exposed}");
    // The workers keep two gathered layers, not a shard of the weights.
    let w = |r: &TrainingReport| r.memory.breakdown_bytes.weights as f64;
    assert!(w(&node) < w(&host) / 5.0, "{} {}", w(&node), w(&host));
    // The optimizer kept on the GPUs does not fit: 262 GB of Adam state a GPU.
    let gpu: TrainingReport = typed_paper(
        "luwu-gpt3-175b-8xa100-100g-host.toml",
        &["parallel.optimizer_offload=\"gpu\""],
    );
    assert!(!gpu.memory.fits);
}

#[test]
fn optimizer_offload_is_refused_where_it_does_not_apply() {
    let refuse = |sets: &str, why: &str| {
        let text = ZERO_OFFLOAD_13B.replace("optimizer_offload = \"host\"", sets);
        let e = outcome("zo.toml", &text).unwrap_err();
        assert!(e.contains(why), "{e}");
        assert!(e.contains("zo.toml:"), "{e}");
    };
    let e = outcome("zo.toml", &ZERO_OFFLOAD_13B.replace("zero = 2", "zero = 0")).unwrap_err();
    assert!(e.contains("partitions its states"), "{e}");
    refuse("optimizer_offload = \"network\"", "ZeRO-3's pattern");
    refuse(
        "optimizer_offload = \"host\"\noptimizer = \"galore\"",
        "GaLore",
    );
    refuse("optimizer_offload = \"disk\"", "network");
}
