//! Capacity and cost: energy, goodput under failures, stragglers, and the time, GPU-hours and
//! money to train; the price of serving and diffusion throughput.

use crate::common;

use clustersim::report::serving::ServingReport;
use clustersim::report::training::TrainingReport;
use common::{number, section};

const TRAINING: &str = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 2
gpus_per_node = 8
[cluster.inter_node]
nic_bandwidth = "400 Gb/s"
[model]
preset = "gpt3-1.3b"
seq_len = 1024
[parallel]
tp = 2
pp = 2
micro_batch = 1
global_batch = 16
[capacity]
tokens = 1e9
[cost]
usd_per_gpu_hour = 2.0
usd_per_kwh = 0.1
pue = 1.25
[reliability]
gpu_mtbf = "20000 h"
node_mtbf = "50000 h"
checkpoint_write = "30 s"
restart = "10 min"
"#;

fn training(sets: &[&str]) -> TrainingReport {
    common::training("capacity.toml", TRAINING, sets)
}

/// The number at `path` of a training report's `reliability`.
fn reliability(r: &TrainingReport, path: &str) -> f64 {
    number(section(&r.reliability, "reliability"), path)
}

/// The number at `path` of a training report's `capacity`.
fn capacity(r: &TrainingReport, path: &str) -> f64 {
    number(section(&r.capacity, "capacity"), path)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

#[test]
fn time_to_train_follows_from_the_step_and_goodput() {
    let r = training(&[]);
    let goodput = reliability(&r, "synchronous_restart.goodput");
    assert!(goodput > 0.5 && goodput < 1.0, "{goodput}");
    let wall = 1e9 / r.tokens_per_s / goodput;
    assert!(close(capacity(&r, "time_to_train_s"), wall));
    let gpu_hours = 16.0 * wall / 3600.0;
    assert!(close(capacity(&r, "gpu_hours"), gpu_hours));
    let usd = gpu_hours * 2.0 + capacity(&r, "energy_kwh") * 0.1;
    assert!(close(capacity(&r, "cost_usd.total"), usd));
}

#[test]
fn energy_lies_between_idle_and_full_power() {
    let r = training(&[]);
    let energy = section(&r.energy, "energy");
    let watts = number(energy, "board_watts_per_gpu");
    // H100 SXM: 700 W limit, 15% of it idle.
    assert!(watts > 105.0 && watts < 700.0, "{watts}");
    let joules = watts * 16.0 * r.iteration_time_s * 1.25;
    assert!(close(number(energy, "joules_per_step"), joules));
}

#[test]
fn a_straggler_slows_the_step_by_its_stage_share() {
    let base = training(&[]).iteration_time_s;
    let slow = training(&["reliability.straggler_slowdown=1.5"]).iteration_time_s;
    assert!(slow > 1.1 * base, "{slow} vs {base}");
    assert!(slow < 1.5 * base + 1e-9, "{slow} vs {base}");
    let same = training(&["reliability.straggler_slowdown=1.0"]).iteration_time_s;
    assert_eq!(same, base);
}

#[test]
fn bigger_clusters_fail_more_and_fault_tolerance_recovers_some() {
    let small = training(&[]);
    let big = training(&["cluster.nodes=64", "parallel.global_batch=512"]);
    assert!(reliability(&big, "failures_per_day") > 30.0 * reliability(&small, "failures_per_day"));
    let sync = reliability(&big, "synchronous_restart.goodput");
    assert!(sync < reliability(&small, "synchronous_restart.goodput"));
    assert!(reliability(&big, "fault_tolerant.goodput") > sync);
}

#[test]
fn a_given_checkpoint_interval_is_used_and_costs_goodput() {
    let optimum = training(&[]);
    let chosen = training(&["reliability.checkpoint_interval=\"5 min\""]);
    assert_eq!(reliability(&chosen, "checkpoint_interval_s"), 300.0);
    assert_eq!(
        section(&chosen.reliability, "reliability")["checkpoint_interval_rule"],
        "scenario"
    );
    assert!(reliability(&chosen, "goodput") < reliability(&optimum, "goodput"));
}

#[test]
fn bad_reliability_and_cost_keys_are_located_errors() {
    for (set, says) in [
        (
            "reliability.straggler_slowdown=0.5",
            "1 or more times slower",
        ),
        ("cost.pue=0.8", "power usage effectiveness"),
        ("cost.usd_per_gpu_hour=-1", "price of 0 or more"),
        ("capacity.tokens=0", "count of 1 or more"),
        ("reliability.restart=\"0 s\"", "longer than zero"),
    ] {
        let s = common::scenario("capacity.toml", TRAINING, &[set]);
        let e = clustersim::run(&s)
            .err()
            .unwrap_or_else(|| panic!("{set} ran"));
        let text = e.to_string();
        assert!(text.contains(says), "{set}: {text}");
        assert!(text.contains("--set"), "{set}: {text}");
    }
    let without = TRAINING.replace("checkpoint_write = \"30 s\"\n", "");
    let e = common::refused("capacity.toml", &without, "no checkpoint_write");
    assert!(e.to_string().contains("checkpoint_write"), "{e}");
}

#[test]
fn serving_is_priced_per_million_output_tokens() {
    let text = r#"
kind = "serving"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "llama-3.1-8b"
[serving]
replicas = 2
tp = 2
[workload]
requests = 200
arrival = "offline"
prompt_tokens = 500
output_tokens = 100
[cost]
usd_per_gpu_hour = 3.0
"#;
    let r: ServingReport = common::serving("serving.toml", text, &[]);
    assert_eq!(r.cluster.gpus, 4);
    let per_million = 4.0 * 3.0 / 3600.0 / r.throughput.output_tokens_per_s * 1e6;
    assert!(close(
        number(section(&r.cost, "cost"), "usd_per_million_output_tokens"),
        per_million
    ));
    // Serving has the power model: energy per output token priced at the kWh.
    let r = common::serving("serving.toml", text, &["cost.usd_per_kwh=0.1"]);
    let joules = number(section(&r.energy, "energy"), "joules_per_output_token");
    assert!(joules > 0.0);
    assert!(close(
        number(
            section(&r.cost, "cost"),
            "usd_per_million_output_tokens_energy"
        ),
        0.1 * joules / 3.6e6 * 1e6
    ));
    let e = parse_error(text, "[capacity]\ntokens = 1e9\n");
    assert!(e.contains("does not apply to a serving scenario"), "{e}");
}

fn parse_error(text: &str, extra: &str) -> String {
    let full = format!("{text}{extra}");
    match common::outcome("serving.toml", &full) {
        Err(e) => e,
        Ok(_) => panic!("{extra} accepted"),
    }
}

#[test]
fn mtbfs_of_years_are_read_exactly() {
    // 16 GPUs at 20,000 h and 2 nodes at 50,000 h: spans far beyond the simulated clock's range.
    let r = training(&[]);
    let expected = 1.0 / (16.0 / (20000.0 * 3600.0) + 2.0 / (50000.0 * 3600.0));
    assert!(close(reliability(&r, "cluster_mtbf_s"), expected));
    let days = training(&["reliability.gpu_mtbf=\"1000 d\""]);
    let expected = 1.0 / (16.0 / (1000.0 * 86400.0) + 2.0 / (50000.0 * 3600.0));
    assert!(close(reliability(&days, "cluster_mtbf_s"), expected));
}

#[test]
fn a_duration_beyond_the_simulated_clock_is_refused_not_clamped() {
    let text = TRAINING.replace("[capacity]", "[slo]\nttft = \"6000 h\"\n[capacity]");
    let e = common::outcome("capacity.toml", &text).expect_err("250 days overflow the clock");
    assert!(e.contains("longer than the simulated clock spans"), "{e}");
}

#[test]
fn a_slow_link_drags_the_collectives_that_cross_it() {
    // Without a pipeline the data-parallel groups span both servers.
    let base = training(&["parallel.pp=1"]);
    let slow = training(&["parallel.pp=1", "reliability.straggler_link_slowdown=8"]);
    let dp = |r: &TrainingReport| r.communication_s.data_parallel;
    assert!(
        dp(&slow) > 2.0 * dp(&base),
        "{} vs {}",
        dp(&slow),
        dp(&base)
    );
    assert!(slow.iteration_time_s > base.iteration_time_s);
    assert!(slow.assumptions.iter().any(|a| a.contains("8x slower")));
    let s = common::scenario(
        "capacity.toml",
        TRAINING,
        &["reliability.straggler_link_slowdown=0.5"],
    );
    let e = clustersim::run(&s)
        .err()
        .expect("a faster straggler is refused");
    assert!(e.to_string().contains("1 or more times slower"), "{e}");
}
