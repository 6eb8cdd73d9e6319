//! A cluster's serving and diffusion jobs: a disaggregated fleet's KV transfers share the links
//! between servers with a training job's collectives, each slowing the other only there; a
//! colocated fleet and a diffusion job move nothing between servers and cost no one anything;
//! what a cluster cannot run is refused at the job's key.

use crate::common;

use clustersim::report::cluster::{Job, Shared};
use clustersim::report::diffusion::DiffusionReport;
use clustersim::report::serving::ServingReport;
use clustersim::report::typed::TypedReport;
use common::number as num;
use serde_json::Value;

/// A serving job's latency figures, alone and shared.
fn latency(j: &Job) -> &Shared {
    j.latency.as_ref().expect("a serving job's latency")
}

/// 16 servers of 8 H100 behind a fat-tree with 4 servers per leaf, `oversubscription`:1.
fn cluster(oversubscription: f64, jobs: &str) -> String {
    format!(
        "kind = \"cluster\"\n[cluster]\ngpu = \"H100\"\nnodes = 16\ngpus_per_node = 8\n\
         [cluster.inter_node]\ntopology = \"fat-tree\"\nnic_bandwidth = \"400 Gb/s\"\n\
         nics_per_node = 8\noversubscription = {oversubscription:?}\n\
         [sim]\nnetwork = \"flow\"\n{jobs}"
    )
}

/// Data-parallel Llama 3 8B (TP8 inside each server) on servers 0-5: servers 4-5 reduce
/// gradients through leaf 1's uplinks.
fn training() -> String {
    "[[job]]\nname = \"train\"\nservers = [0, 5]\nkind = \"training\"\n\
     [job.model]\npreset = \"llama-3-8b\"\n\
     [job.parallel]\ntp = 8\nmicro_batch = 1\nglobal_batch = 48\nsequence_parallel = true\n"
        .into()
}

/// Llama 3 70B served by TP4 replicas on servers 6-9, with `serving` added to [job.serving].
fn fleet(serving: &str) -> String {
    format!(
        "[[job]]\nname = \"serve\"\nservers = [6, 9]\nkind = \"serving\"\n\
         [job.model]\npreset = \"llama-3-70b\"\n\
         [job.serving]\ntp = 4\nrouter = \"least-loaded\"\n{serving}\
         [job.workload]\nrequests = 120\narrival = \"poisson\"\nrate = \"5/s\"\n\
         prompt_tokens = {{ dist = \"lognormal\", mean = 2000, sigma = 0.5, max = 8000 }}\n\
         output_tokens = {{ dist = \"lognormal\", mean = 100, sigma = 0.5, max = 1000 }}\n"
    )
}

/// Prefill replicas on servers 6-7 (leaf 1), decode replicas on servers 8-9 (leaf 2).
fn disaggregated() -> String {
    fleet("[job.serving.disaggregation]\nprefill_replicas = 4\ndecode_replicas = 4\n")
}

#[test]
fn a_disaggregated_fleet_and_a_training_job_on_shared_uplinks_slow_each_other() {
    let r = common::cluster(
        "c.toml",
        &cluster(4.0, &(training() + &disaggregated())),
        &[],
    );
    let (t, f) = (common::job(&r, "train"), common::job(&r, "serve"));
    assert_eq!(f.kind, "serving");
    assert_eq!(ServingReport::of_run(&f.report).kind, "serving");
    assert_eq!(f.gpus, 32);
    let l = latency(f);
    for (side, l) in [("alone", &l.alone), ("shared", &l.shared)] {
        assert_eq!(num(l, "requests_completed"), 120.0, "{side}");
        assert_eq!(num(l, "kv_transfers"), 120.0, "{side}");
    }
    // Every KV cache crosses leaf 1's uplinks, where the gradient reduction also runs.
    let (alone, shared) = (
        num(&l.alone, "kv_transfer_s.mean"),
        num(&l.shared, "kv_transfer_s.mean"),
    );
    assert!(
        shared > alone * 1.01,
        "transfers not slowed: {shared} vs {alone}"
    );
    // A 2,000-token KV shard (41 MB a GPU over its own 400 Gb/s NIC): milliseconds.
    assert!(alone > 5e-4 && alone < 0.02, "{alone}");
    assert!(f.slowdown >= 1.0);
    assert!(f.bytes_between_servers > 0.0);
    // The reduction slows while transfers run beside it: a little, as they are light.
    let ts = t.slowdown;
    assert!(ts > 1.0 && ts < 1.2, "{ts}");
    assert!(r.links.shared_by_jobs >= 1);
    let top = &r.links.busiest[0].jobs;
    assert!(
        top.contains_key("train") && top.contains_key("serve"),
        "{top:?}"
    );
    // The same fleet with room on the uplinks waits less for them.
    let free = common::cluster(
        "c.toml",
        &cluster(1.0, &(training() + &disaggregated())),
        &[],
    );
    let free_shared = num(
        &latency(common::job(&free, "serve")).shared,
        "kv_transfer_s.mean",
    );
    assert!(free_shared < shared, "{free_shared} vs {shared}");
}

