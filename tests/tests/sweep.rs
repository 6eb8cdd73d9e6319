//! Sweeps through the library: sharded and merged equals unsharded, byte for byte; a failing
//! point is a row, not the end; a misspelt key is refused before anything runs; merge refuses
//! a missing point and a repeated one.

use clustersim::sweep::{Format, Part, Shard, Sweep, SweepError, Table, format, merge};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// GPT-3 1.3B on 8 H100: about 5 ms a point in a debug build.
fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("scenarios/training/gpt3-1.3b-8xh100.toml")
}

/// 5 x 2 points; tp = 3 does not divide 8 GPUs, so points 8 and 9 fail.
const VARY: [&str; 2] = ["parallel.tp=1,2,4,8,3", "parallel.micro_batch=1,2"];

fn sweep(vary: &[&str], shard: Shard) -> Sweep {
    let vary: Vec<String> = vary.iter().map(|s| s.to_string()).collect();
    Sweep::new(&scenario(), &[], &vary, shard, &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// The tables of the whole grid of [`VARY`] and of its shards 0/4 .. 3/4, run once per test
/// binary.
fn tables() -> &'static [Table; 5] {
    static TABLES: OnceLock<[Table; 5]> = OnceLock::new();
    TABLES.get_or_init(|| {
        let run = |shard| {
            sweep(&VARY, shard)
                .run(&|| {})
                .unwrap_or_else(|e| panic!("{e}"))
        };
        [None, Some(0), Some(1), Some(2), Some(3)]
            .map(|i| run(i.map_or(Shard::WHOLE, |index| Shard { index, count: 4 })).table)
    })
}

/// The bytes a shard (None: the whole grid) writes in `format`.
fn bytes(shard: Option<usize>, out: Format) -> Vec<u8> {
    let mut buf = Vec::new();
    format::write(&tables()[shard.map_or(0, |i| i + 1)], out, &mut buf).unwrap();
    buf
}

fn parts(shards: &[usize], out: Format) -> Vec<Part> {
    let ext = if out == Format::Csv { "csv" } else { "jsonl" };
    shards
        .iter()
        .map(|&i| Part {
            path: PathBuf::from(format!("part-{i}.{ext}")),
            bytes: bytes(Some(i), out),
        })
        .collect()
}

#[test]
fn four_shards_merged_equal_the_unsharded_sweep() {
    for out in [Format::Csv, Format::Jsonl] {
        let whole = bytes(None, out);
        let parts = parts(&[2, 0, 3, 1], out);
        // Each shard holds only its own points: 10 points over 4 shards are 3, 3, 2, 2 rows.
        let rows: Vec<usize> = parts
            .iter()
            .map(|p| String::from_utf8_lossy(&p.bytes).lines().count())
            .collect();
        let header = usize::from(out == Format::Csv);
        assert_eq!(rows, [2 + header, 3 + header, 2 + header, 3 + header]);
        let merged = merge(&parts, out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            String::from_utf8_lossy(&merged),
            String::from_utf8_lossy(&whole),
            "{out:?}"
        );
    }
}

#[test]
fn a_failing_point_is_recorded_and_the_others_still_run() {
    let done = AtomicUsize::new(0);
    let outcome = sweep(&VARY, Shard::WHOLE)
        .run(&|| {
            done.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    assert_eq!(done.load(Ordering::Relaxed), 10, "progress once per point");
    assert_eq!((outcome.ok, outcome.failed), (8, 2));
    let t = &outcome.table;
    // Same sweep, same rows (the first run of this grid is another test's or this file's cache).
    assert_eq!(t, &tables()[0]);
    let col = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
    for row in &t.rows {
        let tp = row.cells[col("parallel.tp")].as_u64().unwrap();
        let status = row.cells[col("status")].as_str().unwrap();
        let error = row.cells[col("error")].as_str().unwrap();
        if tp == 3 {
            assert_eq!(status, "error");
            assert!(error.contains("does not divide"), "{error}");
            assert!(!error.contains('\n'));
            assert_eq!(row.cells[col("mfu")], Value::Null);
        } else {
            assert_eq!(status, "ok", "{error}");
            assert!(row.cells[col("iteration_time_s")].as_f64().unwrap() > 0.0);
            assert_eq!(row.cells[col("memory.fits")], Value::Bool(true));
        }
    }
    assert_eq!(
        t.rows.iter().map(|r| r.point).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
}

#[test]
fn a_config_that_does_not_fit_is_a_result_not_a_failure() {
    let outcome = sweep(&["parallel.micro_batch=8,32"], Shard::WHOLE)
        .run(&|| {})
        .unwrap();
    assert_eq!((outcome.ok, outcome.failed), (2, 0));
    let fits = outcome
        .table
        .columns
        .iter()
        .position(|c| c == "memory.fits")
        .unwrap();
    let fits: Vec<&Value> = outcome.table.rows.iter().map(|r| &r.cells[fits]).collect();
    assert_eq!(fits, [&Value::Bool(true), &Value::Bool(false)]);
}

#[test]
fn a_misspelt_key_is_refused_before_anything_runs() {
    let done = AtomicUsize::new(0);
    let e = sweep(
        &["parallel.tpp=1,2", "parallel.micro_batch=1,2"],
        Shard::WHOLE,
    )
    .run(&|| {
        done.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap_err();
    assert!(matches!(e, SweepError::EveryPoint(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("unknown key `tpp`"), "{text}");
    assert!(text.contains("did you mean `tp`"), "{text}");
    assert!(text.contains("nothing was run"), "{text}");
    assert_eq!(done.load(Ordering::Relaxed), 0);
    // A flag without `=` never gets that far.
    let e = Sweep::new(&scenario(), &[], &["parallel.tp".into()], Shard::WHOLE, &[]).unwrap_err();
    assert!(e.to_string().contains("missing `=`"), "{e}");
}

#[test]
fn merge_refuses_a_missing_point_and_a_duplicate() {
    let missing = merge(&parts(&[0, 1, 2], Format::Csv), Format::Csv).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("2 of 10 points are missing: 3, 7"),
        "{missing}"
    );
    let mut again = parts(&[0, 1, 2, 3, 1], Format::Jsonl);
    again[4].path = PathBuf::from("part-1-again.jsonl");
    let duplicate = merge(&again, Format::Jsonl).unwrap_err();
    assert!(
        duplicate
            .to_string()
            .contains("point 1 appears in both part-1.jsonl and part-1-again.jsonl"),
        "{duplicate}"
    );
}
