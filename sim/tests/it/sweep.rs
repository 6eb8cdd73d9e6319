//! `clustersim sweep` and `clustersim merge` as a user meets them: four shards written to files
//! and merged equal the unsharded file byte for byte, stdout CSV, and exit code 2 with a named
//! flag for bad input. (The library's behaviour is tested in tests/tests/sweep.rs.)

use crate::common;

use common::{root, text};
use std::path::PathBuf;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    common::run_in(&root(), args)
}

const SCENARIO: &str = "scenarios/training/gpt3-1.3b-8xh100.toml";

/// A fresh directory of this test's own under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn four_shard_files_merge_into_the_unsharded_file() {
    let dir = scratch("sweep-shards");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let vary = [
        "sweep",
        SCENARIO,
        "--vary",
        "parallel.tp=1,2,3",
        "--vary",
        "parallel.micro_batch=1,2",
    ];
    let whole = path("whole.jsonl");
    let out = run(&[&vary[..], &["--out", &whole]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("6 points, 4 ok, 2 failed"),
        "{}",
        text(&out.stderr)
    );
    let mut parts = Vec::new();
    for i in 0..4 {
        let part = path(&format!("part-{i}.jsonl"));
        let shard = format!("{i}/4");
        let out = run(&[&vary[..], &["--shard", &shard, "--out", &part]].concat());
        assert!(out.status.success(), "{}", text(&out.stderr));
        parts.push(part);
    }
    let merged = path("merged.jsonl");
    let mut args = vec!["merge"];
    args.extend(parts.iter().rev().map(String::as_str));
    args.extend(["--out", &merged]);
    let out = run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (a, b) = (
        std::fs::read(&whole).unwrap(),
        std::fs::read(&merged).unwrap(),
    );
    assert_eq!(text(&a), text(&b));
    assert_eq!(text(&a).lines().count(), 6);

    // Without a part: exit 2 naming the missing points.
    let out = run(&["merge", &parts[0], &parts[1], &parts[2], "--out", &merged]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("missing: 3"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_out_the_rows_are_csv_on_stdout() {
    let out = run(&[
        "sweep",
        SCENARIO,
        "--vary",
        "parallel.tp=1,2",
        "--metric",
        "mfu",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "point,points,parallel.tp,status,error,mfu");
    assert!(lines[1].starts_with("0,2,1,ok,,0."), "{stdout}");
    assert_eq!(lines.len(), 3);
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    for (args, says) in [
        (
            vec!["--vary", "parallel.tp"],
            "--vary parallel.tp: missing `=`",
        ),
        (vec!["--vary", "parallel.tp="], "no values"),
        (
            vec!["--vary", "parallel.tp=1", "--shard", "4/4"],
            "--shard 4/4",
        ),
        (vec!["--vary", "parallel.tpp=1,2"], "unknown key `tpp`"),
        (
            vec!["--vary", "parallel.tp=1", "--out", "rows.txt"],
            ".jsonl",
        ),
        (
            vec!["--vary", "parallel.tp=1", "--metric", "mfuu"],
            "did you mean `mfu`",
        ),
    ] {
        let out = run(&[&["sweep", SCENARIO][..], &args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
