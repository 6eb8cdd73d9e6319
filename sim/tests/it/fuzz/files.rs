//! The files beside a scenario, mutated: Hugging Face configs (under a training and a serving
//! scenario), calibration profiles (under the scenarios that name the shipped ones), request
//! traces and length lists (under a serving scenario), the parts of a sharded sweep (through
//! `merge`, CSV and JSON lines) and validation files (parsed, then each case simulated). JSON and
//! TOML files are mutated as trees or as text, the others as text. A file is written beside a
//! scenario that names it, in a folder of its own, and the scenario runs as the CLI runs it.
//! Findings kept in `sim/tests/fuzz/files/` (named `<kind>-...`; a `merge-...` one is a folder
//! of parts) run every time. `FUZZ_KIND=<kind>` fuzzes one kind.

use super::mutation::{self, Mutation};
use super::text::{self, Edit};
use super::{Budget, LIMIT, Outcome, campaign, contained};
use crate::common;
use clustersim::Scenario;
use clustersim::sweep::{Format, Part, merge};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use toml::{Table, Value};

/// Mutants a CI run tries.
const CI_CASES: u32 = 60;

/// A shipped scenario (its path) and the change that makes it name the side file.
type Host = (&'static str, fn(&mut Table));

/// A kind of side file: where its seeds are and what reads it.
struct Kind {
    name: &'static str,
    /// Seed files, relative to the repository.
    seeds: &'static [&'static str],
    /// The shipped scenario that reads the file, and the keys that make it name `file`.
    host: Option<Host>,
    /// The file's name beside the host scenario.
    file: &'static str,
    /// Fields are split on this in text mutation; `None`: the file is a JSON or TOML tree.
    sep: Option<char>,
}

fn set(t: &mut Table, section: &str, value: &str) {
    t.insert(section.into(), Value::Table(value.parse().unwrap()));
}

const SERVING: &str = "scenarios/serving/llama-3.1-8b-1xh100-offline.toml";
/// A small offline workload for the serving hosts.
const WORKLOAD: &str =
    "requests = 40\narrival = \"offline\"\nprompt_tokens = 200\noutput_tokens = 20";

const KINDS: [Kind; 8] = [
    Kind {
        name: "hf-training",
        seeds: &[
            "sim/tests/hf/llama-3-8b.json",
            "sim/tests/hf/mixtral-8x7b.json",
            "sim/tests/hf/qwen3-30b-a3b.json",
            "sim/tests/hf/deepseek-v3.json",
        ],
        host: Some(("scenarios/training/gpt3-1.3b-8xh100.toml", |t| {
            set(t, "model", "hf_config = \"config.json\"")
        })),
        file: "config.json",
        sep: None,
    },
    Kind {
        name: "hf-serving",
        seeds: &[
            "sim/tests/hf/llama-3-8b.json",
            "sim/tests/hf/mixtral-8x7b.json",
        ],
        host: Some((SERVING, |t| {
            set(t, "model", "hf_config = \"config.json\"");
            set(t, "workload", WORKLOAD);
        })),
        file: "config.json",
        sep: None,
    },
    Kind {
        name: "profile-h100",
        seeds: &["sim/profiles/h100-sxm5-80gb-vidur.toml"],
        host: Some(("scenarios/training/gpt3-1.3b-8xh100-profile.toml", |t| {
            t["cluster"]["profile"] = Value::String("profile.toml".into())
        })),
        file: "profile.toml",
        sep: None,
    },
    Kind {
        name: "profile-h200",
        seeds: &["sim/profiles/h200-sxm-141gb-measured.toml"],
        host: Some(("scenarios/training/llama-3-8b-8xh200-measured.toml", |t| {
            t["cluster"]["profile"] = Value::String("profile.toml".into())
        })),
        file: "profile.toml",
        sep: None,
    },
    Kind {
        name: "trace",
        seeds: &[
            "sim/tests/traces/azure.csv",
            "sim/tests/traces/simple.csv",
            "sim/tests/traces/inputs-only.csv",
            "sim/tests/traces/unsorted.csv",
        ],
        host: Some((SERVING, |t| {
            set(
                t,
                "workload",
                "arrival = \"trace\"\ntrace = \"trace.csv\"\nprompt_tokens = 200\noutput_tokens = 20",
            )
        })),
        file: "trace.csv",
        sep: Some(','),
    },
    Kind {
        name: "lengths",
        seeds: &["sim/tests/traces/lengths.txt"],
        host: Some((SERVING, |t| {
            set(
                t,
                "workload",
                "requests = 40\narrival = \"offline\"\n\
                 prompt_tokens = { dist = \"empirical\", file = \"lengths.txt\" }\n\
                 output_tokens = { dist = \"empirical\", file = \"lengths.txt\", max = 50 }",
            )
        })),
        file: "lengths.txt",
        sep: Some(' '),
    },
    Kind {
        name: "merge",
        seeds: &[
            "sim/tests/fuzz/seeds/merge/part-0.csv",
            "sim/tests/fuzz/seeds/merge/part-1.csv",
            "sim/tests/fuzz/seeds/merge/part-2.csv",
            "sim/tests/fuzz/seeds/merge/part-0.jsonl",
            "sim/tests/fuzz/seeds/merge/part-1.jsonl",
            "sim/tests/fuzz/seeds/merge/part-2.jsonl",
        ],
        host: None,
        file: "part",
        sep: Some(','),
    },
    Kind {
        name: "validation",
        seeds: &[
            "validation/llm-foundry-a100.json",
            "validation/nccl-tests-multinode.json",
            "validation/nemo-fp8.json",
            "validation/serving-small-batch.json",
            "validation/video-long.json",
            "validation/xdit-consisid-h100.json",
            "validation/megatron-sc21-zero3-530b.json",
        ],
        host: None,
        file: "cases.json",
        sep: None,
    },
];

