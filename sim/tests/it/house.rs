//! The house rules a reader relies on, checked over the workspace's sources: a module doc says
//! what is modelled and ignored in at most 20 lines (figures and sources live in docs/), and
//! ARCHITECTURE.md stays a map, under 200 lines.

use std::path::{Path, PathBuf};

/// The longest module doc (`//!` lines opening a file) the house allows.
const MODULE_DOC_LINES: usize = 20;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds sim/")
        .to_path_buf()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The number of `//!` lines a file opens with.
fn module_doc_lines(text: &str) -> usize {
    text.lines()
        .take_while(|l| l.trim_start().starts_with("//!"))
        .count()
}

#[test]
fn module_docs_are_short() {
    let root = workspace();
    let mut files = Vec::new();
    for crate_src in ["sim/src", "gui/src", "calibrate/src"] {
        sources(&root.join(crate_src), &mut files);
    }
    assert!(files.len() > 100, "found only {} sources", files.len());
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = module_doc_lines(&std::fs::read_to_string(f).expect("readable source"));
            let name = f.strip_prefix(&root).unwrap_or(f).display().to_string();
            (n > MODULE_DOC_LINES).then(|| format!("{name}: {n} lines"))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "module docs over {MODULE_DOC_LINES} lines (move figures and sources to docs/):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_counter_counts_only_the_opening_doc() {
    assert_eq!(module_doc_lines("//! a\n//! b\n\nuse x;\n//! c\n"), 2);
    assert_eq!(module_doc_lines("use x;\n//! a\n"), 0);
}

#[test]
fn architecture_stays_a_map() {
    let text =
        std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let lines = text.lines().count();
    assert!(
        lines < 200,
        "ARCHITECTURE.md has {lines} lines; keep it under 200"
    );
}
