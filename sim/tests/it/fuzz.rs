//! Structure-aware fuzzing of scenario files (docs/FUZZ.md). Every shipped scenario, of every
//! kind, is read as TOML and mutated: values replaced by others at and past their limits (zero,
//! negative, huge, wrong types, unit strings good and bad), numbers scaled by powers of ten, keys
//! removed, unknown keys added, array entries repeated, `--set` options on deep paths. Each
//! mutant is parsed and run. It may succeed or fail with an error that names a file and says
//! what is wrong; a panic, or a run over `LIMIT`, is a finding. CI runs `CI_CASES` mutants
//! of the scenarios of up to `CI_NODES` servers from a fixed seed; `FUZZ_CASES`, `FUZZ_SEED` and `--ignored` run longer. Mutants that once
//! failed are files in `sim/tests/fuzz/`, run every time.

use crate::common;

use clustersim::Scenario;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use toml::{Table, Value};

/// Mutants a CI run tries.
const CI_CASES: u32 = 120;
/// A run longer than this is a hang: 10 s in a release build, 60 s in a debug one (about ten
/// times slower).
const LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 60 } else { 10 });
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

/// A value put in place of another.
fn value() -> impl Strategy<Value = Value> {
    let strings = prop::sample::select(vec![
        "",
        "0",
        "-1",
        "0 s",
        "-3 ms",
        "1e99 GB",
        "5 furlongs",
        "NaN",
        "inf",
        "400 Gb/s",
        "0 Gb/s",
        "1e-30 s",
        "18446744073709551616",
        "H100",
        "all",
        "stage",
        "flow",
        "training",
        "cluster",
        "node0/nic0",
        "leaf0",
        "1 TB",
        "10/s",
        "0/s",
        "1e9 W",
        "-5 W",
        "adam",
        "llama-3-8b",
        "gpt3-175b",
        "interleaved-1f1b",
        "1f1b",
        "poisson",
        "../../etc/passwd",
        "résumé ✓",
        "1_000",
        "1.5e3 GiB",
        "2 d",
        "300 min",
    ]);
    prop_oneof![
        prop::sample::select(vec![
            0i64,
            -1,
            1,
            2,
            3,
            7,
            i64::MAX,
            i64::MIN,
            u32::MAX as i64,
            u32::MAX as i64 + 1,
            1 << 31,
            1 << 40,
        ])
        .prop_map(Value::Integer),
        any::<i64>().prop_map(Value::Integer),
        prop::sample::select(vec![0.0, -0.0, -1.5, 1e-300, 1e308, 0.5, 1.0000001, 1e9])
            .prop_map(Value::Float),
        strings.prop_map(|s| Value::String(s.to_string())),
        "[a-z0-9 ./_-]{0,12}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Boolean),
        Just(Value::Array(Vec::new())),
        prop::collection::vec(0i64..20, 1..4)
            .prop_map(|v| Value::Array(v.into_iter().map(Value::Integer).collect())),
        Just(Value::Table(Table::new())),
    ]
}

/// One change to a scenario; `at` picks among the places it can apply to.
#[derive(Clone, Debug)]
enum Mutation {
    Replace {
        at: usize,
        with: Value,
    },
    Scale {
        at: usize,
        power: i32,
    },
    Remove {
        at: usize,
    },
    Add {
        at: usize,
        key: String,
        with: Value,
    },
    Repeat {
        at: usize,
    },
    Set {
        at: usize,
        extra: Option<String>,
        with: Value,
    },
}

const KEYS: [&str; 24] = [
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "nodes",
    "gpus_per_node",
    "ranks",
    "perturb",
    "job",
    "servers",
    "steps",
    "trace_gpus",
    "global_batch",
    "micro_batch",
    "requests",
    "rate",
    "seed",
    "nic_bandwidth",
    "link",
    "bandwidth",
    "kind",
    "scenario",
    "zzz",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        4 => (at, value()).prop_map(|(at, with)| Mutation::Replace { at, with }),
        2 => (at, -6i32..10).prop_map(|(at, power)| Mutation::Scale { at, power }),
        2 => at.prop_map(|at| Mutation::Remove { at }),
        2 => (at, prop::sample::select(KEYS.to_vec()), value())
            .prop_map(|(at, key, with)| Mutation::Add { at, key: key.into(), with }),
        1 => at.prop_map(|at| Mutation::Repeat { at }),
        2 => (at, prop::option::of(prop::sample::select(KEYS.to_vec())), value()).prop_map(
            |(at, extra, with)| Mutation::Set { at, extra: extra.map(str::to_string), with }
        ),
    ]
}

