//! `kind = "cluster"`: training jobs on their own servers of one cluster, their collectives
//! sharing the links between servers. A job slows only while another's traffic crosses the links
//! it uses; alone on the engine it keeps its own step; bad placements are refused at their key.

use crate::common;

use clustersim::report::cluster::ClusterReport;
use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;

/// 16 servers of 8 H100 behind a fat-tree with 4 servers per leaf, `oversubscription`:1, and
/// the `[[job]]` entries in `jobs`.
fn cluster(oversubscription: f64, jobs: &str) -> String {
    format!(
        "kind = \"cluster\"\n[cluster]\ngpu = \"H100\"\nnodes = 16\ngpus_per_node = 8\n\
         [cluster.inter_node]\ntopology = \"fat-tree\"\nnic_bandwidth = \"400 Gb/s\"\n\
         nics_per_node = 8\noversubscription = {oversubscription:?}\n\
         [sim]\nnetwork = \"flow\"\n{jobs}"
    )
}

/// A data-parallel Llama 3 8B job (TP8 inside each server) on servers `first`-`last`.
fn llama(name: &str, first: u32, last: u32) -> String {
    let servers = last - first + 1;
    format!(
        "[[job]]\nname = \"{name}\"\nservers = [{first}, {last}]\nkind = \"training\"\n\
         [job.model]\npreset = \"llama-3-8b\"\n\
         [job.parallel]\ntp = 8\nmicro_batch = 1\nglobal_batch = {}\nsequence_parallel = true\n",
        8 * servers
    )
}

#[test]
fn jobs_sharing_an_oversubscribed_leaf_slow_each_other() {
    // Servers 2-5 share leaf 0's and leaf 1's uplinks: both jobs reduce gradients through them.
    let text = cluster(4.0, &(llama("a", 0, 5) + &llama("b", 6, 11)));
    let r = common::cluster("c.toml", &text, &[]);
    for name in ["a", "b"] {
        let j = common::job(&r, name);
        // Alone on the engine a job keeps the step its own report gives.
        let step = j.step_s.as_ref().expect("a training job's step");
        let (alone, own) = (step.alone, step.report);
        assert!((alone / own - 1.0).abs() < 1e-6, "{name}: {alone} vs {own}");
        assert!(j.slowdown >= 1.0, "{name}");
        let report = TrainingReport::of_run(&j.report);
        assert_eq!(report.kind, "training");
        assert_eq!(report.cluster.gpus, 48);
    }
    let worst = r.slowdown.max;
    assert!(worst > 1.01, "sharing cost nothing: {worst}");
    // Never as much as if the gradient reductions ran end to end at half speed for the whole step.
    assert!(worst < 2.0, "{worst}");
    assert!(r.links.shared_by_jobs >= 1);
    let top = &r.links.busiest[0];
    assert!(top.busy > 0.0 && top.busy <= 1.0, "{top:?}");
    // A non-blocking fabric has room for both: less slowdown than 4:1.
    let free = common::cluster(
        "c.toml",
        &cluster(1.0, &(llama("a", 0, 5) + &llama("b", 6, 11))),
        &[],
    );
    assert!(
        free.slowdown.max < worst,
        "{} vs {worst}",
        free.slowdown.max
    );
}

#[test]
fn a_job_beside_one_that_never_leaves_its_servers_is_not_slowed() {
    // Job b is one server of tensor parallelism: nothing of it crosses the network.
    let alone_server = "[[job]]\nname = \"b\"\nservers = [4, 4]\nkind = \"training\"\n\
         [job.model]\npreset = \"llama-3-8b\"\n\
         [job.parallel]\ntp = 8\nmicro_batch = 1\nglobal_batch = 8\n";
    let r = common::cluster(
        "c.toml",
        &cluster(4.0, &(llama("a", 0, 3) + alone_server)),
        &[],
    );
    for name in ["a", "b"] {
        assert_eq!(common::job(&r, name).slowdown, 1.0, "{name}");
    }
    assert_eq!(common::job(&r, "b").bytes_between_servers, 0.0);
    assert_eq!(r.links.shared_by_jobs, 0);
    // Jobs on leaves of their own share no link either.
    let r = common::cluster(
        "c.toml",
        &cluster(4.0, &(llama("a", 0, 3) + &llama("b", 4, 7))),
        &[],
    );
    assert_eq!(r.slowdown.max, 1.0);
}

