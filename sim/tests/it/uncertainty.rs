//! Prediction intervals: the shipped residual table is what the validation files give today, every
//! kind with a regime carries its intervals in the report and the summary, and the intervals hold
//! as often as they say on the cases they were not made from.

use crate::common;

use common::{root, run_in, text};
use serde_json::Value;
use std::path::Path;

#[test]
fn the_shipped_residual_table_is_what_the_validation_files_give() {
    common::shared();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let fresh = dir.join("residuals.json");
    let out = run_in(
        &root(),
        &["validate", "--residuals", fresh.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shipped = std::fs::read_to_string(root().join("validation/residuals.json")).unwrap();
    let fresh = std::fs::read_to_string(&fresh)
        .unwrap()
        .replace(fresh.to_str().unwrap(), "validation/residuals.json");
    assert!(
        shipped == fresh,
        "validation/residuals.json is stale: run `clustersim validate --residuals \
         validation/residuals.json` from the repository root and commit it"
    );
}

fn interval(report: &Value, path: &str) -> (f64, f64, f64) {
    let figure = common::number(report, path);
    let u = path.split('.').fold(&report["uncertainty"], |v, p| &v[p]);
    assert_eq!(u["level"], 0.8, "{path}: {u}");
    assert!(u["cases"].as_u64().unwrap() >= 3 && u["sources"].as_u64().unwrap() >= 3);
    let (low, high) = (u["low"].as_f64().unwrap(), u["high"].as_f64().unwrap());
    assert!(0.0 < low && low < high, "{path}: {low} .. {high}");
    (low, figure, high)
}

#[test]
fn every_kind_with_a_regime_states_its_intervals() {
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "scenarios/training/llama-3-70b-64xh100.toml",
            "training/multi-server/16-bit",
            &["iteration_time_s", "tokens_per_s", "tflops_per_gpu"],
        ),
        (
            "scenarios/serving/llama-3.1-8b-1xh100-offline.toml",
            "serving/",
            &["ttft_s.p50", "tpot_s.p50", "throughput.output_tokens_per_s"],
        ),
        (
            "scenarios/diffusion/hunyuanvideo-720p-8xh100-ulysses.toml",
            "diffusion/long-video",
            &["latency_s"],
        ),
        (
            "scenarios/papers/zccl-all-reduce-16x4xa100-fast.toml",
            "collective/multi-server/bandwidth",
            &["time_s", "busbw_GBps"],
        ),
    ];
    for (file, regime, metrics) in cases {
        let path = root().join(file);
        let s = clustersim::Scenario::load(&path, &[]).unwrap();
        let r = clustersim::run(&s).unwrap().report;
        assert!(
            r["uncertainty"]["regime"]
                .as_str()
                .unwrap()
                .starts_with(regime),
            "{file}: {}",
            r["uncertainty"]
        );
        for m in metrics {
            interval(&r, m);
        }
        let out = run_in(&root(), &["run", file]);
        let summary = text(&out.stdout);
        assert!(
            summary.contains("(80%: ") && summary.contains("published cases of"),
            "{file}: {summary}"
        );
    }
    // A time's interval and the matching rate's mirror each other: same band of errors.
    let s = clustersim::Scenario::load(
        &root().join("scenarios/training/llama-3-70b-64xh100.toml"),
        &[],
    )
    .unwrap();
    let r = clustersim::run(&s).unwrap().report;
    let (tl, t, th) = interval(&r, "iteration_time_s");
    let (rl, rate, rh) = interval(&r, "tokens_per_s");
    assert!(((t / tl) / (rh / rate) - 1.0).abs() < 1e-9);
    assert!(((th / t) / (rate / rl) - 1.0).abs() < 1e-9);
}

#[test]
fn each_job_of_a_cluster_carries_its_own_intervals() {
    let path = root().join("scenarios/cluster/training-beside-disaggregated-fleet.toml");
    let r = clustersim::run(&clustersim::Scenario::load(&path, &[]).unwrap())
        .unwrap()
        .report;
    assert!(
        r.get("uncertainty").is_none(),
        "the cluster itself has no headline to bound"
    );
    let jobs = r["jobs"].as_array().unwrap();
    for (job, metric) in jobs
        .iter()
        .zip(["iteration_time_s", "ttft_s.p50", "latency_s"])
    {
        interval(&job["report"], metric);
    }
}

#[test]
fn a_kind_without_validation_cases_has_no_intervals() {
    let r = common::paper("dp-consolidation-16k-children-v100-grid.toml", &[]);
    assert!(r.get("uncertainty").is_none(), "{}", r["kind"]);
}

/// The families' coverage, leaving each source out, as `validate --coverage` prints it.
fn coverage_lines(args: &[&str]) -> Vec<(String, f64, f64, f64)> {
    let out = run_in(&root(), args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .skip(2)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let pct = |s: &str| s.trim_end_matches('%').parse::<f64>().unwrap() / 100.0;
            (f[0].to_string(), pct(f[3]), pct(f[4]), pct(f[5]))
        })
        .collect()
}

#[test]
fn training_and_serving_intervals_hold_on_sources_they_were_not_made_from() {
    let lines = coverage_lines(&["validate", "--coverage"]);
    for family in ["training", "serving"] {
        let (_, inside, half, error) = lines
            .iter()
            .find(|l| l.0 == family)
            .cloned()
            .unwrap_or_else(|| panic!("no line for {family}"));
        assert!(inside >= 0.75, "{family}: {inside} inside");
        assert!(
            half > error,
            "{family}: an interval narrower than the typical error"
        );
    }
    // Training's intervals are not an answer-everything +-50%: at most twice the typical error.
    let training = lines.iter().find(|l| l.0 == "training").unwrap();
    assert!(training.2 <= 2.0 * training.3, "{training:?}");
}

#[test]
fn coverage_of_a_missing_file_exits_2_saying_where() {
    let out = run_in(&root(), &["validate", "nowhere.json", "--coverage"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("error: the file of published measurements was not found: nowhere.json"),
        "{err}"
    );
    let out = run_in(&root(), &["validate", "--residuals", "x.json", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--residuals writes a file, not JSON on stdout"
    );
    assert!(!root().join("x.json").exists());
}
