//! Held-out malformed inputs (`sim/tests/malformed/`, written from the docs alone): every one is
//! refused with exit 2 and an error, never a panic; one that comes from a file points at its
//! line and column.

use crate::common;
use common::{root, text};
use serde_json::Value;

/// Cases whose mistake is on the command line, with no file to point into.
fn on_the_command_line(id: &str) -> bool {
    let n: u32 = id[..2].parse().unwrap();
    matches!(n, 37..=39 | 60..)
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
        let located = err.lines().any(|l| {
            l.trim_start().strip_prefix("--> ").is_some_and(|place| {
                let mut parts = place.rsplitn(3, ':');
                let col = parts.next().unwrap_or("");
                let line = parts.next().unwrap_or("");
                col.parse::<u32>().is_ok() && line.parse::<u32>().is_ok()
            })
        });
        let ok = out.status.code() == Some(2)
            && err.starts_with("error: ")
            && !err.contains("panicked")
            && (located || on_the_command_line(id));
        if !ok {
            wrong.push(format!("{id} (exit {:?}): {err}", out.status.code()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
