//! `sim.ranks = "all"` and `[[perturb]]`: every GPU its own timeline agrees with one GPU per stage
//! where ranks are alike, a slow GPU slows the step by what its collectives and sends pass on,
//! and bad perturbations are refused at their key.

use crate::common;

use clustersim::Scenario;
use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use common::number as num;
use common::section;
use serde_json::Value;

fn shipped(file: &str, sets: &[&str]) -> TrainingReport {
    let path = common::root().join("scenarios/training").join(file);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
    TrainingReport::of_run(
        &clustersim::run(&scenario)
            .unwrap_or_else(|e| panic!("{e}"))
            .report,
    )
}

/// A training report's `ranks` section (every rank simulated).
fn ranks(r: &TrainingReport) -> &Value {
    section(&r.ranks, "ranks")
}

/// The typed report of a training scenario text.
fn report(name: &str, text: &str, sets: &[&str]) -> TrainingReport {
    common::training(name, text, sets)
}

/// Two servers of eight H100: Llama 3.1 8B over tp 2, pp 2, dp 4, with `extra` lines at the end.
fn small(extra: &str) -> String {
    format!(
        "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 2\ngpus_per_node = 8\n\
         [cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"\n\
         [model]\npreset = \"llama-3.1-8b\"\nseq_len = 4096\n\
         [parallel]\ntp = 2\npp = 2\ndp = 4\nglobal_batch = 32\nmicro_batch = 1\n{extra}"
    )
}

/// Kernels back to back run as one operation (a chain) unless each draws its own jitter: a
/// jitter of 0 spells every kernel out and changes no duration, so both give the same step, up
/// to a picosecond a kernel where a collective slows a chain (its end is rounded once).
#[test]
fn chained_kernels_give_the_step_their_kernels_give_one_by_one() {
    for file in ["gpt3-1.3b-8xh100.toml", "llama-3-70b-64xh100.toml"] {
        let path = common::root().join("scenarios/training").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let all = ["sim.ranks=\"all\""];
        let chained = report(file, &text, &all);
        let one_by_one = report(
            file,
            &format!("{text}\n[[perturb]]\ngpu = 0\njitter = 0.0\n"),
            &all,
        );
        let (a, b) = (chained.iteration_time_s, one_by_one.iteration_time_s);
        assert!((a / b - 1.0).abs() < 1e-9, "{file}: {a} s vs {b} s");
        let ops = |r: &TrainingReport| num(ranks(r), "operations");
        // (each layer's kernels between its tensor-parallel collectives are one chain)
        assert!(
            4.0 * ops(&chained) < 3.0 * ops(&one_by_one),
            "{file}: {} operations chained, {} one by one",
            ops(&chained),
            ops(&one_by_one)
        );
    }
}

#[test]
fn every_rank_agrees_with_one_gpu_per_stage_where_ranks_are_alike() {
    for file in [
        "gpt3-1.3b-8xh100.toml",
        "gpt3-1.3b-two-sites-wan.toml",
        "llama-2-7b-torus-flow.toml",
        "llama-3-8b-128xh100-zero2.toml",
        "megatron-3.6b-64xa100-tp2.toml",
        "mixtral-8x7b-64xh100-ep8.toml",
        "llama-3.1-8b-8xh100-torchtitan-eager.toml",
    ] {
        let stage = shipped(file, &[]);
        let all = shipped(file, &["sim.ranks=\"all\""]);
        let (a, b) = (stage.iteration_time_s, all.iteration_time_s);
        assert!((b / a - 1.0).abs() <= 0.01, "{file}: {a} s vs {b} s");
        assert_eq!(all.fidelity.ranks, "all", "{file}");
        assert_eq!(
            num(ranks(&all), "gpus_simulated"),
            stage.cluster.gpus as f64,
            "{file}"
        );
        assert_eq!(num(ranks(&all), "waited_s.total"), 0.0, "{file}");
    }
    // Context parallelism (ring passes) and ZeRO-3's layer gathers, inline.
    for (extra, dp) in [("cp = 2\n", "dp = 2"), ("zero = 3\n", "dp = 4")] {
        let text = small(extra).replace("dp = 4", dp);
        let stage = report("cp.toml", &text, &[]);
        let all = report("cp.toml", &text, &["sim.ranks=\"all\""]);
        assert_eq!(stage.iteration_time_s, all.iteration_time_s, "{extra}");
    }
}

