//! Scenario files mutated: every shipped scenario, of every kind, read as TOML, changed one to
//! three times by `mutation` (with `--set` options among the changes), written back and run
//! through the library as the CLI runs it. A report that is made must print as JSON and hold no
//! negative memory figure. CI mutates the scenarios of up to `CI_NODES` servers; mutants that
//! once failed are files in `sim/tests/fuzz/`.

use super::mutation::{apply, mutation};
use super::{Budget, LIMIT, Outcome, campaign, contained};
use crate::common;
use clustersim::Scenario;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use toml::Table;

/// Mutants a CI run tries.
const CI_CASES: u32 = 120;
/// CI runs mutate scenarios of at most this many servers (the larger ones take seconds each in
/// a debug build); long runs mutate every one.
const CI_NODES: i64 = 16;

/// Every shipped scenario: its path and text.
fn corpus(heavy: bool) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "toml") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&common::root().join("scenarios"), &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .filter(|(_, text)| {
            let nodes = text
                .parse::<Table>()
                .ok()
                .and_then(|t| t.get("cluster")?.get("nodes")?.as_integer());
            heavy || nodes.is_none_or(|n| n <= CI_NODES)
        })
        .collect()
}

/// Parses and runs `text` as the file `path` with `sets`.
fn run(path: &Path, text: String, sets: Vec<String>) -> Outcome {
    let path = path.to_path_buf();
    contained(move || {
        let s = Scenario::parse(&path, text, &sets).map_err(|e| e.message)?;
        let out = clustersim::run(&s).map_err(|e| e.message)?;
        let bytes = out
            .report
            .get("memory")
            .and_then(|m| m["peak_bytes_per_gpu"].as_f64());
        assert!(bytes.is_none_or(|b| b >= 0.0), "negative memory {bytes:?}");
        serde_json::to_string(&out.report).expect("a report prints");
        Ok(())
    })
}

fn fuzz(budget: &Budget, heavy: bool) {
    let corpus = corpus(heavy);
    let strategy = (any::<usize>(), prop::collection::vec(mutation(), 1..4));
    campaign("scenarios", budget, strategy, |(pick, mutations)| {
        let (path, text) = &corpus[pick % corpus.len()];
        let mut table: Table = text.parse().unwrap();
        let mut sets = Vec::new();
        for m in &mutations {
            apply(&mut table, m, &mut sets);
        }
        let mutant = toml::to_string(&table).unwrap_or_default();
        let from = path.strip_prefix(common::root()).unwrap_or(path);
        let reproducer = format!(
            "# from {}\n# sets: {}\n{mutant}",
            from.display(),
            serde_json::to_string(&sets).unwrap()
        );
        (run(path, mutant, sets), reproducer)
    });
}

#[test]
fn mutated_scenarios_run_or_are_refused_never_panic() {
    let budget = Budget {
        cases: CI_CASES,
        seed: 20261205,
        minutes: None,
    };
    fuzz(&budget, false);
}

/// The long run: `FUZZ_MINUTES=30 FUZZ_SEED=9 cargo test --release -p clustersim --test it
/// fuzz::scenarios::long -- --ignored --nocapture` (or `FUZZ_CASES=N` mutants).
#[test]
#[ignore]
fn long() {
    fuzz(&Budget::from_env(), true);
}

/// Mutants that once panicked or hung: each runs or is refused now.
#[test]
fn past_findings_run_or_are_refused() {
    let dir = common::root().join("sim/tests/fuzz");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // The file says which shipped scenario it came from, so its paths resolve as there.
        let from = text
            .lines()
            .find_map(|l| l.strip_prefix("# from "))
            .map(|p| common::root().join(p))
            .unwrap_or_else(|| f.clone());
        let sets: Vec<String> = text
            .lines()
            .find_map(|l| l.strip_prefix("# sets: "))
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        match run(&from, text, sets) {
            Outcome::Ran | Outcome::Refused(_) => {}
            Outcome::Panicked(why) => panic!("{}: panicked: {why}", f.display()),
            Outcome::Hung => panic!("{}: ran over {LIMIT:?}", f.display()),
        }
    }
}
