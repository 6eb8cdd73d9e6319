//! Sweeps and plans give the same bytes whatever the thread count: each is run in rayon pools of
//! 1, 2 and 8 threads and the outputs compared.

use clustersim::plan::{self, Options};
use clustersim::sweep::{Format, Shard, Sweep, format};
use std::path::{Path, PathBuf};

fn scenario(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("scenarios")
        .join(file)
}

/// `f` in a pool of `threads` threads.
fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn a_sweep_writes_the_same_bytes_on_1_2_and_8_threads() {
    let run = || {
        let vary: Vec<String> = ["parallel.tp=1,2,4,8,3", "parallel.micro_batch=1,2,4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let path = scenario("training/gpt3-1.3b-8xh100.toml");
        let table = Sweep::new(&path, &[], &vary, Shard::WHOLE, &[])
            .unwrap()
            .run(&|| {})
            .unwrap()
            .table;
        let mut out = Vec::new();
        format::write(&table, Format::Jsonl, &mut out).unwrap();
        out
    };
    let one = with_threads(1, run);
    assert!(one.len() > 100);
    for n in [2, 8] {
        assert!(with_threads(n, run) == one, "{n} threads wrote other bytes");
    }
}

#[test]
fn a_plan_is_the_same_on_1_2_and_8_threads() {
    for (file, simulate) in [
        ("training/gpt3-1.3b-8xh100.toml", 4),
        ("serving/llama-3.1-8b-1xh100-offline.toml", 0),
    ] {
        let run = || {
            let s = clustersim::Scenario::load(&scenario(file), &[]).unwrap();
            let options = Options {
                simulate,
                ..Options::default()
            };
            plan::plan(&s, &options).unwrap().to_string()
        };
        let one = with_threads(1, run);
        for n in [2, 8] {
            assert!(
                with_threads(n, run) == one,
                "{file}: {n} threads planned otherwise"
            );
        }
    }
}
