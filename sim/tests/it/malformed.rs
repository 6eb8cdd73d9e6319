//! Held-out malformed inputs (`sim/tests/malformed/`, written from the docs alone): every one is
//! refused with exit 2 and an error, never a panic; one whose mistake is in a file (its `where`
//! is not the command line) names that file's line, and merge's name the parts.

use crate::common;
use common::{root, text};
use serde_json::Value;

/// Whether `err` points into a file: `--> file:line:column` under a scenario error, or
/// `file: line N` / `file line N` as the CSV readers write it.
fn located(err: &str) -> bool {
    let arrow = err.lines().any(|l| {
        l.trim_start().strip_prefix("--> ").is_some_and(|place| {
            let mut parts = place.rsplitn(3, ':');
            let col = parts.next().unwrap_or("");
            let line = parts.next().unwrap_or("");
            col.parse::<u32>().is_ok() && line.parse::<u32>().is_ok()
        })
    });
    let named_line = err
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(3)
        .any(|w| {
            w[0].trim_end_matches(':').contains('.')
                && w[1] == "line"
                && w[2].trim_end_matches(':').parse::<u32>().is_ok()
        });
    arrow || named_line
}

#[test]
fn every_held_out_malformed_input_is_refused_at_its_place() {
    let dir = root().join("sim/tests/malformed");
    let index: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(index.len(), 68);
    let mut wrong = Vec::new();
    for case in &index {
        let id = case["id"].as_str().unwrap();
        let args: Vec<&str> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let at = dir.join("cases").join(id);
        let out = common::run_in(if at.is_dir() { &at } else { &dir }, &args);
        let err = text(&out.stderr);
        // A scenario or side file's mistake has a line; merge's mistakes are between its parts,
        // which the error names.
        let placed = match args[0] {
            "merge" => err.contains(".csv"),
            _ => located(&err) || case["where"].as_str().unwrap().starts_with("command line"),
        };
        let ok = out.status.code() == Some(2)
            && err.starts_with("error: ")
            && !err.contains("panicked")
            && placed;
        if !ok {
            wrong.push(format!("{id} (exit {:?}): {err}", out.status.code()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