#[test]
fn a_colocated_fleet_and_a_diffusion_job_cost_no_one_anything() {
    let video = "[[job]]\nname = \"video\"\nservers = [10, 10]\nkind = \"diffusion\"\n\
        [job.model]\npreset = \"hunyuanvideo\"\n\
        [job.diffusion]\nwidth = 848\nheight = 480\nframes = 33\nsteps = 10\ncfg = false\n\
        [job.parallel]\nulysses = 4\n";
    let colocated = fleet("replicas = 8\n");
    let r = common::cluster(
        "c.toml",
        &cluster(4.0, &(training() + &colocated + video)),
        &[],
    );
    for name in ["train", "serve", "video"] {
        assert_eq!(common::job(&r, name).slowdown, 1.0, "{name}");
    }
    let f = common::job(&r, "serve");
    assert_eq!(f.bytes_between_servers, 0.0);
    assert_eq!(latency(f).alone.to_string(), latency(f).shared.to_string());
    let v = common::job(&r, "video");
    assert_eq!(v.kind, "diffusion");
    assert!(DiffusionReport::of_run(&v.report).latency_s > 0.0);
    assert_eq!(v.bytes_between_servers, 0.0);
    assert_eq!(r.links.shared_by_jobs, 0);
}

#[test]
fn the_shipped_fleet_beside_training_runs_the_same_twice_and_draws_both() {
    let path = common::root().join("scenarios/cluster/training-beside-disaggregated-fleet.toml");
    let s = clustersim::Scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    let a = clustersim::run(&s).unwrap_or_else(|e| panic!("{e}"));
    let b = clustersim::run(&s).unwrap_or_else(|e| panic!("{e}"));
    let strip = |v: &Value| {
        let mut v = v.clone();
        v["sim"]["wall_s"] = Value::Null;
        v.to_string()
    };
    assert_eq!(strip(&a.report), strip(&b.report));
    for name in ["llama-8b: ", "llama-70b-serving: "] {
        assert!(
            a.graph.lanes.iter().any(|l| l.group.starts_with(name)),
            "no lanes of {name}"
        );
    }
    assert_eq!(a.graph.len(), a.timeline.end.len());
}

#[test]
fn what_a_cluster_cannot_run_is_refused_at_the_jobs_key() {
    let mixed = fleet("").replace(
        "tp = 4\nrouter = \"least-loaded\"\n",
        "router = \"least-loaded\"\n[[job.serving.group]]\ngpu = \"H100\"\nreplicas = 2\ntp = 4\n",
    );
    let spanning = "[[job]]\nname = \"video\"\nservers = [10, 11]\nkind = \"diffusion\"\n\
        [job.model]\npreset = \"hunyuanvideo\"\n\
        [job.diffusion]\nwidth = 848\nheight = 480\nframes = 33\nsteps = 10\ncfg = false\n\
        [job.parallel]\nulysses = 8\nring = 2\n";
    let collective = "[[job]]\nname = \"nccl\"\nservers = [0, 1]\nkind = \"collective\"\n";
    let cases: [(String, &str, &str); 3] = [
        (cluster(1.0, &mixed), "serving.group", "whole replicas"),
        (cluster(1.0, spanning), "would span servers", "divides"),
        (
            cluster(1.0, collective),
            "not a job a cluster runs",
            "diffusion",
        ),
    ];
    for (text, message, hint) in cases {
        common::refused_saying("c.toml", &text, message, hint);
    }
}