/// Runs `kind`'s reader on `files` (name, text): one file, or a merge's parts.
fn read(kind: &Kind, files: Vec<(String, String)>) -> Outcome {
    static TRIALS: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "clustersim-fuzz-{}-{}",
        std::process::id(),
        TRIALS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let host = kind.host.map(|(path, change)| {
        let mut t: Table = std::fs::read_to_string(common::root().join(path))
            .unwrap()
            .parse()
            .unwrap();
        change(&mut t);
        toml::to_string(&t).unwrap()
    });
    let name = kind.name;
    let at = dir.clone();
    let outcome = contained(move || match (name, host) {
        (_, Some(host)) => {
            std::fs::write(at.join(&files[0].0), &files[0].1).unwrap();
            let path = at.join("host.toml");
            let s = Scenario::parse(&path, host, &[]).map_err(|e| e.message)?;
            let out = clustersim::run(&s).map_err(|e| e.message)?;
            serde_json::to_string(&out.report).expect("a report prints");
            Ok(())
        }
        ("merge", None) => {
            let format = match files[0].0.ends_with(".jsonl") {
                true => Format::Jsonl,
                false => Format::Csv,
            };
            let parts: Vec<Part> = files
                .into_iter()
                .map(|(name, text)| Part {
                    path: at.join(name),
                    bytes: text.into_bytes(),
                })
                .collect();
            merge(&parts, format).map_err(|e| e.to_string())?;
            Ok(())
        }
        _ => {
            let cases = clustersim::validate::parse(&at.join(&files[0].0), &files[0].1)
                .map_err(|e| e.to_string())?;
            for c in &cases {
                for row in clustersim::validate::validate_case(c, "cases.json") {
                    // A case's panic is caught and reported on its row: still a finding here.
                    if let clustersim::validate::Status::Failed(why) = &row.status {
                        assert!(!why.starts_with("the simulator panicked"), "{why}");
                    }
                    serde_json::to_string(&row.to_json()).expect("a row prints");
                }
            }
            Ok(())
        }
    });
    if !matches!(outcome, Outcome::Hung) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    outcome
}

/// How a file is changed: as a tree or as text.
#[derive(Clone, Debug)]
enum Change {
    Tree(Vec<Mutation>),
    Text(Vec<Edit>),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        5 => prop::collection::vec(mutation::mutation(), 1..4).prop_map(Change::Tree),
        1 => prop::collection::vec(text::edit(), 1..4).prop_map(Change::Text),
    ]
}

/// `text` (of a file of `kind` named `name`) with `change` applied.
fn mutate(kind: &Kind, name: &str, text: &str, change: &Change) -> String {
    match (change, kind.sep) {
        (Change::Tree(ms), None) if name.ends_with(".json") => {
            let json: serde_json::Value = serde_json::from_str(text).unwrap();
            let mut t = mutation::from_json(&json);
            for m in ms {
                mutation::apply(&mut t, m, &mut Vec::new());
            }
            serde_json::to_string_pretty(&mutation::to_json(&t, json.is_object())).unwrap()
        }
        (Change::Tree(ms), None) => {
            let mut t: Table = text.parse().unwrap();
            for m in ms {
                mutation::apply(&mut t, m, &mut Vec::new());
            }
            toml::to_string(&t).unwrap_or_default()
        }
        (Change::Tree(_), Some(_)) => unreachable!("rows of fields change as text"),
        (Change::Text(es), sep) => es.iter().fold(text.to_string(), |t, e| {
            text::apply(&t, e, sep.unwrap_or(','))
        }),
    }
}