#[test]
fn unstated_ranks_are_one_gpu_per_stage() {
    let silent = report("r.toml", &small(""), &[]);
    let stated = report("r.toml", &small("[sim]\nranks = \"stage\"\n"), &[]);
    assert_eq!(silent.fidelity.ranks, "stage");
    assert_eq!(silent.assumptions, stated.assumptions);
    let what = "ranks = \"stage\"";
    assert_eq!(
        silent.iteration_time_s, stated.iteration_time_s,
        "{what}: iteration_time_s"
    );
    assert_eq!(silent.sim.events, stated.sim.events, "{what}: sim.events");
    assert_eq!(
        silent.breakdown_s.pipeline_bubble, stated.breakdown_s.pipeline_bubble,
        "{what}: breakdown_s.pipeline_bubble"
    );
    assert!(silent.ranks.is_none());
}

#[test]
fn a_slow_gpu_slows_the_step_by_what_its_peers_wait_for() {
    let base = report("r.toml", &small(""), &[]);
    // GPU 5: tensor index 1, data index 2, first stage (tp innermost, then dp, then pp).
    let slow_json = common::report(
        "r.toml",
        &small("[[perturb]]\ngpu = 5\nslowdown = 1.3\n"),
        &[],
    );
    let slow = TrainingReport::of_run(&slow_json);
    let (t0, t1) = (base.iteration_time_s, slow.iteration_time_s);
    // Slower, but not by 30% everywhere: the other stage and the waits for the network are not
    // the slow GPU's.
    assert!(t1 > t0 * 1.05 && t1 < t0 * 1.3, "{t0} s -> {t1} s");
    assert_eq!(slow.fidelity.ranks, "all");
    assert!(
        slow.assumptions
            .iter()
            .any(|a| a.contains("[[perturb]] makes ranks unlike"))
    );
    assert_eq!(ranks(&slow)["slow_gpus"][0]["gpu"], 5);
    // It is the one the others waited for most, and its tensor-parallel peer (GPU 4) waited.
    assert_eq!(ranks(&slow)["held_up_by"][0]["gpu"], 5);
    assert!(num(ranks(&slow), "waited_s.total") > 0.0);
    // Same scenario and seed, same bytes.
    let again = common::report(
        "r.toml",
        &small("[[perturb]]\ngpu = 5\nslowdown = 1.3\n"),
        &[],
    );
    let strip = |mut v: Value| {
        v["sim"]["wall_s"] = Value::Null;
        v
    };
    assert_eq!(strip(slow_json), strip(again));
}

#[test]
fn the_straggler_is_one_gpu_when_every_rank_is_simulated() {
    let text = small(
        "[reliability]\ngpu_mtbf = \"50000 h\"\ncheckpoint_write = \"60 s\"\nrestart = \"10 min\"\n\
         straggler_slowdown = 1.5\n",
    );
    let stage = report("s.toml", &text, &[]);
    let all = report("s.toml", &text, &["sim.ranks=\"all\""]);
    // One GPU of the last stage (rank 8: stage 1's first GPU): its stage-mates wait for it at
    // every collective, so the step is about as slow as a whole slow stage.
    assert_eq!(ranks(&all)["slow_gpus"][0]["gpu"], 8);
    let (a, b) = (stage.iteration_time_s, all.iteration_time_s);
    assert!(b <= a * 1.001 && b > a * 0.9, "stage {a} s, all {b} s");
}

#[test]
fn a_slow_server_slows_each_of_its_gpus() {
    let r = report(
        "s.toml",
        &small("[[perturb]]\nserver = 1\nslowdown = 1.1\n[[perturb]]\ngpu = 9\nslowdown = 2\n"),
        &[],
    );
    let slow = ranks(&r)["slow_gpus"].as_array().unwrap();
    assert_eq!(slow.len(), 8);
    assert_eq!(slow[0]["gpu"], 8);
    // Entries on one GPU multiply.
    assert!((num(&slow[1], "slowdown") - 2.2).abs() < 1e-12);
}