/// Every leaf and table of `t` by path (tables and array entries indexed), in a stable order.
fn places(t: &Table, prefix: &[String], out: &mut Vec<(Vec<String>, bool)>) {
    for (k, v) in t {
        let mut path = prefix.to_vec();
        path.push(k.clone());
        match v {
            Value::Table(inner) => {
                out.push((path.clone(), true));
                places(inner, &path, out);
            }
            Value::Array(items) if items.iter().all(Value::is_table) && !items.is_empty() => {
                out.push((path.clone(), false));
                for (i, item) in items.iter().enumerate() {
                    let mut at = path.clone();
                    at.push(i.to_string());
                    out.push((at.clone(), true));
                    places(item.as_table().unwrap(), &at, out);
                }
            }
            _ => out.push((path, false)),
        }
    }
}

/// The value at `path` (array entries by index).
fn get_mut<'a>(t: &'a mut Table, path: &[String]) -> Option<&'a mut Value> {
    let (first, rest) = path.split_first()?;
    let mut v = t.get_mut(first)?;
    for p in rest {
        v = match v {
            Value::Table(t) => t.get_mut(p)?,
            Value::Array(a) => a.get_mut(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Applies `m` to `t`; `--set` options go to `sets`.
fn apply(t: &mut Table, m: &Mutation, sets: &mut Vec<String>) {
    let mut all = Vec::new();
    places(t, &[], &mut all);
    if all.is_empty() {
        return;
    }
    let pick = |at: usize| all[at % all.len()].clone();
    match m {
        Mutation::Replace { at, with } => {
            if let Some(v) = get_mut(t, &pick(*at).0) {
                *v = with.clone();
            }
        }
        Mutation::Scale { at, power } => {
            if let Some(v) = get_mut(t, &pick(*at).0) {
                let x = 10f64.powi(*power);
                let scaled = match &*v {
                    Value::Integer(i) => Value::Integer((*i as f64 * x).clamp(-9e18, 9e18) as i64),
                    Value::Float(f) => Value::Float(*f * x),
                    Value::String(s) => {
                        // "400 Gb/s" -> "4e+12 Gb/s": the number of a quantity scaled.
                        let (n, unit) = s.split_once(' ').unwrap_or((s.as_str(), ""));
                        match n.parse::<f64>() {
                            Ok(n) => Value::String(format!("{:e} {unit}", n * x)),
                            Err(_) => v.clone(),
                        }
                    }
                    other => other.clone(),
                };
                *v = scaled;
            }
        }
        Mutation::Remove { at } => {
            let (path, _) = pick(*at);
            let (last, parent) = path.split_last().unwrap();
            match if parent.is_empty() {
                None
            } else {
                get_mut(t, parent)
            } {
                Some(Value::Table(p)) => {
                    p.remove(last);
                }
                Some(Value::Array(a)) => {
                    if let Ok(i) = last.parse::<usize>()
                        && i < a.len()
                    {
                        a.remove(i);
                    }
                }
                Some(_) => {}
                None => {
                    t.remove(last);
                }
            }
        }
        Mutation::Add { at, key, with } => {
            let tables: Vec<Vec<String>> =
                all.iter().filter(|p| p.1).map(|p| p.0.clone()).collect();
            let target = match tables.get(at % tables.len().max(1)) {
                Some(p) => get_mut(t, p).and_then(Value::as_table_mut),
                None => Some(t),
            };
            if let Some(table) = target {
                table.insert(key.clone(), with.clone());
            }
        }
        Mutation::Repeat { at } => {
            if let Some(Value::Array(a)) = get_mut(t, &pick(*at).0)
                && let Some(first) = a.first().cloned()
            {
                a.push(first);
            }
        }
        Mutation::Set { at, extra, with } => {
            let mut path = pick(*at).0;
            path.extend(extra.clone());
            sets.push(format!("{}={with}", path.join(".")));
        }
    }
}

/// What running a mutant came to.
enum Outcome {
    Ran,
    Refused,
    Panicked(String),
    Hung,
}

/// Parses and runs `text` as the file `path` with `sets`, in a thread of its own.
fn run(path: &Path, text: String, sets: Vec<String>) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(|| {
            let s = Scenario::parse(&path, text, &sets)?;
            let out = clustersim::run(&s)?;
            // A report is JSON that prints, and never a negative memory figure.
            let bytes = out
                .report
                .get("memory")
                .and_then(|m| m["peak_bytes_per_gpu"].as_f64());
            assert!(bytes.is_none_or(|b| b >= 0.0), "negative memory {bytes:?}");
            serde_json::to_string(&out.report).expect("a report prints");
            Ok::<_, clustersim::scenario::error::ScenarioError>(())
        });
        let _ = tx.send(match result {
            Ok(Ok(())) => Outcome::Ran,
            Ok(Err(e)) => {
                assert!(!e.message.is_empty(), "an error says what is wrong");
                Outcome::Refused
            }
            Err(p) => Outcome::Panicked(
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            ),
        });
    });
    rx.recv_timeout(LIMIT).unwrap_or(Outcome::Hung)
}

