//! `clustersim plan`: the search space, its pruning, the ranking, and the simulated best.

use crate::common;

use common::count;

use clustersim::plan::{self, Options, Space};
use clustersim::workload::training::Layout;
use serde_json::Value;

const SMALL: &str = r#"
name = "GPT-3 1.3B on 8 H100, TP2 PP2 DP2"
kind = "training"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "gpt3-1.3b"
seq_len = 1024
[parallel]
tp = 2
pp = 2
micro_batch = 1
global_batch = 16
recompute = "full"
"#;

fn small_plan(options: &Options) -> Value {
    let scenario = common::scenario("plan.toml", SMALL, &[]);
    plan::plan(&scenario, options).expect("a training scenario plans")
}

#[test]
fn gpt3_175b_on_1024_gpus_has_a_space_of_over_100k_layouts() {
    let path = common::root().join("scenarios/training/gpt3-175b-1024xa100-ptdp.toml");
    let scenario = clustersim::Scenario::load(&path, &[]).expect("the shipped scenario loads");
    let base = clustersim::scenario::lower::training::resolve(&scenario).expect("it resolves");
    let space = Space::training(&base);
    let layouts = space.layouts();
    assert!(layouts.len() >= 100_000, "{} layouts", layouts.len());
    // The scenario's own layout (Megatron-LM SC21's TP8 PP16 interleaved) is among them.
    assert!(layouts.contains(&base.layout()));
}

#[test]
fn every_candidate_is_accounted_for_and_the_best_beats_the_scenario() {
    let p = small_plan(&Options {
        top: 3,
        simulate: 6,
        ..Options::default()
    });
    let c = &p["candidates"];
    let invalid = count(&c["pruned"]["invalid"]);
    let by_reason: u64 = c["pruned"]["invalid_by_reason"]
        .as_object()
        .expect("reasons")
        .values()
        .map(count)
        .sum();
    assert_eq!(invalid, by_reason);
    assert_eq!(
        count(&c["considered"]),
        invalid + count(&c["pruned"]["does_not_fit"]) + count(&c["ranked"])
    );
    let top = p["top"].as_array().expect("top");
    assert_eq!(top.len(), 3);
    let times: Vec<f64> = top
        .iter()
        .map(|t| common::number(t, "iteration_time_s"))
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let reference = common::number(&p["reference"]["result"], "iteration_time_s");
    assert!(
        times[0] <= reference,
        "best {} s vs the scenario's {reference} s",
        times[0]
    );
    for t in top {
        assert_eq!(t["memory"]["fits"], true);
        assert!(
            t["why"]
                .as_str()
                .is_some_and(|w| w.contains("scenario's layout"))
        );
    }
}

#[test]
fn the_set_options_of_a_planned_layout_reproduce_its_simulation() {
    let p = small_plan(&Options {
        top: 2,
        simulate: 2,
        ..Options::default()
    });
    for t in p["top"].as_array().expect("top") {
        let sets: Vec<&str> = t["set"]
            .as_array()
            .expect("sets")
            .iter()
            .map(|s| s.as_str().expect("a string"))
            .collect();
        let report = common::training("plan.toml", SMALL, &sets);
        assert_eq!(t["iteration_time_s"], report.iteration_time_s);
        assert_eq!(
            t["memory"]["peak_bytes_per_gpu"],
            report.memory.peak_bytes_per_gpu
        );
    }
}

#[test]
fn the_estimate_ranks_close_to_the_simulation() {
    let p = small_plan(&Options {
        top: 8,
        simulate: 8,
        ..Options::default()
    });
    let worst = p["ranking"]["estimate_error_worst"]
        .as_f64()
        .expect("an error figure");
    assert!(worst.abs() < 0.25, "worst estimate error {worst}");
}

#[test]
fn plans_are_deterministic() {
    let options = Options {
        top: 3,
        simulate: 4,
        ..Options::default()
    };
    assert_eq!(small_plan(&options), small_plan(&options));
}

#[test]
fn refusals_name_their_reason() {
    let scenario = common::scenario("plan.toml", SMALL, &[]);
    let base = clustersim::scenario::lower::training::resolve(&scenario).expect("it resolves");
    let bad = Layout {
        tp: 3,
        ..base.layout()
    };
    let refusal = bad.check(&base.model, 8).expect_err("tp = 3 on 8 GPUs");
    assert_eq!(refusal.key, "parallel.tp");
    assert_eq!(refusal.reason, "tp does not divide the GPUs");
    let chunks = Layout {
        pp: 8,
        dp: 1,
        tp: 1,
        virtual_stages: 4,
        schedule: clustersim::workload::training::policy::Schedule::Interleaved1F1B,
        ..base.layout()
    };
    let refusal = chunks
        .check(&base.model, 8)
        .expect_err("32 chunks of 24 layers");
    assert_eq!(refusal.reason, "more pipeline chunks than layers");
}

#[test]
fn training_refuses_fewest_gpus_and_names_the_objective() {
    let scenario = common::scenario("plan.toml", SMALL, &[]);
    let e = plan::plan(
        &scenario,
        &Options {
            objective: plan::Objective::FewestGpus,
            ..Options::default()
        },
    )
    .expect_err("a training cluster is fixed");
    assert!(e.to_string().contains("fewest-gpus"), "{e}");
    assert!(e.to_string().contains("fixed"), "{e}");
    let p = small_plan(&Options {
        top: 1,
        simulate: 1,
        objective: plan::Objective::Cheapest,
        ..Options::default()
    });
    assert_eq!(p["objective"], "cheapest");
    assert!(common::number(&p["top"][0], "gpu_hours_per_million_tokens") > 0.0);
}

#[test]
fn the_cli_prints_one_json_object() {
    let dir = tempdir();
    let file = dir.join("plan.toml");
    std::fs::write(&file, SMALL).expect("write");
    let out = common::run_in(
        &dir,
        &[
            "plan",
            "plan.toml",
            "--top",
            "2",
            "--simulate",
            "2",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["kind"], "plan");
    assert_eq!(v["top"].as_array().map(Vec::len), Some(2));
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

#[test]
fn memory_headroom_keeps_room_on_every_gpu() {
    let plain = small_plan(&Options {
        top: 3,
        simulate: 6,
        ..Options::default()
    });
    let headroom = 60.0 * 1073741824.0;
    let roomy = small_plan(&Options {
        top: 3,
        simulate: 6,
        headroom_bytes: headroom,
        ..Options::default()
    });
    let unfit = |p: &Value| count(&p["candidates"]["pruned"]["does_not_fit"]);
    assert!(unfit(&roomy) > unfit(&plain));
    assert_eq!(roomy["memory_headroom_bytes"], headroom);
    for t in roomy["top"].as_array().expect("top") {
        let peak = common::number(t, "memory.peak_bytes_per_gpu");
        let capacity = common::number(t, "memory.capacity_bytes");
        assert!(
            peak <= capacity - headroom,
            "{peak} with {headroom} kept free"
        );
    }
}
