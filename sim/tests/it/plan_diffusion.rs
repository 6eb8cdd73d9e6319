//! `clustersim plan` on diffusion scenarios: the degrees of Ulysses, Ring, PipeFusion, CFG and
//! TP searched, counted, ranked by each objective, and reproducible from their `--set` options.

use crate::common;

use common::{assert_accounted, count};

use clustersim::plan::{self, Objective, Options};
use serde_json::Value;

/// Wan 2.1 1.3B at 480p with guidance on 4 H100: 20 configurations on 1, 2 or 4 GPUs.
const VIDEO: &str = r#"
name = "Wan 2.1 1.3B 480p on 4 H100"
kind = "diffusion"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 4
[model]
preset = "wan2.1-1.3b"
[diffusion]
width = 832
height = 480
frames = 81
steps = 20
cfg = true
[parallel]
ulysses = 2
"#;

fn plan_of(sets: &[&str], options: &Options) -> Result<Value, String> {
    let scenario = common::scenario("video.toml", VIDEO, sets);
    plan::plan(&scenario, options).map_err(|e| e.to_string())
}

fn video_plan(objective: Objective, max_latency_s: Option<f64>) -> Value {
    plan_of(
        &[],
        &Options {
            top: 50,
            objective,
            max_latency_s,
            ..Options::default()
        },
    )
    .expect("the video plans")
}

fn latency(t: &Value) -> f64 {
    common::number(t, "latency_s")
}

fn gpus(t: &Value) -> u64 {
    count(&t["gpus"])
}

#[test]
fn counts_add_up_and_each_objective_orders_the_top() {
    for objective in [Objective::Fastest, Objective::Cheapest] {
        let p = video_plan(objective, None);
        assert_eq!(p["workload"], "diffusion");
        assert_eq!(p["objective"], objective.name());
        assert_accounted(&p);
        // tp, ulysses, ring, pipefusion in {1, 2, 4} and cfg in {1, 2}, product dividing 4.
        assert_eq!(count(&p["candidates"]["considered"]), 20);
        let top = p["top"].as_array().expect("top");
        assert_eq!(top.len() as u64, count(&p["candidates"]["ranked"]));
        for t in top {
            assert_eq!(t["memory"]["fits"], true);
            assert!(4 % gpus(t) == 0);
            let d = &t["parallel"];
            let product: u64 = ["ulysses", "ring", "pipefusion", "cfg", "tp"]
                .iter()
                .map(|k| count(&d[*k]))
                .product();
            assert_eq!(product, gpus(t));
            let hours = gpus(t) as f64 * latency(t) / 3600.0;
            assert!((common::number(t, "gpu_hours_per_video") - hours).abs() < 1e-12);
        }
        for w in top.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            match objective {
                Objective::Fastest => assert!(latency(a) <= latency(b), "{a}\n{b}"),
                _ => assert!(
                    common::number(a, "gpu_hours_per_video")
                        <= common::number(b, "gpu_hours_per_video"),
                    "{a}\n{b}"
                ),
            }
        }
        // The scenario's Ulysses 2 is in the space; the fastest beats it.
        assert_eq!(p["reference"]["ranked"], true);
        if objective == Objective::Fastest {
            assert!(latency(&top[0]) <= latency(&p["reference"]["result"]));
            assert_eq!(gpus(&top[0]), 4);
        }
    }
}

#[test]
fn fewest_gpus_meets_the_latency_bound_where_fewer_gpus_do_not() {
    // Bound: the best two-GPU latency. One GPU is slower; two just meet it.
    let fastest = video_plan(Objective::Fastest, None);
    let two = fastest["by_gpus"]
        .as_array()
        .expect("by_gpus")
        .iter()
        .find(|g| count(&g["gpus"]) == 2)
        .expect("two-GPU configurations");
    let bound = common::number(two, "best_latency_s");
    let p = video_plan(Objective::FewestGpus, Some(bound));
    assert_accounted(&p);
    assert_eq!(p["target"]["met"], true);
    let top = p["top"].as_array().expect("top");
    let best = &top[0];
    assert_eq!(gpus(best), 2);
    assert!(latency(best) <= bound);
    for w in top.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        assert!(gpus(a) < gpus(b) || (gpus(a) == gpus(b) && latency(a) <= latency(b)));
    }
    for t in top {
        assert!(latency(t) <= bound, "{t}");
    }
    let one = p["by_gpus"]
        .as_array()
        .expect("by_gpus")
        .iter()
        .find(|g| count(&g["gpus"]) == 1)
        .expect("the one-GPU configuration");
    assert!(common::number(one, "best_latency_s") > bound);
    assert_eq!(one["meets_target"], false);

    // A bound nothing meets: an empty top that says so.
    let none = video_plan(Objective::FewestGpus, Some(0.001));
    assert_eq!(none["target"]["met"], false);
    assert_eq!(none["top"].as_array().map(Vec::len), Some(0));
}

