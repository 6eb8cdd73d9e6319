//! The typed reports, one a kind: every shipped scenario's report reads back into its kind's
//! type and writes out the same bytes, and a report with a key its type does not know is refused
//! by name, by the summary too.

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

/// The text of every shipped scenario of `T`'s kind, by path.
fn shipped<T: TypedReport>() -> Vec<(String, String)> {
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
            if top.contains(&format!("kind = \"{}\"", T::KIND)) {
                out.push((p.display().to_string(), text));
            }
        }
    }
    out
}

/// Every shipped scenario of `T`'s kind (at least `at_least`) and the `extra` texts, run, read
/// back as `T` and written out to the same bytes; their typed reports, by path.
fn round_trips<T: TypedReport>(at_least: usize, extra: &[(&str, &str)]) -> Vec<(String, T)> {
    let mut scenarios = shipped::<T>();
    assert!(
        scenarios.len() >= at_least,
        "{} {}",
        scenarios.len(),
        T::KIND
    );
    scenarios.extend(extra.iter().map(|(p, t)| (p.to_string(), t.to_string())));
    scenarios
        .into_iter()
        .map(|(path, text)| {
            let report = common::outcome(&path, &text).unwrap();
            let typed = T::from_value(&report).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(
                serde_json::to_string(&typed.to_value()).unwrap(),
                serde_json::to_string(&report).unwrap(),
                "{path}"
            );
            (path, typed)
        })
        .collect()
}

/// The report of shipped scenario `file` with its key `key` renamed `to`: refused by `T`, naming
/// `to`, and by the summary.
fn refused_when_renamed<T: TypedReport>(file: &str, key: &str, to: &str) {
    let text = std::fs::read_to_string(common::root().join("scenarios").join(file)).unwrap();
    let mut report = common::outcome(file, &text).unwrap();
    let value = report.as_object_mut().unwrap().remove(key).unwrap();
    report[to] = value;
    let Err(e) = T::from_value(&report) else {
        panic!("{file}: a {} report without `{key}` was read", T::KIND)
    };
    assert!(e.contains(to), "{e}");
    let summary = clustersim::report::summary::render(&report);
    assert!(
        summary.starts_with(&format!("not a {} report", T::KIND)),
        "{summary}"
    );
}

#[test]
fn every_shipped_training_report_reads_back_to_the_same_json() {
    let reports = round_trips::<TrainingReport>(30, &[]);
    let count = |f: &dyn Fn(&TrainingReport) -> bool| reports.iter().filter(|(_, t)| f(t)).count();
    // Every rank, an offloaded optimizer and a run that does not fit are among them.
    assert!(count(&|t| t.ranks.is_some()) >= 1);
    assert!(count(&|t| t.breakdown_s.optimizer_offload.is_some()) >= 1);
    assert!(count(&|t| !t.memory.fits) >= 1);
    for (path, t) in &reports {
        let offload = t.breakdown_s.optimizer_offload.is_some();
        assert_eq!(t.optimizer_offload.is_some(), offload, "{path}");
    }
}

#[test]
fn every_shipped_serving_report_reads_back_to_the_same_json() {
    let reports = round_trips::<ServingReport>(6, &[]);
    let count = |f: &dyn Fn(&ServingReport) -> bool| reports.iter().filter(|(_, t)| f(t)).count();
    // Every shape of fleet is among them: placed, disaggregated, mixed.
    assert!(count(&|s| s.placement.is_some()) >= 1);
    assert!(count(&|s| s.disaggregation.is_some()) >= 1);
    assert!(count(&|s| s.cluster.tp.is_none()) >= 2);
    for (path, s) in &reports {
        assert!(s.requests_completed <= s.requests, "{path}");
    }
}

#[test]
fn every_shipped_diffusion_report_reads_back_to_the_same_json() {
    let reports = round_trips::<DiffusionReport>(8, &[]);
    assert!(reports.iter().any(|(_, d)| d.serving.is_some()), "a queue");
}

#[test]
fn every_shipped_collective_report_reads_back_to_the_same_json() {
    // and one without compression, whose report has no `uncompressed`
    let plain = "kind = \"collective\"\n[cluster]\ngpu = \"H100\"\nnodes = 2\ngpus_per_node = 8\n\
                 [cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"\n\
                 [collective]\nop = \"all_reduce\"\nsize = \"1 GiB\"\n";
    let reports = round_trips::<CollectiveReport>(6, &[("plain.toml", plain)]);
    let compressed = reports
        .iter()
        .filter(|(_, c)| c.uncompressed.is_some())
        .count();
    assert!(compressed >= 1 && compressed < reports.len());
    for (path, c) in &reports {
        assert_eq!(c.uncompressed.is_some(), c.speedup.is_some(), "{path}");
    }
}

#[test]
fn every_shipped_kernels_report_reads_back_to_the_same_json() {
    for (path, k) in round_trips::<KernelsReport>(3, &[]) {
        assert!(k.speedup > 0.0, "{path}");
        assert!(k.launches <= k.unconsolidated.launches, "{path}");
    }
}

#[test]
fn every_shipped_federated_report_reads_back_to_the_same_json() {
    let reports = round_trips::<FederatedReport>(3, &[]);
    assert!(
        reports.iter().any(|(_, f)| f.dp.is_some()),
        "one adds DP noise"
    );
    for (path, f) in &reports {
        assert_eq!(f.rounds, f.rounds_succeeded + f.rounds_failed, "{path}");
    }
}

#[test]
fn every_shipped_cluster_report_reads_back_to_the_same_json() {
    let mut kinds = std::collections::BTreeSet::new();
    for (path, c) in round_trips::<ClusterReport>(3, &[]) {
        for job in &c.jobs {
            kinds.insert(job.kind.clone());
            assert_eq!(job.step_s.is_some(), job.kind == "training", "{path}");
            assert_eq!(job.latency.is_some(), job.kind == "serving", "{path}");
            assert!(c.slowdown.max >= job.slowdown, "{path}");
        }
    }
    assert!(
        kinds.contains("training") && kinds.contains("serving"),
        "{kinds:?}"
    );
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
fn a_report_with_a_misspelt_or_missing_key_is_refused_by_name() {
    refused_when_renamed::<TrainingReport>("training/gpt3-1.3b-8xh100.toml", "mfu", "mfu_");
    refused_when_renamed::<DiffusionReport>(
        "diffusion/hunyuanvideo-720p-1xh100-ulysses.toml",
        "latency_s",
        "latncy_s",
    );
    refused_when_renamed::<CollectiveReport>(
        "papers/zccl-all-reduce-16x4xa100-fast.toml",
        "busbw_GBps",
        "busbw",
    );
    refused_when_renamed::<ServingReport>(
        "serving/llama-3.1-8b-1xh100-offline.toml",
        "ttft_s",
        "ttft",
    );
}