/// A validation file of one case, the `pick`th of `text`'s (they run one at a time).
fn one_case(text: &str, pick: usize) -> String {
    let cases: Vec<serde_json::Value> = serde_json::from_str(text).unwrap();
    serde_json::to_string_pretty(&[&cases[pick % cases.len()]]).unwrap()
}

fn fuzz(budget: &Budget) {
    let strategy = (
        any::<usize>(),
        any::<usize>(),
        1u8..8,
        change(),
        prop::bool::weighted(0.1),
        prop::collection::vec(text::edit(), 1..3),
    );
    let only = std::env::var("FUZZ_KIND").ok();
    let kinds: Vec<&Kind> = KINDS
        .iter()
        .filter(|k| only.as_ref().is_none_or(|o| k.name == o))
        .collect();
    campaign(
        "side files",
        budget,
        strategy,
        |(k, pick, mask, change, text_too, edits)| {
            let kind = kinds[k % kinds.len()];
            let read_seed = |p: &str| std::fs::read_to_string(common::root().join(p)).unwrap();
            let mut files: Vec<(String, String)> = if kind.name == "merge" {
                // Some parts of one format, one of them changed.
                let first = if pick % 2 == 0 { 0 } else { 3 };
                (0..3)
                    .filter(|i| mask & (1 << i) != 0)
                    .map(|i| {
                        let p = kind.seeds[first + i];
                        (p.rsplit('/').next().unwrap().to_string(), read_seed(p))
                    })
                    .collect()
            } else {
                let seed = read_seed(kind.seeds[pick % kind.seeds.len()]);
                let seed = match kind.name {
                    "validation" => one_case(&seed, pick / kind.seeds.len()),
                    _ => seed,
                };
                vec![(kind.file.to_string(), seed)]
            };
            let change = match kind.sep {
                Some(_) => Change::Text(edits.clone()),
                None => change,
            };
            let target = pick % files.len();
            let (name, text) = &files[target];
            let mut mutant = mutate(kind, name, text, &change);
            if text_too && matches!(change, Change::Tree(_)) && kind.sep.is_none() {
                mutant = mutate(kind, name, &mutant, &Change::Text(edits));
            }
            files[target].1 = mutant;
            let reproducer = files
                .iter()
                .map(|(name, text)| {
                    format!(
                        "# save as sim/tests/fuzz/files/{}-NAME{}:\n{text}",
                        kind.name,
                        if kind.name == "merge" {
                            format!("/{name}")
                        } else {
                            format!(".{}", name.rsplit('.').next().unwrap())
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            (read(kind, files), reproducer)
        },
    );
}

#[test]
fn mutated_side_files_are_read_or_refused_never_panic() {
    let budget = Budget {
        cases: CI_CASES,
        seed: 20261206,
        minutes: None,
    };
    fuzz(&budget);
}

/// The long run: `FUZZ_MINUTES=30 FUZZ_SEED=1 cargo test --release -p clustersim --test it
/// fuzz::files::long -- --ignored --nocapture` (or `FUZZ_CASES=N` mutants).
#[test]
#[ignore]
fn long() {
    fuzz(&Budget::from_env());
}

/// Side files that once panicked or hung: each is read or refused now.
#[test]
fn past_findings_are_read_or_refused() {
    let dir = common::root().join("sim/tests/fuzz/files");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let file_name = path.file_name().unwrap().to_string_lossy().to_string();
        let kind = KINDS
            .iter()
            .filter(|k| file_name.starts_with(&format!("{}-", k.name)))
            .max_by_key(|k| k.name.len())
            .unwrap_or_else(|| panic!("{}: names no kind of file", path.display()));
        let files = match path.is_dir() {
            true => parts(&path),
            false => vec![(kind.file.to_string(), read_text(&path))],
        };
        match read(kind, files) {
            Outcome::Ran | Outcome::Refused(_) => {}
            Outcome::Panicked(why) => panic!("{}: panicked: {why}", path.display()),
            Outcome::Hung => panic!("{}: ran over {LIMIT:?}", path.display()),
        }
    }
}

fn read_text(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

/// A merge finding's parts, by name.
fn parts(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into(),
                read_text(p),
            )
        })
        .collect()
}
