//! The typed reports (training, serving, diffusion, collective, kernels, federated, cluster): every shipped scenario of their kinds
//! reads back into them and writes out the same bytes, and a report with a key they do not know
//! is refused by name.

use crate::common;

use clustersim::report::cluster::ClusterReport;
use clustersim::report::collective::CollectiveReport;
use clustersim::report::diffusion::DiffusionReport;
use clustersim::report::federated::FederatedReport;
use clustersim::report::kernels::KernelsReport;
use clustersim::report::serving::ServingReport;
use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use serde_json::Value;

/// The text of every shipped scenario of `kind`, by path.
fn shipped(kind: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in ["cluster", "diffusion", "papers", "serving", "training"] {
        let dir = common::root().join("scenarios").join(dir);
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            // (the top-level key, before the first table: a cluster's jobs name kinds too)
            let top = text.split("\n[").next().unwrap_or("");
            if top.contains(&format!("kind = \"{kind}\"")) {
                out.push((p.display().to_string(), text));
            }
        }
    }
    out
}

#[test]
fn every_shipped_diffusion_report_reads_back_to_the_same_json() {
    let scenarios = shipped("diffusion");
    assert!(
        scenarios.len() >= 8,
        "{} diffusion scenarios",
        scenarios.len()
    );
    let mut queues = 0;
    for (path, text) in scenarios {
        let report = common::outcome(&path, &text).unwrap();
        let typed = DiffusionReport::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
        queues += usize::from(typed.serving.is_some());
        assert_eq!(typed.to_value(), report, "{path}");
        assert_eq!(
            serde_json::to_string(&typed.to_value()).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{path}"
        );
    }
    assert!(queues >= 1, "a queue of videos is among them");
}