#[test]
fn a_server_under_a_lower_power_limit_holds_its_peers_back() {
    let base = report("w.toml", &small(""), &[]);
    let one = report(
        "w.toml",
        &small("[[perturb]]\nserver = 0\npower_limit = \"450 W\"\n"),
        &[],
    );
    let both = report(
        "w.toml",
        &small(
            "[[perturb]]\nserver = 0\npower_limit = \"450 W\"\n\
             [[perturb]]\nserver = 1\npower_limit = \"450 W\"\n",
        ),
        &[],
    );
    let cluster = report("w.toml", &small(""), &["cluster.power_limit=\"450 W\""]);
    let t = |r: &TrainingReport| r.iteration_time_s;
    assert!(
        t(&base) < t(&one) && t(&one) <= t(&cluster),
        "{} {} {}",
        t(&base),
        t(&one),
        t(&cluster)
    );
    // Every server under the limit is the cluster under it.
    assert_eq!(t(&both), t(&cluster));
    assert_eq!(ranks(&one)["power_limits"].as_array().unwrap().len(), 8);
}

#[test]
fn kernel_jitter_slows_synchronous_steps_and_follows_the_seed() {
    let base = report("j.toml", &small(""), &[]);
    let jitter = |extra: &str| {
        report(
            "j.toml",
            &small(&format!("[[perturb]]\njitter = 0.1\n{extra}")),
            &[],
        )
    };
    let (a, b) = (jitter(""), jitter(""));
    let t0 = base.iteration_time_s;
    let t1 = a.iteration_time_s;
    // Every collective waits for the slowest member's draws: noise of mean 1 costs time.
    assert!(t1 > t0 && t1 < t0 * 1.1, "{t0} s -> {t1} s");
    assert_eq!(num(ranks(&a), "jitter.gpus"), 16.0);
    assert_eq!(
        a.iteration_time_s, b.iteration_time_s,
        "same seed, same step"
    );
    let other = report(
        "j.toml",
        &small("[[perturb]]\njitter = 0.1\n[sim]\nseed = 7\n"),
        &[],
    );
    assert_ne!(other.iteration_time_s, t1, "another seed draws again");
    // On one GPU only: it and its tensor-parallel peer (GPU 7) take turns being waited for, as
    // its kernels come out slower or faster than the peer's.
    let one = jitter("gpu = 6\n");
    assert_eq!(num(ranks(&one), "jitter.gpus"), 1.0);
    let first = ranks(&one)["held_up_by"][0]["gpu"].as_u64().unwrap();
    assert!(first == 6 || first == 7, "{first}");
}

