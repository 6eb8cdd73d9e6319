//! ZeRO stages in the training workload: what each shards, and the collectives ZeRO-3 adds.

use crate::common;

use clustersim::RunOutput;
use clustersim::report::training::{MemoryParts, TrainingReport};
use clustersim::report::typed::TypedReport;
use common::{count_ops, number};

fn run(zero: u8, micro_batches: u32) -> RunOutput {
    let text = common::h100_training(
        8,
        r#"preset = "gpt3-1.3b""#,
        &format!(
            r#"
            micro_batch = 1
            global_batch = {}
            zero = {zero}
            "#,
            8 * micro_batches
        ),
    );
    common::run("zero.toml", &text, &[])
}

/// The run's report, typed.
fn typed(out: &RunOutput) -> TrainingReport {
    TrainingReport::of_run(&out.report)
}

/// The bytes of one part of a GPU's memory, picked from the report's breakdown.
fn part(out: &RunOutput, pick: fn(&MemoryParts) -> u64) -> f64 {
    pick(&typed(out).memory.breakdown_bytes) as f64
}

#[test]
fn each_stage_shards_one_more_kind_of_state() {
    let z: Vec<_> = (0..=3).map(|stage| run(stage, 1)).collect();
    let ratio = |a: &RunOutput, b: &RunOutput, p: fn(&MemoryParts) -> u64| part(a, p) / part(b, p);
    assert!((ratio(&z[0], &z[1], |m| m.optimizer) - 8.0).abs() < 1e-6);
    assert!((ratio(&z[1], &z[2], |m| m.gradients) - 8.0).abs() < 1e-6);
    assert_eq!(part(&z[1], |m| m.weights), part(&z[0], |m| m.weights));
    // ZeRO-3 keeps 1/8 of the weights plus two gathered layers.
    let layers = 24.0;
    let expected =
        part(&z[2], |m| m.weights) / 8.0 + 2.0 * (part(&z[2], |m| m.weights) * 0.96 / layers);
    let got = part(&z[3], |m| m.weights);
    assert!(
        (got - expected).abs() / expected < 0.05,
        "{got} vs {expected}"
    );
}

#[test]
fn zero_3_gathers_every_layer_twice_and_scatters_its_gradients_every_micro_batch() {
    let layers = 24;
    for micro_batches in [1, 3] {
        let out = run(3, micro_batches);
        let count = |name: &str| count_ops(&out, name);
        assert_eq!(
            count("param_all_gather"),
            2 * layers * micro_batches as usize
        );
        // One reduce-scatter per layer and micro-batch, plus the embedding table's.
        assert!(count("grad_reduce") >= layers * micro_batches as usize);
    }
    // ZeRO 1 and 2 all-gather the updated weights once, after the optimizer step.
    let z1 = run(1, 2);
    assert_eq!(count_ops(&z1, "param_all_gather"), 1);
}

/// ZeRO-3 over `dp` A100s (8 a node, 8 x 200 Gb/s NICs each) with parameters gathered as
/// `gather` says.
fn gathered(gather: &str, dp: u32) -> RunOutput {
    common::run("gather.toml", &gathered_text(gather, dp), &[])
}

/// The scenario of [`gathered`].
fn gathered_text(gather: &str, dp: u32) -> String {
    format!(
        r#"
kind = "training"
[cluster]
gpu = "A100-SXM4-80GB"
nodes = {nodes}
gpus_per_node = 8
[cluster.inter_node]
topology = "fat-tree"
nic_bandwidth = "200 Gb/s"
nics_per_node = 8
[model]
layers = 8
hidden = 4096
heads = 32
seq_len = 2048
vocab = 50304
[parallel]
dp = {dp}
micro_batch = 1
global_batch = {dp}
zero = 3
param_gather = "{gather}"
"#,
        nodes = dp / 8
    )
}