/// Runs `cases` mutants from `seed`, or as many as `minutes` allow; panics listing the findings,
/// each as the file to add to `sim/tests/fuzz/`.
fn fuzz(cases: u32, seed: u64, heavy: bool, minutes: Option<u64>) {
    let started = std::time::Instant::now();
    let deadline = minutes.map(|m| started + Duration::from_secs(60 * m));
    let corpus = corpus(heavy);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let strategy = (any::<usize>(), prop::collection::vec(mutation(), 1..4));
    let (mut ran, mut refused) = (0, 0);
    let mut findings = Vec::new();
    for _ in 0..cases {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        let (pick, mutations) = strategy.new_tree(&mut runner).unwrap().current();
        let (path, text) = &corpus[pick % corpus.len()];
        let mut table: Table = text.parse().unwrap();
        let mut sets = Vec::new();
        for m in &mutations {
            apply(&mut table, m, &mut sets);
        }
        let mutant = toml::to_string(&table).unwrap_or_default();
        let finding = |what: String| {
            let from = path.strip_prefix(common::root()).unwrap_or(path);
            let sets = serde_json::to_string(&sets).unwrap();
            let what = what.replace('\n', " ");
            format!(
                "# {what}\n# from {}\n# sets: {sets}\n{mutant}",
                from.display()
            )
        };
        let found = match run(path, mutant.clone(), sets.clone()) {
            Outcome::Ran => {
                ran += 1;
                continue;
            }
            Outcome::Refused => {
                refused += 1;
                continue;
            }
            Outcome::Panicked(why) => finding(format!("panicked: {why}")),
            Outcome::Hung => finding(format!("ran over {LIMIT:?}")),
        };
        eprintln!("fuzz finding:\n{found}\n");
        findings.push(found);
        // A hung run's thread cannot be stopped: it would slow every run after it.
        if findings.last().is_some_and(|f| f.starts_with("# ran over")) {
            break;
        }
    }
    eprintln!(
        "fuzz: {} mutants from seed {seed} in {:.0} s: {ran} ran, {refused} refused, {} findings",
        ran + refused + findings.len(),
        started.elapsed().as_secs_f64(),
        findings.len()
    );
    assert!(findings.is_empty(), "{}", findings.join("\n\n"));
}

#[test]
fn mutated_scenarios_run_or_are_refused_never_panic() {
    fuzz(CI_CASES, 20261205, false, None);
}

/// The long run: `FUZZ_MINUTES=30 FUZZ_SEED=8 cargo test --release -p clustersim --test it
/// fuzz::long -- --ignored --nocapture` (or `FUZZ_CASES=N` mutants).
#[test]
#[ignore]
fn long() {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let minutes = var("FUZZ_MINUTES");
    let cases = var("FUZZ_CASES").unwrap_or(if minutes.is_some() {
        u32::MAX.into()
    } else {
        2000
    });
    fuzz(cases as u32, var("FUZZ_SEED").unwrap_or(1), true, minutes);
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
            Outcome::Ran | Outcome::Refused => {}
            Outcome::Panicked(why) => panic!("{}: panicked: {why}", f.display()),
            Outcome::Hung => panic!("{}: ran over {LIMIT:?}", f.display()),
        }
    }
}