#[test]
fn bad_perturbations_are_refused_at_their_key() {
    let cases = [
        (
            "[[perturb]]\ngpu = 3\n",
            "perturb.0",
            "needs `slowdown`, `power_limit`, `jitter`, `nic_bandwidth` or `link`",
        ),
        (
            "[[perturb]]\ngpu = 3\npower_limit = \"2000 W\"\n",
            "perturb.0.power_limit",
            "outside what the model allows",
        ),
        (
            "[[perturb]]\nslowdown = 1.2\n",
            "perturb.0",
            "needs the `gpu` or `server`",
        ),
        (
            "[[perturb]]\njitter = 1.5\n",
            "perturb.0.jitter",
            "from 0 to 1, not 1.5",
        ),
        (
            "[[perturb]]\ngpu = 16\nslowdown = 1.2\n",
            "perturb.0.gpu",
            "GPUs are 0-15, not 16",
        ),
        (
            "[[perturb]]\nserver = 2\nslowdown = 1.2\n",
            "perturb.0.server",
            "servers are 0-1",
        ),
        (
            "[[perturb]]\ngpu = 1\nslowdown = 1.2\n[[perturb]]\ngpu = 1\nserver = 0\nslowdown = 1.2\n",
            "perturb.1",
            "one `gpu` or one `server`",
        ),
        (
            "[[perturb]]\ngpu = 1\nslowdown = 0.5\n",
            "perturb.0.slowdown",
            "1 or more, not 0.5",
        ),
        (
            "[sim]\nranks = \"stage\"\n[[perturb]]\ngpu = 1\nslowdown = 1.2\n",
            "sim.ranks",
            "makes ranks unlike",
        ),
        ("[sim]\nranks = \"every\"\n", "sim.ranks", "stage"),
    ];
    for (extra, key, says) in cases {
        let text = small(extra);
        let e = match common::outcome("p.toml", &text) {
            Err(e) => e,
            Ok(_) => panic!("{extra}: accepted"),
        };
        assert!(e.contains(says), "{extra}: {e}");
        // Located: the message points at the key's line (an entry's header for the entry).
        let parts: Vec<&str> = key.split('.').collect();
        let lines: Vec<&str> = text.lines().collect();
        let line = match parts.as_slice() {
            ["perturb", n, rest @ ..] => {
                let n: usize = n.parse().unwrap();
                let header = (0..lines.len())
                    .filter(|&i| lines[i] == "[[perturb]]")
                    .nth(n)
                    .unwrap();
                match rest {
                    [] => header,
                    [k] => (header..lines.len())
                        .find(|&i| lines[i].starts_with(&format!("{k} =")))
                        .unwrap(),
                    _ => unreachable!(),
                }
            }
            _ => (0..lines.len())
                .find(|&i| lines[i].starts_with("ranks ="))
                .unwrap(),
        };
        assert!(
            e.contains(&format!("p.toml:{}:", line + 1)),
            "{extra}: {e} (key {key}, line {})",
            line + 1
        );
    }
    // Other kinds do not read them.
    let serving = "kind = \"serving\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"llama-3-8b\"\n\
                   [[perturb]]\ngpu = 0\nslowdown = 2\n";
    let e = common::outcome("s.toml", serving).unwrap_err();
    assert!(e.contains("perturb"), "{e}");
    let e = common::outcome(
        "a.toml",
        &small("[sim]\nranks = \"all\"\n")
            .replace("global_batch", "schedule = \"async-1f1b\"\nglobal_batch"),
    )
    .unwrap_err();
    assert!(e.contains("async-1f1b"), "{e}");
}

#[test]
fn the_trace_draws_the_pipelines_of_the_gpus_named() {
    let text = small("[[perturb]]\ngpu = 5\nslowdown = 1.3\n[sim]\ntrace_gpus = [5, 0, 8]\n");
    let out = common::run("t.toml", &text, &[]);
    // tp 2 x pp 2 x dp 4 on 16 GPUs, stages 8 apart: GPUs 0 and 8 are one pipeline, 5 another.
    let mut groups: Vec<&str> = out.graph.lanes.iter().map(|l| l.group.as_str()).collect();
    groups.dedup();
    assert!(
        groups.contains(&"GPU 5 (stage 0, pipeline 5)"),
        "{groups:?}"
    );
    assert!(
        groups.contains(&"GPU 0 (stage 0, pipeline 0)"),
        "{groups:?}"
    );
    assert!(
        groups.contains(&"GPU 8 (stage 1, pipeline 0)"),
        "{groups:?}"
    );
    assert_eq!(groups.len(), 4, "{groups:?}");
    assert_eq!(out.graph.len(), out.timeline.end.len());
    // The report still describes the step: the same as without the key.
    let plain = report("t.toml", &text.replace("trace_gpus = [5, 0, 8]\n", ""), &[]);
    assert_eq!(
        TrainingReport::of_run(&out.report).iteration_time_s,
        plain.iteration_time_s
    );
    for (sets, message) in [
        (vec!["sim.trace_gpus=[1]"], "no other GPU's pipeline"),
        (vec!["sim.ranks=\"all\"", "sim.trace_gpus=[16]"], "not 16"),
        (
            vec!["sim.ranks=\"all\"", "sim.trace_gpus=[]"],
            "1 to 16 GPUs, not 0",
        ),
        (
            vec![
                "sim.ranks=\"all\"",
                "sim.trace_gpus=[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,0]",
            ],
            "1 to 16 GPUs, not 17",
        ),
    ] {
        let s = common::scenario("t.toml", &small(""), &sets);
        let e = clustersim::run(&s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(message), "{sets:?}: {e}");
    }
}
