//! The `clustersim` binary as a user meets it: exit codes, one JSON object, located errors.

use crate::common;

use common::{root, text};
use std::path::PathBuf;
use std::process::Output;

fn scenario() -> PathBuf {
    root().join("scenarios/training/megatron-1.7b-32xa100.toml")
}

/// Runs the binary in the repository root.
fn run(args: &[&str]) -> Output {
    common::run_in(&root(), args)
}

#[test]
fn run_json_prints_exactly_one_object() {
    let out = run(&["run", scenario().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut stream = serde_json::Deserializer::from_str(&stdout).into_iter::<serde_json::Value>();
    let report = stream.next().expect("one object").expect("valid JSON");
    assert!(
        stream.next().is_none(),
        "more than one JSON value on stdout"
    );
    for key in [
        "kind",
        "scenario",
        "fidelity",
        "iteration_time_s",
        "tflops_per_gpu",
        "mfu",
    ] {
        assert!(report.get(key).is_some(), "missing `{key}`");
    }
    assert!(report["sim"]["events"].as_u64().unwrap() > 0);
    assert!(report["sim"]["wall_s"].as_f64().unwrap() >= 0.0);
    assert_eq!(report["memory"]["fits"], true);
}

#[test]
fn run_without_json_prints_a_summary_table() {
    let out = run(&["run", scenario().to_str().unwrap()]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    for label in [
        "iteration time",
        "TFLOP/s per GPU",
        "memory per GPU",
        "fidelity",
    ] {
        assert!(stdout.contains(label), "no `{label}` in:\n{stdout}");
    }
}

#[test]
fn set_overrides_change_the_result() {
    let path = scenario();
    let report = |sets: &[&str]| -> serde_json::Value {
        let mut args = vec!["run", path.to_str().unwrap(), "--json"];
        for s in sets {
            args.push("--set");
            args.push(s);
        }
        let out = run(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let base = report(&[]);
    let fewer = report(&["parallel.global_batch=256"]);
    assert_eq!(fewer["parallel"]["global_batch"], 256);
    let ratio =
        base["iteration_time_s"].as_f64().unwrap() / fewer["iteration_time_s"].as_f64().unwrap();
    assert!(
        ratio > 1.8 && ratio < 2.1,
        "half the batch should take about half the time: {ratio}"
    );
    let h100 = report(&["cluster.gpu=H100", "cluster.intra_node.bandwidth=450 GB/s"]);
    assert_eq!(h100["cluster"]["gpu"], "H100-SXM5-80GB");
    assert!(h100["iteration_time_s"].as_f64() < base["iteration_time_s"].as_f64());
}

#[test]
fn trace_files_are_chrome_trace_json() {
    let dir = std::env::temp_dir().join(format!("clustersim-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.json");
    let out = run(&[
        "run",
        scenario().to_str().unwrap(),
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "X" && e["cat"] == "communication")
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Malformed scenarios: each exits 2, names the file with line and column, says what is wrong.
#[test]
fn bad_input_exits_2_with_a_located_message() {
    let cases: &[(&str, &str, &str)] = &[
        ("unknown-key", ":15:1", "did you mean `micro_batch`?"),
        ("bare-number", ":9:17", "a bare number (200) is a count"),
        ("unit-case", ":9:17", "did you mean `GB/s`?"),
        ("unknown-unit", ":9:17", "`Gb/h` is not a unit of bandwidth"),
        ("unknown-value", ":17:13", "did you mean \"full\"?"),
        ("wrong-type", ":5:9", "expected a whole number"),
        ("broken-toml", ":4:", "not valid TOML"),
        ("unknown-gpu", ":4:7", "unknown GPU \"A1000-80GB\""),
        ("unknown-preset", ":12:10", "did you mean \"llama-3-8b\"?"),
        (
            "batch-not-multiple",
            ":16:16",
            "not a multiple of micro_batch x dp",
        ),
        (
            "missing-key",
            ":3:1",
            "missing key `gpus_per_node` in [cluster]",
        ),
        ("unknown-kind", ":1:8", "did you mean \"training\"?"),
        ("zero-stage", ":15:8", "ZeRO has stages 0 to 3, not 4"),
        (
            "tp-not-dividing",
            ":15:6",
            "tp = 3 does not divide the cluster's 16 GPUs",
        ),
        ("unknown-table", ":14:2", "did you mean `parallel`?"),
        ("negative", ":5:9", "expected a whole number"),
        ("dp-mismatch", ":15:6", "does not use the cluster's 16 GPUs"),
        ("heads-not-dividing", ":13:9", "not divisible by heads = 7"),
    ];
    assert!(cases.len() >= 10);
    for (name, position, phrase) in cases {
        let file = format!("sim/tests/bad/{name}.toml");
        let out = run(&["run", &file]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name} panicked: {stderr}");
        assert!(
            stderr.contains(&format!("{file}{position}")),
            "{name}: no `{file}{position}` in:\n{stderr}"
        );
        assert!(
            stderr.contains(phrase),
            "{name}: no `{phrase}` in:\n{stderr}"
        );
        assert!(out.stdout.is_empty(), "{name}: printed on stdout");
    }
}

#[test]
fn bad_options_exit_2() {
    let s = scenario();
    let s = s.to_str().unwrap();
    for args in [
        vec!["run", "no/such/file.toml"],
        vec!["run", s, "--set", "parallel.tp"],
        vec!["run", s, "--set", "parallel.micro_batch=four"],
        vec!["run", s, "--set", "name.deeper=1"],
        vec!["run", s, "--frobnicate"],
        vec!["list", "cables"],
        vec!["check"],
    ] {
        let out = run(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.is_empty(), "{args:?} said nothing");
    }
    let out = run(&["run", s, "--set", "parallel.micro_batch=four"]);
    assert!(text(&out.stderr).contains("in the option --set parallel.micro_batch=four"));
}

#[test]
fn check_passes_fails_and_reports_by_how_much() {
    let out = run(&["check", "scenarios"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // Tighten an expectation until it fails: exit 1, with the margin.
    let out = run(&[
        "check",
        scenario().to_str().unwrap(),
        "--set",
        "expect.hardware_tflops_per_gpu.min=50",
        "--set",
        "expect.hardware_tflops_per_gpu.max=100",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    assert!(stdout.contains("above the maximum 100 by"), "{stdout}");
    // A broken scenario among good ones: exit 2, the others still run.
    let out = run(&[
        "check",
        scenario().to_str().unwrap(),
        "sim/tests/bad/unknown-key.toml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).contains("1 passed, 0 failed, 1 with bad input"));
}

#[test]
fn lists_print_the_catalogs() {
    for (what, needle) in [
        ("gpus", "H100-SXM5-80GB"),
        ("models", "llama-3.1-405b"),
        ("topologies", "rail-optimized"),
    ] {
        let out = run(&["list", what]);
        assert!(out.status.success());
        assert!(text(&out.stdout).contains(needle), "{what}");
    }
}

/// The arguments of `clustersim collective` on H100 nodes of 8 GPUs, then `rest`.
fn collective<'a>(nodes: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let base = [
        "collective",
        "--gpu",
        "H100",
        "--nodes",
        nodes,
        "--gpus-per-node",
        "8",
    ];
    base.iter().chain(rest).copied().collect()
}

#[test]
fn collective_prints_nccl_tests_columns_and_json() {
    let out = run(&collective(
        "1",
        &[
            "--op",
            "all-reduce",
            "-b",
            "8K",
            "-e",
            "8M",
            "-f",
            "8",
            "--algo",
            "ring",
        ],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("busbw(GB/s)"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| !l.starts_with('#')).count(),
        4,
        "8K, 64K, 512K, 4M:\n{stdout}"
    );
    let out = run(&collective(
        "2",
        &[
            "--op",
            "all-gather",
            "--size",
            "1G",
            "--nic-bandwidth",
            "400 Gb/s",
            "--topology",
            "rail-optimized",
            "--json",
        ],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "time_s",
        "algbw_GBps",
        "busbw_GBps",
        "algorithm",
        "fidelity",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    // Across two nodes the NICs (8 x 50 GB/s x 0.92 per node) bound an all-gather's bus bandwidth.
    let busbw = v["busbw_GBps"].as_f64().unwrap();
    assert!(busbw > 100.0 && busbw < 8.0 * 50.0, "{busbw}");
}

/// `--proto` forces NCCL's protocol as NCCL_PROTO does: a tiny all-reduce the tuner sends in LL
/// goes in Simple, and takes longer.
#[test]
fn collective_proto_forces_the_protocol() {
    let priced = |extra: &[&str]| {
        let mut args = vec!["--op", "all-reduce", "--size", "8", "--json"];
        args.extend_from_slice(extra);
        let out = run(&collective("1", &args));
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            v["results"][0]["protocol"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            v["time_s"].as_f64().unwrap(),
        )
    };
    let (auto, t_auto) = priced(&[]);
    let (simple, t_simple) = priced(&["--proto", "simple"]);
    assert_eq!(auto, "LL");
    assert_eq!(simple, "Simple");
    assert!(t_simple > t_auto, "{t_simple} {t_auto}");
}

#[test]
fn collective_bad_input_exits_2() {
    for (extra, phrase) in [
        (vec!["--op", "gossip", "--size", "8"], "valid operations"),
        (
            vec!["--op", "all-reduce", "--size", "8X"],
            "not a size suffix",
        ),
        (vec!["--op", "all-reduce"], "give either --size"),
        (
            vec!["--op", "all-reduce", "--size", "8", "--algo", "magic"],
            "valid algorithms",
        ),
        (
            vec!["--op", "all-reduce", "--size", "8", "--tier", "packet"],
            "valid tiers",
        ),
        (
            vec!["--op", "all-reduce", "--size", "8", "--proto", "ll256"],
            "valid protocols",
        ),
        (
            vec!["--op", "all-reduce", "--size", "8", "--ranks", "9"],
            "between 2 and",
        ),
        (
            vec![
                "--op",
                "all-reduce",
                "--size",
                "8",
                "--algo",
                "halving-doubling",
                "--ranks",
                "6",
            ],
            "does not apply",
        ),
        (
            vec![
                "--op",
                "all-reduce",
                "--size",
                "8",
                "--compressor",
                "1 GB/s",
            ],
            "need --compress-ratio",
        ),
    ] {
        let args = collective("1", &extra);
        let out = run(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(phrase),
            "{args:?}: no `{phrase}` in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let out = run(&collective("2", &["--op", "all-reduce", "--size", "8"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--nic-bandwidth"));
}
