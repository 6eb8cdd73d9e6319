//! Same scenario and seed, same bytes out: for every shipped scenario, two runs give identical
//! reports and identical trace files; and its text summary finds every figure it prints.

use clustersim::Scenario;
use clustersim::check::discover;
use std::path::{Path, PathBuf};

fn scenarios() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let found = discover(&[root.join("scenarios")]).expect("scenarios/ exists");
    assert!(!found.is_empty(), "no shipped scenarios found");
    found
}

fn run_once(path: &Path) -> (String, Vec<u8>) {
    let scenario = Scenario::load(path, &[]).unwrap_or_else(|e| panic!("{e}"));
    let output = clustersim::run(&scenario).unwrap_or_else(|e| panic!("{e}"));
    // A figure the summary reads from a path the report lacks prints as NaN. The CLI adds the
    // wall time before it prints.
    let mut timed = output.report.clone();
    timed["sim"]["wall_s"] = 0.5.into();
    let summary = clustersim::report::summary::render(&timed);
    assert!(
        !summary.contains("NaN"),
        "{}: the summary prints NaN\n{summary}",
        path.display()
    );
    // `sim.wall_s` is added by the front end that times the run; the library leaves it out.
    assert!(output.report["sim"].get("wall_s").is_none());
    let report = serde_json::to_string(&output.report).unwrap();
    let mut trace = Vec::new();
    output.write_trace(&mut trace).unwrap();
    (report, trace)
}

#[test]
fn every_shipped_scenario_is_deterministic() {
    for path in scenarios() {
        let (report_a, trace_a) = run_once(&path);
        let (report_b, trace_b) = run_once(&path);
        assert_eq!(report_a, report_b, "{}: reports differ", path.display());
        assert!(trace_a == trace_b, "{}: traces differ", path.display());
        assert!(trace_a.len() > 100, "{}: empty trace", path.display());
    }
}

#[test]
fn every_shipped_scenario_meets_its_expectations() {
    for path in scenarios() {
        let outcomes = clustersim::check::check_file(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
        for o in outcomes {
            assert!(o.passed(), "{}: {o}", path.display());
        }
    }
}
