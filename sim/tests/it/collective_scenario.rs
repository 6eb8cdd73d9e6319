//! `kind = "collective"`: one collective priced from a scenario file.

use crate::common;

use common::{number, section};

const TEXT: &str = r#"
kind = "collective"
[cluster]
gpu = "H100"
nodes = 2
gpus_per_node = 8
[cluster.inter_node]
nic_bandwidth = "400 Gb/s"
[collective]
op = "all-reduce"
size = "256 MiB"
"#;

#[test]
fn the_report_has_the_contract_keys_and_matches_the_command() {
    let r = common::report("collective.toml", TEXT, &[]);
    assert_eq!(r["kind"], "collective");
    let (t, algbw, busbw) = (
        number(&r, "time_s"),
        number(&r, "algbw_GBps"),
        number(&r, "busbw_GBps"),
    );
    assert!((algbw * 1e9 * t - 256.0 * 1048576.0).abs() < 1.0);
    // nccl-tests' bus factor for an all-reduce over 16 ranks: 2 (n - 1) / n.
    assert!((busbw / algbw - 2.0 * 15.0 / 16.0).abs() < 1e-9);
    // The CLI's `collective` command prices the same thing the same way.
    let out = common::bin()
        .args([
            "collective",
            "--gpu",
            "H100",
            "--nodes",
            "2",
            "--gpus-per-node",
            "8",
            "--op",
            "all-reduce",
            "--size",
            "256M",
            "--topology",
            "fat-tree",
            "--nic-bandwidth",
            "400 Gb/s",
            "--tier",
            "analytical",
            "--json",
        ])
        .output()
        .expect("runs");
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(cli["time_s"], r["time_s"], "{}", common::text(&out.stderr));
}

#[test]
fn compression_reports_the_raw_time_and_the_speedup() {
    let r = common::collective(
        "collective.toml",
        TEXT,
        &[
            "collective.compression.ratio=4",
            "collective.compression.compress=\"200 GB/s\"",
            "collective.compression.decompress=\"200 GB/s\"",
        ],
    );
    let speedup = r.uncompressed.as_ref().unwrap().time_s / r.time_s;
    assert!((r.speedup.unwrap() - speedup).abs() < 1e-12);
    assert!(r.assumptions.iter().any(|a| a.contains("compressed once")));
}

#[test]
fn bad_collectives_are_located_errors() {
    for (set, says) in [
        ("collective.op=all-to-none", "unknown operation"),
        ("collective.algorithm=spiral", "unknown algorithm"),
        ("collective.ranks=1", "needs 2 to the cluster's 16 GPUs"),
        ("cost.usd_per_gpu_hour=2", "no GPU time to price"),
    ] {
        let s = common::scenario("collective.toml", TEXT, &[set]);
        let e = clustersim::run(&s)
            .err()
            .unwrap_or_else(|| panic!("{set} ran"));
        assert!(e.to_string().contains(says), "{set}: {e}");
    }
    let e = common::outcome("collective.toml", &format!("{TEXT}[parallel]\ntp = 2\n"))
        .expect_err("no layout in a collective scenario");
    assert!(e.contains("does not apply to a collective scenario"), "{e}");
}

const PER_HOP: [&str; 4] = [
    "collective.compression.ratio=10",
    "collective.compression.compress=\"100 GB/s\"",
    "collective.compression.decompress=\"150 GB/s\"",
    "collective.compression.per_hop=true",
];

#[test]
fn an_overlapped_codec_hides_behind_the_transfers() {
    let added = common::collective("collective.toml", TEXT, &PER_HOP);
    let mut sets = PER_HOP.to_vec();
    sets.push("collective.compression.overlap=true");
    let piped = common::collective("collective.toml", TEXT, &sets);
    assert!(
        piped.time_s < added.time_s,
        "{} vs {}",
        piped.time_s,
        added.time_s
    );
    // The default slice is NCCL's, recorded; the report says what was pipelined.
    assert_eq!(
        number(
            section(&piped.compression, "compression"),
            "overlap_slice_bytes"
        ),
        1048576.0
    );
    assert!(piped.assumptions.iter().any(|a| a.contains("1 MiB slices")));
    assert!(
        section(&added.compression, "compression")
            .get("overlap_slice_bytes")
            .is_none()
    );
    // One slice per step pipelines nothing: the codec is added again.
    sets.push("collective.compression.slice=\"1 GiB\"");
    let whole = common::collective("collective.toml", TEXT, &sets);
    assert!((whole.time_s - added.time_s).abs() < 1e-12);
}

#[test]
fn overlap_and_slice_are_refused_where_they_mean_nothing() {
    let once = [
        "collective.compression.ratio=10",
        "collective.compression.compress=\"100 GB/s\"",
        "collective.compression.decompress=\"150 GB/s\"",
    ];
    for (extra, key, says) in [
        (
            &["collective.compression.overlap=true"][..],
            "collective.compression.overlap",
            "no step to overlap",
        ),
        (
            &[
                "collective.compression.per_hop=true",
                "collective.compression.slice=\"1 MiB\"",
            ][..],
            "collective.compression.slice",
            "without overlap",
        ),
        (
            &[
                "collective.compression.per_hop=true",
                "collective.compression.overlap=true",
                "collective.compression.slice=\"0 B\"",
            ][..],
            "collective.compression.slice",
            "not 0",
        ),
    ] {
        let mut sets = once.to_vec();
        sets.extend_from_slice(extra);
        let s = common::scenario("collective.toml", TEXT, &sets);
        let e = clustersim::run(&s)
            .err()
            .unwrap_or_else(|| panic!("{key} ran"))
            .to_string();
        assert!(e.contains(says) && e.contains(key), "{key}: {e}");
    }
}

/// Naming a GPU's own link changes nothing: an MI300X server's all-reduce costs the same with
/// `link = "nvlink-mesh"` stated or left out, in a scenario and on the command line (xGMI keeps
/// its own efficiency); naming another link prices that link.
#[test]
fn naming_the_gpus_own_link_keeps_its_price() {
    let text = |link: &str| {
        format!(
            "kind = \"collective\"\n[cluster]\ngpu = \"MI300X\"\nnodes = 1\ngpus_per_node = 8\n{link}\
             [collective]\nop = \"all-reduce\"\nsize = \"256 MiB\"\n"
        )
    };
    let time = |link: &str| number(&common::report("c.toml", &text(link), &[]), "time_s");
    let silent = time("");
    let stated = time("[cluster.intra_node]\nlink = \"nvlink-mesh\"\n");
    assert_eq!(silent, stated);
    let switched = time("[cluster.intra_node]\nlink = \"nvswitch\"\nbandwidth = \"448 GB/s\"\n");
    assert_ne!(silent, switched);
    let cli = |extra: &[&str]| -> f64 {
        let mut args = vec![
            "collective",
            "--gpu",
            "MI300X",
            "--nodes",
            "1",
            "--gpus-per-node",
            "8",
            "--op",
            "all-reduce",
            "--size",
            "256M",
            "--tier",
            "analytical",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = common::bin().args(&args).output().expect("runs");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["time_s"].as_f64().expect("a time")
    };
    assert_eq!(cli(&[]), cli(&["--intra-link", "nvlink-mesh"]));
}
