//! The viewer's loaders fuzzed (docs/FUZZ.md): saved reports and traces (`saved::load`, alone
//! or as a pair) and sweep results (`sweep_view::SweepTable`, CSV and JSON lines), mutated as
//! JSON trees or as text by the scenario fuzzer's own code (`sim/tests/it/fuzz/`), opened as a
//! user opens them and drawn in every tab, headless. Opening may fail with a message; a panic,
//! or a load and draw over `LIMIT`, is a finding. Findings kept in `sim/tests/fuzz/viewer/` (a
//! folder per finding, its files opened together) are opened every time. CI tries `CI_CASES`
//! mutants from a fixed seed; `fuzz::long` takes `FUZZ_CASES` and `FUZZ_SEED`.

#[path = "../../sim/tests/it/fuzz/mutation.rs"]
mod mutation;
#[path = "../../sim/tests/it/fuzz/text.rs"]
mod text;

use crate::app::App;
use crate::args::Args;
use crate::layout::Tab;
use crate::worker::Worker;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

const CI_CASES: u32 = 24;
/// A load and draw longer than this is a hang (a debug build).
const LIMIT: Duration = Duration::from_secs(60);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files a mutant starts from: a saved run (a report, its trace, or both) or a sweep result
/// (the parts of a sharded sweep merged).
fn inputs() -> Vec<Vec<(String, String)>> {
    let seeds = repo().join("sim/tests/fuzz/seeds");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let mut out = Vec::new();
    for kind in ["training", "serving", "diffusion"] {
        let report = format!("{kind}-report.json");
        let trace = format!("{kind}-trace.json");
        let file = |name: &str| (name.to_string(), read(&seeds.join("saved").join(name)));
        out.push(vec![file(&report)]);
        out.push(vec![file(&trace)]);
        out.push(vec![file(&report), file(&trace)]);
    }
    for (ext, format) in [
        ("csv", clustersim::sweep::Format::Csv),
        ("jsonl", clustersim::sweep::Format::Jsonl),
    ] {
        let parts: Vec<clustersim::sweep::Part> = (0..3)
            .map(|i| {
                let path = seeds.join(format!("merge/part-{i}.{ext}"));
                let bytes = std::fs::read(&path).unwrap();
                clustersim::sweep::Part { path, bytes }
            })
            .collect();
        let merged = clustersim::sweep::merge(&parts, format).unwrap();
        out.push(vec![(
            format!("sweep.{ext}"),
            String::from_utf8(merged).unwrap(),
        )]);
    }
    out
}

/// What opening a mutant came to: opened (true) or refused with a message (false), or a
/// finding.
fn open(files: Vec<(String, String)>) -> Result<bool, String> {
    static TRIALS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "clustersim-viewer-fuzz-{}-{}",
        std::process::id(),
        TRIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|(name, text)| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        })
        .collect();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(move || {
            let mut app = App::new(Args::default(), Worker::new(|| {}));
            app.open_files(&paths);
            assert!(app.finish(LIMIT), "the load finishes");
            let opened = app.error.is_none() && app.sweep.error.is_none();
            // The worker catches a panic and shows it as an error: still a finding here.
            if let Some(e) = &app.error {
                assert!(!e.message.contains("panicked"), "{}", e.message);
            }
            // Tofu for characters no font has, as the viewer draws them (kittest panics).
            let mut h = egui_kittest::Harness::builder()
                .with_size(egui::vec2(1400.0, 900.0))
                .allow_missing_glyphs()
                .build_ui_state(|ui, app: &mut App| app.show(ui), app);
            for tab in Tab::ALL {
                h.state_mut().tab = tab;
                h.run_steps(2);
            }
            opened
        });
        let _ = tx.send(result.map_err(|p| clustersim::panic_message(&*p, "")));
    });
    let outcome = match rx.recv_timeout(LIMIT) {
        Ok(Ok(opened)) => Ok(opened),
        Ok(Err(why)) => Err(format!("panicked: {why}")),
        Err(_) => Err(format!("ran over {LIMIT:?}")),
    };
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// `text` of the file `name` changed as a JSON tree (`.json`, unless `as_text`) or as text.
fn mutate(
    name: &str,
    text: &str,
    tree: &[mutation::Mutation],
    edits: &[text::Edit],
    as_text: bool,
) -> String {
    if name.ends_with(".json") && !as_text {
        let json: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut t = mutation::from_json(&json);
        for m in tree {
            mutation::apply(&mut t, m, &mut Vec::new());
        }
        return serde_json::to_string_pretty(&mutation::to_json(&t, json.is_object())).unwrap();
    }
    edits
        .iter()
        .fold(text.to_string(), |t, e| text::apply(&t, e, ','))
}

fn fuzz(cases: u32, seed: u64) {
    let inputs = inputs();
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let strategy = (
        any::<usize>(),
        any::<usize>(),
        prop::collection::vec(mutation::mutation(), 1..4),
        prop::collection::vec(text::edit(), 1..4),
        prop::bool::weighted(0.2),
    );
    let (mut opened, mut refused) = (0, 0);
    let mut findings = Vec::new();
    for _ in 0..cases {
        let (pick, target, tree, edits, as_text) =
            strategy.new_tree(&mut runner).unwrap().current();
        let mut files = inputs[pick % inputs.len()].clone();
        let target = target % files.len();
        files[target].1 = mutate(&files[target].0, &files[target].1, &tree, &edits, as_text);
        match open(files.clone()) {
            Ok(true) => opened += 1,
            Ok(false) => refused += 1,
            Err(why) => {
                let saved = files
                    .iter()
                    .map(|(name, text)| {
                        format!("# save as sim/tests/fuzz/viewer/NAME/{name}:\n{text}")
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                eprintln!("viewer fuzz finding:\n# {why}\n{saved}\n");
                findings.push(format!("# {why}\n{saved}"));
            }
        }
    }
    eprintln!(
        "fuzz viewer: {cases} mutants from seed {seed}: {opened} opened, {refused} refused, {} findings",
        findings.len()
    );
    assert!(findings.is_empty(), "{}", findings.join("\n\n"));
}

#[test]
fn mutated_saved_runs_and_sweeps_open_or_are_refused_never_panic() {
    fuzz(CI_CASES, 20261206);
}

/// The long run: `FUZZ_CASES=2000 FUZZ_SEED=1 cargo test -p clustersim-gui fuzz::long --
/// --ignored --nocapture`.
#[test]
#[ignore]
fn long() {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    fuzz(
        var("FUZZ_CASES").unwrap_or(500) as u32,
        var("FUZZ_SEED").unwrap_or(1),
    );
}

/// Saved runs and sweeps that once panicked or hung: each opens or is refused now.
#[test]
fn past_findings_open_or_are_refused() {
    let Ok(entries) = std::fs::read_dir(repo().join("sim/tests/fuzz/viewer")) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    dirs.sort();
    for dir in dirs {
        let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (
                    name,
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned(),
                )
            })
            .collect();
        files.sort();
        if let Err(why) = open(files) {
            panic!("{}: {why}", dir.display());
        }
    }
}
