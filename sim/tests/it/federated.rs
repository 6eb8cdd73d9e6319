//! `kind = "federated"`: rounds of federated training over a device population.

use crate::common;

use clustersim::report::federated::FederatedReport;
use common::outcome;

/// The typed report of a federated scenario text.
fn report(name: &str, text: &str, sets: &[&str]) -> FederatedReport {
    common::federated(name, text, sets)
}

/// A small population: 2,000 devices, 200 selected a round for a quorum of 150.
const TEXT: &str = r#"
kind = "federated"
[model]
layers = 2
hidden = 256
heads = 4
vocab = 20000
seq_len = 32
tied_embeddings = true
dtype = "fp32"
[federated]
population = 2000
availability = 0.5
cohort = 200
quorum = 150
rounds = 10
dropout = 0.1
compute = "10 GFLOP/s"
compute_sigma = 0.5
uplink = "2 Mb/s"
uplink_sigma = 0.5
downlink = "10 Mb/s"
local_steps = 2
batch = 8
"#;

#[test]
fn every_selected_device_reports_drops_out_or_is_dropped_as_a_straggler() {
    let r = report("fl.toml", TEXT, &[]);
    assert_eq!(r.kind, "federated");
    assert_eq!(r.rounds, 10);
    assert_eq!(r.selected_per_round, 200.0);
    // The quorum closes each round at 150 reports.
    assert_eq!(r.reports_per_round, 150.0);
    let accounted = 10.0 * 150.0 + r.dropouts as f64 + r.stragglers_dropped as f64;
    assert_eq!(accounted, 10.0 * 200.0);
    assert!(r.dropouts > 0);
    // Rounds back to back: rounds per hour is the inverse of the mean round time.
    let mean = r.round_time_s.mean.unwrap();
    assert!((r.rounds_per_hour * mean / 3600.0 - 1.0).abs() < 1e-9);
    assert!(r.round_time_s.p50.unwrap() <= r.round_time_s.p90.unwrap());
    // Bytes per round are the reports times one device's upload.
    let upload = r.upload_bytes_per_device;
    assert_eq!(r.upload_bytes_per_round, 150.0 * upload);
}

#[test]
fn a_round_takes_as_long_as_its_slowest_counted_device() {
    // Every device alike, no drop-out, no quorum: the round lasts exactly one device's work.
    let text = TEXT
        .replace("compute_sigma = 0.5\n", "compute_sigma = 0\n")
        .replace("uplink_sigma = 0.5\n", "uplink_sigma = 0\n")
        .replace("dropout = 0.1\n", "dropout = 0\n")
        .replace("quorum = 150\n", "");
    let r = report("fl.toml", &text, &[]);
    let download = r.download_bytes_per_device / (10e6 / 8.0);
    let compute = r.local_flops_per_device / 10e9;
    let upload = r.upload_bytes_per_device / (2e6 / 8.0);
    let expected = download + compute + upload;
    for (key, time) in [
        ("round_time_s.p50", r.round_time_s.p50),
        ("round_time_s.p99", r.round_time_s.p99),
    ] {
        assert!((time.unwrap() / expected - 1.0).abs() < 1e-9, "{key}");
    }
    assert_eq!(r.stragglers_dropped, 0);
    // A deadline shorter than that work drops every device: every round fails.
    let late = format!("{text}deadline = \"{} s\"\n", (expected / 2.0).round());
    let r = report("fl.toml", &late, &[]);
    assert_eq!(r.rounds_failed, 10);
    assert_eq!(r.stragglers_dropped, 10 * 200);
}

#[test]
fn the_seed_alone_decides_the_run() {
    let a = report("fl.toml", TEXT, &[]);
    let b = report("fl.toml", TEXT, &[]);
    let c = report("fl.toml", TEXT, &["sim.seed=2"]);
    assert_eq!(a.round_time_s, b.round_time_s);
    assert_eq!(a.stragglers_dropped, b.stragglers_dropped);
    assert_ne!(a.round_time_s, c.round_time_s);
}