/// On demand, each weight matrix is its own gather and reduction (plus the per-rank copies of
/// their lists), nothing overlaps them, and every call pays for the ranks it spans: the step is
/// slower than with prefetching, more so over more GPUs, and the wait is exposed communication.
#[test]
fn on_demand_gathers_block_compute_per_matrix_and_cost_more_with_more_ranks() {
    let layers = 8;
    let on_demand = gathered("on-demand", 16);
    // Four weight matrices a layer, gathered in the forward and again for the backward.
    assert_eq!(count_ops(&on_demand, "param_all_gather"), 2 * 4 * layers);
    assert_eq!(count_ops(&on_demand, "param_gather_copies"), 2 * 4 * layers);
    assert!(count_ops(&on_demand, "grad_list_copies") >= 4 * layers);
    let step = |o: &RunOutput| typed(o).iteration_time_s;
    let exposed = |o: &RunOutput| typed(o).breakdown_s.exposed_communication;
    let prefetch = gathered("prefetch", 16);
    assert!(exposed(&on_demand) > 2.0 * exposed(&prefetch));
    assert!(typed(&on_demand).breakdown_s.pipeline_bubble < 1e-9);
    let small = step(&on_demand) / step(&prefetch);
    let large = step(&gathered("on-demand", 256)) / step(&gathered("prefetch", 256));
    assert!(small > 1.05, "on demand over prefetch on 16 GPUs: {small}");
    assert!(large > small, "16 GPUs {small}, 256 GPUs {large}");
}

/// Before each on-demand gather the GPU sits idle while the host builds the per-rank output
/// list: one host loop a gather, as long as the ranks times the measured cost of one, and the
/// all-gather starts only after it.
#[test]
fn on_demand_gathers_wait_for_the_hosts_loop_over_the_ranks() {
    use clustersim::workload::training::HOST_LOOP_PER_RANK_S;
    for dp in [16, 256] {
        let out = gathered("on-demand", dp);
        let ops = &out.graph.ops;
        let loops: Vec<_> = ops
            .iter()
            .filter(|o| o.name == "param_gather_host_loop")
            .collect();
        assert_eq!(loops.len(), count_ops(&out, "param_all_gather"));
        for l in &loops {
            let expected = dp as f64 * HOST_LOOP_PER_RANK_S;
            assert!((l.duration.as_secs_f64() - expected).abs() < 1e-8, "{dp}");
        }
    }
    // FSDP's prefetching builds no such list.
    assert_eq!(
        count_ops(&gathered("prefetch", 16), "param_gather_host_loop"),
        0
    );
}

/// With full recomputation, DeepSpeed keeps a matrix gathered for the recomputed forward only
/// while its reuse distance stays under `stage3_max_reuse_distance` (1e9 parameters): at
/// hidden 4096 all four matrices of a layer stay for the backward, at GPT-3's hidden 12288 only
/// the MLP's down projection does (its up projection waits for 2 x 604 M), so the backward
/// gathers three of them again and the step is slower by those gathers.
#[test]
fn on_demand_regathers_for_the_backward_what_the_reuse_distance_releases() {
    let run = |hidden: u32, recompute: &str| {
        let text = common::h100_training(
            8,
            &format!("layers = 2\nhidden = {hidden}\nheads = 32\nseq_len = 2048\nvocab = 50304"),
            &format!(
                "dp = 8\nmicro_batch = 1\nglobal_batch = 8\nzero = 3\n\
                 param_gather = \"on-demand\"\nrecompute = \"{recompute}\""
            ),
        );
        common::run("reuse.toml", &text, &[])
    };
    // Forward, recomputed forward (kept for the backward): two gathers of four a layer.
    assert_eq!(count_ops(&run(4096, "full"), "param_all_gather"), 2 * 4 * 2);
    // GPT-3's width: three of the four gathered once more for the backward.
    let wide = run(12288, "full");
    assert_eq!(count_ops(&wide, "param_all_gather"), (4 + 4 + 3) * 2);
    assert_eq!(count_ops(&wide, "param_gather_copies"), (4 + 4 + 3) * 2);
    // Without recomputation the backward gathers all four again, whatever the width.
    assert_eq!(
        count_ops(&run(12288, "none"), "param_all_gather"),
        2 * 4 * 2
    );
}