#[test]
fn the_cli_report_with_its_wall_time_and_intervals_reads_back() {
    let path = common::root().join("scenarios/diffusion/wan2.1-1.3b-16xh100-serving-sjf.toml");
    let out = common::bin()
        .args(["run", path.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let typed = DiffusionReport::from_value(&report).unwrap();
    assert!(typed.sim.wall_s.is_some_and(|w| w > 0.0));
    assert!(typed.uncertainty.is_some());
    assert_eq!(typed.to_value(), report);
}

#[test]
fn a_report_with_a_misspelt_key_is_refused_by_name() {
    let path = common::root().join("scenarios/diffusion/hunyuanvideo-720p-1xh100-ulysses.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut report = common::outcome("hunyuan.toml", &text).unwrap();
    let latency = report["latency_s"].take();
    report.as_object_mut().unwrap().remove("latency_s");
    report["latncy_s"] = latency;
    let e = DiffusionReport::from_value(&report).unwrap_err();
    assert!(e.contains("latncy_s"), "{e}");
    // The summary says so instead of printing blanks.
    let summary = clustersim::report::summary::render(&report);
    assert!(summary.starts_with("not a diffusion report"), "{summary}");
}

#[test]
fn every_shipped_collective_report_reads_back_to_the_same_json() {
    let mut scenarios = shipped("collective");
    assert!(
        scenarios.len() >= 6,
        "{} collective scenarios",
        scenarios.len()
    );
    // and one without compression, whose report has no `uncompressed`
    scenarios.push((
        "plain.toml".into(),
        "kind = \"collective\"\n[cluster]\ngpu = \"H100\"\nnodes = 2\ngpus_per_node = 8\n\
         [cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"\n\
         [collective]\nop = \"all_reduce\"\nsize = \"1 GiB\"\n"
            .into(),
    ));
    let (mut compressed, total) = (0, scenarios.len());
    for (path, text) in scenarios {
        let report = common::outcome(&path, &text).unwrap();
        let typed = CollectiveReport::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
        compressed += usize::from(typed.uncompressed.is_some());
        assert_eq!(
            typed.uncompressed.is_some(),
            typed.speedup.is_some(),
            "{path}"
        );
        assert_eq!(
            serde_json::to_string(&typed.to_value()).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{path}"
        );
    }
    assert!(
        compressed >= 1 && compressed < total,
        "{compressed} of {total} compressed"
    );
}

#[test]
fn a_collective_report_missing_a_key_is_refused_by_name() {
    let path = common::root().join("scenarios/papers/zccl-all-reduce-16x4xa100-fast.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut report = common::outcome("zccl.toml", &text).unwrap();
    report.as_object_mut().unwrap().remove("busbw_GBps");
    let e = CollectiveReport::from_value(&report).unwrap_err();
    assert!(e.contains("busbw_GBps"), "{e}");
    let summary = clustersim::report::summary::render(&report);
    assert!(summary.starts_with("not a collective report"), "{summary}");
}

#[test]
fn every_shipped_kernels_report_reads_back_to_the_same_json() {
    let scenarios = shipped("kernels");
    assert!(
        scenarios.len() >= 3,
        "{} kernels scenarios",
        scenarios.len()
    );
    for (path, text) in scenarios {
        let report = common::outcome(&path, &text).unwrap();
        let typed = KernelsReport::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(typed.speedup > 0.0 && typed.launches <= typed.unconsolidated.launches);
        assert_eq!(
            serde_json::to_string(&typed.to_value()).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{path}"
        );
    }
}

#[test]
fn every_shipped_federated_report_reads_back_to_the_same_json() {
    let scenarios = shipped("federated");
    assert!(
        scenarios.len() >= 3,
        "{} federated scenarios",
        scenarios.len()
    );
    let mut private = 0;
    for (path, text) in scenarios {
        let report = common::outcome(&path, &text).unwrap();
        let typed = FederatedReport::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
        private += usize::from(typed.dp.is_some());
        assert_eq!(typed.rounds, typed.rounds_succeeded + typed.rounds_failed);
        assert_eq!(
            serde_json::to_string(&typed.to_value()).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{path}"
        );
    }
    assert!(private >= 1, "one adds DP noise");
}

#[test]
fn every_shipped_serving_report_reads_back_to_the_same_json() {
    let scenarios = shipped("serving");
    assert!(
        scenarios.len() >= 6,
        "{} serving scenarios",
        scenarios.len()
    );
    let (mut placed, mut disaggregated, mut mixed) = (0, 0, 0);
    for (path, text) in scenarios {
        let report = common::outcome(&path, &text).unwrap();
        let typed = ServingReport::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
        placed += usize::from(typed.placement.is_some());
        disaggregated += usize::from(typed.disaggregation.is_some());
        mixed += usize::from(typed.cluster.tp.is_none());
        assert!(typed.requests_completed <= typed.requests, "{path}");
        assert_eq!(
            serde_json::to_string(&typed.to_value()).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{path}"
        );
    }
    // Every shape of fleet is among them.
    assert!(
        placed >= 1 && disaggregated >= 1 && mixed >= 2,
        "{placed} {disaggregated} {mixed}"
    );
}

#[test]
fn every_shipped_training_report_reads_back_to_the_same_json() {
    let scenarios = shipped("training");
    assert!(
        scenarios.len() >= 30,
        "{} training scenarios",
        scenarios.len()
    );
    let (mut ranks, mut offload, mut unfit) = (0, 0, 0);
    for (path, text) in scenarios {
        let report = common::outcome(&path, &text).unwrap();
        let typed = TrainingReport::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
        ranks += usize::from(typed.ranks.is_some());
        offload += usize::from(typed.breakdown_s.optimizer_offload.is_some());
        unfit += usize::from(!typed.memory.fits);
        assert_eq!(
            typed.optimizer_offload.is_some(),
            typed.breakdown_s.optimizer_offload.is_some(),
            "{path}"
        );
        assert_eq!(
            serde_json::to_string(&typed.to_value()).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{path}"
        );
    }
    // Every rank, an offloaded optimizer and a run that does not fit are among them.
    assert!(
        ranks >= 1 && offload >= 1 && unfit >= 1,
        "{ranks} {offload} {unfit}"
    );
}

#[test]
fn a_training_report_with_a_misspelt_key_is_refused_and_the_summary_says_so() {
    let path = common::root().join("scenarios/training/gpt3-1.3b-8xh100.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut report = common::outcome("gpt3.toml", &text).unwrap();
    let mfu = report["mfu"].take();
    report.as_object_mut().unwrap().remove("mfu");
    report["mfu_"] = mfu;
    let e = TrainingReport::from_value(&report).unwrap_err();
    assert!(e.contains("mfu_"), "{e}");
    let summary = clustersim::report::summary::render(&report);
    assert!(summary.starts_with("not a training report"), "{summary}");
}

#[test]
fn every_shipped_cluster_report_reads_back_to_the_same_json() {
    let scenarios = shipped("cluster");
    assert!(
        scenarios.len() >= 3,
        "{} cluster scenarios",
        scenarios.len()
    );
    let mut kinds = std::collections::BTreeSet::new();
    for (path, text) in scenarios {
        let report = common::outcome(&path, &text).unwrap();
        let typed = ClusterReport::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
        for job in &typed.jobs {
            kinds.insert(job.kind.clone());
            assert_eq!(job.step_s.is_some(), job.kind == "training", "{path}");
            assert_eq!(job.latency.is_some(), job.kind == "serving", "{path}");
            assert!(typed.slowdown.max >= job.slowdown, "{path}");
        }
        assert_eq!(
            serde_json::to_string(&typed.to_value()).unwrap(),
            serde_json::to_string(&report).unwrap(),
            "{path}"
        );
    }
    assert!(
        kinds.contains("training") && kinds.contains("serving"),
        "{kinds:?}"
    );
}