#[test]
fn the_shipped_cluster_reads_a_job_from_its_file_and_runs_the_same_twice() {
    let path = common::root().join("scenarios/cluster/two-jobs-oversubscribed-fat-tree.toml");
    let s = clustersim::Scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    let a = clustersim::run(&s).unwrap_or_else(|e| panic!("{e}"));
    let b = clustersim::run(&s).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.report.to_string(), b.report.to_string());
    let first = &ClusterReport::of_run(&a.report).jobs[0];
    assert_eq!(first.name, "llama-8b");
    assert_eq!(first.servers, [0, 5]);
    // The trace draws every job's lanes under its name.
    assert!(
        a.graph
            .lanes
            .iter()
            .any(|l| l.group.starts_with("gpt3-13b: "))
    );
    assert_eq!(a.graph.len(), a.timeline.end.len());
}

#[test]
fn bad_placements_and_foreign_keys_are_refused_at_their_key() {
    let cases: [(String, &str, &str); 8] = [
        (
            cluster(1.0, &(llama("a", 0, 5) + &llama("b", 5, 9))),
            "server 5 already runs job `a`",
            "c.toml:",
        ),
        (
            cluster(1.0, &llama("a", 10, 17)),
            "is not a range of the cluster's servers",
            "0-15",
        ),
        (
            cluster(1.0, &llama("a", 0, 3).replace("servers = [0, 3]\n", "")),
            "has no `servers`",
            "servers = [0, 3]",
        ),
        (cluster(1.0, ""), "without any [[job]]", "[[job]]"),
        (
            cluster(1.0, &(llama("a", 0, 3) + "[job.sim]\nranks = \"all\"\n")),
            "one GPU per pipeline stage",
            "alone",
        ),
        (
            cluster(1.0, &llama("a", 0, 3))
                .replace("network = \"flow\"", "network = \"flow\"\nsteps = 0"),
            "at least 1",
            "sim.steps",
        ),
        (
            cluster(1.0, &llama("a", 0, 3))
                .replace("network = \"flow\"", "network = \"flow\"\nsteps = 2000000"),
            "is more than 100",
            "at most 100",
        ),
        (
            cluster(1.0, &llama("a", 0, 3).replace("kind = \"training\"\n", "")),
            "has no `kind`",
            "kind = \"training\"",
        ),
    ];
    for (text, message, hint) in cases {
        common::refused_saying("c.toml", &text, message, hint);
    }
    // A cluster's own [model], and a [[job]] in a training scenario.
    let e = common::outcome(
        "c.toml",
        &format!(
            "{}[model]\npreset = \"llama-3-8b\"\n",
            cluster(1.0, &llama("a", 0, 3))
        ),
    )
    .unwrap_err();
    assert!(
        e.contains("`model` does not apply to a cluster scenario"),
        "{e}"
    );
    let training = common::h100_training(
        8,
        "preset = \"llama-3-8b\"",
        "tp = 8\nglobal_batch = 8\nmicro_batch = 1",
    );
    let e = common::outcome(
        "t.toml",
        &format!("{training}\n[[job]]\nservers = [0, 0]\n"),
    )
    .unwrap_err();
    assert!(
        e.contains("`job` does not apply to a training scenario"),
        "{e}"
    );
}

#[test]
fn a_job_that_would_repeat_its_short_step_too_often_is_refused_at_sim_steps() {
    // GPT-3 125M's step is a few milliseconds; GPT-3 175B's on one server is minutes.
    let jobs = "steps = 100\n\
        [[job]]\nname = \"small\"\nservers = [0, 1]\nkind = \"training\"\n\
        [job.model]\npreset = \"gpt3-125m\"\n[job.parallel]\nmicro_batch = 1\nglobal_batch = 16\n\
        [[job]]\nname = \"long\"\nservers = [2, 2]\nkind = \"training\"\n\
        [job.model]\npreset = \"gpt3-175b\"\n\
        [job.parallel]\ntp = 8\nmicro_batch = 1\nglobal_batch = 512\n";
    let text = cluster(1.0, jobs);
    let e = common::outcome("c.toml", &text).expect_err("ran");
    assert!(e.contains("job `small` would repeat its step"), "{e}");
    assert!(e.contains("c.toml:") && e.contains("steps = 100"), "{e}");
}