#[test]
fn smaller_updates_shorten_rounds_and_quantisation_divides_the_bytes() {
    let full = report("fl.toml", TEXT, &[]);
    let partial = report(
        "fl.toml",
        TEXT,
        &[
            "federated.embedding=\"partial\"",
            "federated.embedding_rows=2000",
        ],
    );
    let int8 = report(
        "fl.toml",
        TEXT,
        &[
            "federated.embedding=\"partial\"",
            "federated.embedding_rows=2000",
            "federated.update_bits=8",
        ],
    );
    let up = |r: &FederatedReport| r.upload_bytes_per_device;
    // 18,000 rows of 256 fp32 coordinates fewer.
    assert_eq!(up(&full) - up(&partial), 18_000.0 * 256.0 * 4.0);
    assert_eq!(up(&partial), 4.0 * up(&int8));
    let p50 = |r: &FederatedReport| r.round_time_s.p50.unwrap();
    assert!(p50(&partial) < p50(&full) && p50(&int8) < p50(&partial));
    // Each device's distinct tokens: fewer rows than the vocabulary, each with its index.
    let seen = report(
        "fl.toml",
        TEXT,
        &[
            "federated.embedding=\"partial\"",
            "federated.embedding_rows=\"seen\"",
        ],
    );
    let rows = seen.update.embedding_rows;
    assert!(
        rows > 100.0 && rows < 512.0,
        "{rows} distinct of 512 tokens"
    );
}

#[test]
fn bad_keys_are_refused_where_they_were_written() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "quorum = 150",
            "quorum = 250",
            "cannot be met by a cohort of 200",
        ),
        (
            "cohort = 200",
            "cohort = 5000",
            "larger than the population",
        ),
        ("dropout = 0.1", "dropout = 1.5", "is a probability"),
        ("local_steps = 2", "local_steps = 0", "must be at least 1"),
        (
            "batch = 8",
            "batch = 8\nlora_rank = 4",
            "applies only with train = \"lora\"",
        ),
        (
            "batch = 8",
            "batch = 8\ntrain = \"lora\"",
            "missing key `lora_rank`",
        ),
        (
            "batch = 8",
            "batch = 8\nembedding_rows = 10",
            "applies only with embedding",
        ),
        (
            "batch = 8",
            "batch = 8\nembedding = \"partial\"\nembedding_rows = \"all\"",
            "unknown embedding_rows",
        ),
        (
            "batch = 8",
            "batch = 8\nupdate_bits = 64",
            "update_bits must be 1 to 32",
        ),
        (
            "batch = 8",
            "batch = 8\nnce_samples = 20000",
            "nce_samples must be",
        ),
        ("compute = \"10 GFLOP/s\"", "compute = 10", "throughput"),
        ("batch = 8", "batch = 8\ncohrt = 3", "did you mean `cohort`"),
    ];
    for (from, to, says) in cases {
        let text = TEXT.replace(from, to);
        let e = outcome("fl.toml", &text).expect_err(says);
        assert!(e.contains(says), "{to}: {e}");
        assert!(e.contains("fl.toml:"), "{to}: not located: {e}");
    }
    let cluster = format!("{TEXT}[cluster]\ngpu = \"H100\"\n");
    let e = outcome("fl.toml", &cluster).expect_err("[cluster]");
    assert!(
        e.contains("[cluster] does not apply to a federated scenario"),
        "{e}"
    );
    let links = format!("{TEXT}[sim]\nrecord_links = true\n");
    let e = outcome("fl.toml", &links).expect_err("record_links");
    assert!(e.contains("`sim.record_links` does not apply"), "{e}");
    let missing = TEXT.replace("uplink = \"2 Mb/s\"\n", "");
    let e = outcome("fl.toml", &missing).expect_err("no uplink");
    assert!(e.contains("missing key `uplink`"), "{e}");
}

#[test]
fn defaults_are_recorded_as_assumptions() {
    let r = report("fl.toml", TEXT, &[]);
    for said in [
        "no round deadline",
        "update_bits 32",
        "downloads the whole model",
        "embedding = \"full\"",
        "train = \"full\"",
    ] {
        assert!(
            r.assumptions.iter().any(|a| a.contains(said)),
            "{said} not in {:?}",
            r.assumptions
        );
    }
}