#[test]
fn param_gather_needs_zero_3() {
    let text = common::h100_training(
        8,
        r#"preset = "gpt3-1.3b""#,
        "micro_batch = 1\nglobal_batch = 8\nzero = 1\nparam_gather = \"on-demand\"",
    );
    let err = common::outcome("gather.toml", &text).unwrap_err();
    assert!(
        err.contains("param_gather") && err.contains("zero = 3"),
        "{err}"
    );
}

/// ZeRO-3's gathers run beside the layers they prefetch for, holding SMs: the compute stream
/// slows by what the report's `contention` says, and a run whose collectives all block (DDP with
/// one micro-batch reduces beside the backward only) loses less.
#[test]
fn gathers_beside_the_layers_slow_them_and_the_report_says_by_how_much() {
    let z3 = typed(&run(3, 4));
    let slowed = number(&z3.contention, "compute_s");
    let rate = number(&z3.contention, "kernel_rate");
    assert!((rate - 108.0 / 132.0).abs() < 1e-6, "{rate}");
    assert!(slowed > 0.0, "{slowed}");
    // Kernels slowed all the way take 1/rate of their time: at most 1 - rate of the compute.
    let compute = z3.breakdown_s.compute;
    assert!(
        slowed <= compute * (1.0 - rate) + 1e-9,
        "{slowed} of {compute}"
    );
    let z0 = typed(&run(0, 4));
    assert!(number(&z0.contention, "compute_s") < slowed);
}

/// Over PCIe NCCL opens two channels, so a collective holds two blocks, not the 24 it holds
/// where NVLink joins the GPUs.
#[test]
fn over_pcie_a_collective_holds_two_blocks() {
    let text = common::h100_training(
        8,
        r#"preset = "gpt3-1.3b""#,
        "micro_batch = 1\nglobal_batch = 32\nzero = 3",
    )
    .replace(r#"gpu = "H100""#, r#"gpu = "L40S""#);
    let r = common::training("zero.toml", &text, &[]);
    assert_eq!(number(&r.contention, "collective_blocks"), 2.0);
    let rate = number(&r.contention, "kernel_rate");
    assert!((rate - 140.0 / 142.0).abs() < 1e-6, "{rate}");
}

/// Gathered on demand, a GPU holds the matrices in use, not two prefetched layers: without
/// recomputation one matrix at a time (the largest, an MLP projection of 4h^2), with full
/// recomputation those kept from the recomputed forward for the backward (at hidden 4096, all
/// four of the layer's, 12h^2).
#[test]
fn on_demand_gathering_holds_matrices_not_prefetched_layers() {
    let h = 4096.0_f64;
    let weights = |out: &RunOutput| part(out, |m| m.weights);
    let prefetch = weights(&gathered("prefetch", 16));
    let on_demand = weights(&gathered("on-demand", 16));
    // bf16 weights: two layers (12h^2 each, plus norms and biases) against one 4h^2 matrix.
    let freed = prefetch - on_demand;
    let expected = 2.0 * (2.0 * 12.0 * h * h - 4.0 * h * h);
    assert!(
        (freed - expected).abs() / expected < 0.01,
        "{freed} vs {expected}"
    );
    let full = common::run(
        "gather.toml",
        &gathered_text("on-demand", 16).replace("zero = 3", "zero = 3\nrecompute = \"full\""),
        &[],
    );
    let kept = weights(&full) - on_demand;
    let expected = 2.0 * (12.0 * h * h - 4.0 * h * h);
    assert!(
        (kept - expected).abs() / expected < 0.01,
        "{kept} vs {expected}"
    );
}