#[test]
fn every_set_list_reproduces_its_metrics() {
    let p = video_plan(Objective::Fastest, None);
    let mut rows: Vec<&Value> = p["top"].as_array().expect("top").iter().collect();
    rows.push(&p["reference"]["result"]);
    for t in rows {
        let sets: Vec<&str> = t["set"]
            .as_array()
            .expect("sets")
            .iter()
            .map(|s| s.as_str().expect("a string"))
            .collect();
        let r = common::diffusion("video.toml", VIDEO, &sets);
        for (key, figure) in [
            ("latency_s", r.latency_s),
            ("denoise_step_s", r.denoise_step_s),
            ("videos_per_hour", r.videos_per_hour),
        ] {
            assert_eq!(t[key], figure, "{key} of {}", t["layout"]);
        }
        assert_eq!(
            t["memory"]["peak_bytes_per_gpu"],
            r.memory.peak_bytes_per_gpu
        );
        assert_eq!(r.parallel.gpus_per_video as u64, gpus(t));
    }
}

#[test]
fn plans_are_deterministic() {
    assert_eq!(
        video_plan(Objective::Cheapest, None),
        video_plan(Objective::Cheapest, None)
    );
}

#[test]
fn refusals_of_the_set_up_are_counted_by_reason() {
    // Without guidance, CFG parallelism is refused by the diffusion set-up: 5 of the 20.
    let p = plan_of(&["diffusion.cfg=false"], &Options::default()).expect("plans");
    assert_accounted(&p);
    let reasons = p["candidates"]["pruned"]["invalid_by_reason"]
        .as_object()
        .expect("reasons");
    let cfg = reasons
        .iter()
        .find(|(r, _)| r.contains("classifier-free guidance"))
        .expect("a CFG reason");
    assert_eq!(count(cfg.1), 5);
    for t in p["top"].as_array().expect("top") {
        assert_eq!(count(&t["parallel"]["cfg"]), 1);
    }
}

#[test]
fn targets_of_other_objectives_are_clear_errors() {
    let e = plan_of(
        &[],
        &Options {
            objective: Objective::FewestGpus,
            ..Options::default()
        },
    )
    .expect_err("fewest-gpus needs a bound");
    assert!(e.contains("--max-latency"), "{e}");
    let e = plan_of(
        &[],
        &Options {
            max_latency_s: Some(10.0),
            ..Options::default()
        },
    )
    .expect_err("a bound without fewest-gpus");
    assert!(e.contains("fewest-gpus"), "{e}");
    let e = plan_of(
        &[],
        &Options {
            slo_attainment: Some(0.9),
            ..Options::default()
        },
    )
    .expect_err("a serving target");
    assert!(e.contains("--slo-attainment"), "{e}");
}

#[test]
fn the_cli_renders_a_table_and_reads_the_latency_bound() {
    let dir = std::env::temp_dir().join(format!("clustersim-plan-video-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    std::fs::write(dir.join("video.toml"), VIDEO).expect("write");
    let args = [
        "plan",
        "video.toml",
        "--objective",
        "fewest-gpus",
        "--max-latency",
        "1 min",
    ];
    let out = common::run_in(&dir, &args);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let table = common::text(&out.stdout);
    for words in [
        "[diffusion]",
        "latency <= 60.0 s",
        "GPU-h/video",
        "yours",
        "reproduce:",
    ] {
        assert!(table.contains(words), "{words} missing from\n{table}");
    }
    let out = common::run_in(&dir, &[&args[..], &["--json"]].concat());
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["target"]["max_latency_s"], 60.0);
    // A bound without a unit is refused with exit code 2.
    let out = common::run_in(
        &dir,
        &[
            "plan",
            "video.toml",
            "--objective",
            "fewest-gpus",
            "--max-latency",
            "60",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(common::text(&out.stderr).contains("unit"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Open-Sora 2.0 guides with three branches, so on 3 GPUs the planner tries a group per branch
/// (cfg = 3) and never the two groups other models split into.
#[test]
fn three_branch_guidance_is_split_three_ways() {
    let text = r#"
name = "Open-Sora 2.0 256px on 3 H100"
kind = "diffusion"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 3
[model]
preset = "open-sora-2.0"
[diffusion]
width = 256
height = 256
frames = 33
steps = 2
cfg = true
[parallel]
ring = 1
"#;
    let scenario = common::scenario("video.toml", text, &[]);
    let p = plan::plan(
        &scenario,
        &Options {
            top: 50,
            ..Options::default()
        },
    )
    .expect("the video plans");
    assert_accounted(&p);
    let cfgs: Vec<u64> = p["top"]
        .as_array()
        .expect("top")
        .iter()
        .map(|t| count(&t["parallel"]["cfg"]))
        .collect();
    assert!(cfgs.contains(&3), "{cfgs:?}");
    assert!(!cfgs.contains(&2), "{cfgs:?}");
    assert!(
        p["space"]["degrees"]
            .as_str()
            .is_some_and(|d| d.contains("cfg 1 or 3"))
    );
}
