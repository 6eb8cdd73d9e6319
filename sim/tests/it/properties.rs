//! Invariants as properties over generated scenarios (proptest, fixed seeds, small case counts
//! so CI stays within its budget): `--set` is the same as writing the key in the file; serving
//! completes every request of a fleet that fits, once; every rank simulated agrees with one GPU
//! per stage where ranks are alike; the flow and analytical tiers agree without contention; a
//! collective's bus bandwidth follows from its time and bytes.

use clustersim::report::collective::CollectiveReport;
use clustersim::report::serving::ServingReport;
use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

/// A runner of `cases` cases from a fixed seed.
fn runner(cases: u32, seed: u8) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

/// The report, or the error's message and help (not its place, which differs between a file
/// and a `--set` option).
fn outcome(text: &str, sets: &[String]) -> Result<Value, String> {
    let s = clustersim::Scenario::parse(std::path::Path::new("p.toml"), text.to_string(), sets)
        .map_err(|e| format!("{} {:?}", e.message, e.help))?;
    clustersim::run(&s)
        .map(|o| o.report)
        .map_err(|e| format!("{} {:?}", e.message, e.help))
}

const TRAINING: &str = "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 2\ngpus_per_node = 8\n\
    [cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"\n\
    [model]\npreset = \"llama-3.1-8b\"\nseq_len = 2048\n\
    [parallel]\ntp = 2\npp = 2\nmicro_batch = 1\nglobal_batch = 16\n";

#[test]
fn a_key_set_on_the_command_line_is_the_key_written_in_the_file() {
    let keys = prop::sample::select(vec![
        ("parallel", "tp", "2"),
        ("parallel", "pp", "2"),
        ("parallel", "micro_batch", "1"),
        ("parallel", "global_batch", "16"),
        ("model", "seq_len", "2048"),
        ("cluster", "nodes", "2"),
    ]);
    let values = prop::sample::select(vec!["1", "2", "3", "4", "8", "0", "-1", "\"x\"", "2.5"]);
    runner(24, 1)
        .run(&(keys, values), |((table, key, old), value)| {
            let line = format!("{key} = {old}\n");
            let edited = TRAINING.replacen(
                &format!("[{table}]\n"),
                &format!("[{table}]\n{key} = {value}\n"),
                1,
            );
            // The file's own line goes, so the key is written once.
            let edited = remove_after(&edited, &format!("[{table}]\n{key} = {value}\n"), &line);
            let set = vec![format!("{table}.{key}={value}")];
            prop_assert_eq!(outcome(&edited, &[]), outcome(TRAINING, &set));
            Ok(())
        })
        .unwrap();
}

/// `text` without the first `line` after `after`.
fn remove_after(text: &str, after: &str, line: &str) -> String {
    let at = text.find(after).map_or(0, |i| i + after.len());
    let (head, tail) = text.split_at(at);
    format!("{head}{}", tail.replacen(line, "", 1))
}

#[test]
fn a_serving_fleet_that_fits_completes_every_request_once() {
    let cases = (
        1u32..120,
        1u32..2048,
        1u32..512,
        0u64..1000,
        prop::bool::ANY,
    );
    runner(16, 2)
        .run(&cases, |(requests, prompt, output, seed, poisson)| {
            let arrival = if poisson {
                "arrival = \"poisson\"\nrate = \"20/s\"\n"
            } else {
                "arrival = \"offline\"\n"
            };
            let text = format!(
                "kind = \"serving\"\n[cluster]\ngpu = \"H100\"\nnodes = 1\ngpus_per_node = 8\n\
                 [model]\npreset = \"llama-3.1-8b\"\n[serving]\nreplicas = 2\ntp = 1\n\
                 [workload]\nrequests = {requests}\n{arrival}prompt_tokens = {prompt}\n\
                 output_tokens = {output}\n[sim]\nseed = {seed}\n"
            );
            let r = ServingReport::of_run(&outcome(&text, &[]).map_err(TestCaseError::fail)?);
            prop_assert_eq!(r.requests, requests as u64);
            prop_assert_eq!(r.requests_completed, requests as u64);
            let (ttft, e2e) = (r.ttft_s.p50.unwrap(), r.e2e_s.p50.unwrap());
            prop_assert!(
                ttft.is_finite() && ttft > 0.0 && ttft <= e2e,
                "{} {}",
                ttft,
                e2e
            );
            prop_assert!(r.throughput.output_tokens_per_s > 0.0);
            Ok(())
        })
        .unwrap();
}

#[test]
fn every_rank_agrees_with_one_gpu_per_stage_on_any_even_layout() {
    // 16 GPUs: tp x pp x cp x dp = 16 with tp inside a server.
    let layouts = prop::sample::select(vec![
        (1u32, 1u32, 1u32),
        (2, 2, 1),
        (4, 2, 1),
        (8, 2, 1),
        (2, 1, 2),
        (1, 4, 1),
        (2, 4, 1),
        (4, 1, 2),
    ]);
    runner(12, 3)
        .run(&(layouts, 1u32..3), |((tp, pp, cp), micro)| {
            let dp = 16 / (tp * pp * cp);
            let text = format!(
                "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 2\ngpus_per_node = 8\n\
                 [cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"\n\
                 [model]\npreset = \"llama-3.1-8b\"\nseq_len = 2048\n\
                 [parallel]\ntp = {tp}\npp = {pp}\ncp = {cp}\ndp = {dp}\nmicro_batch = {micro}\n\
                 global_batch = {}\n",
                dp * micro * 4
            );
            let stage = outcome(&text, &[]).map_err(TestCaseError::fail)?;
            let all =
                outcome(&text, &["sim.ranks=\"all\"".to_string()]).map_err(TestCaseError::fail)?;
            let (a, b) = (
                TrainingReport::of_run(&stage).iteration_time_s,
                TrainingReport::of_run(&all).iteration_time_s,
            );
            prop_assert!(a.is_finite() && a > 0.0);
            prop_assert!((b / a - 1.0).abs() <= 0.01, "{} s vs {} s", a, b);
            Ok(())
        })
        .unwrap();
}

#[test]
fn flow_and_analytical_tiers_agree_without_contention() {
    // Inside one NVSwitch server every GPU has its own port: nothing contends.
    let ops = prop::sample::select(vec!["all-reduce", "all-gather", "reduce-scatter"]);
    runner(16, 4)
        .run(&(ops, 1u32..4096, prop::sample::select(vec![2u32, 4, 8])), |(op, mib, gpus)| {
            let text = format!(
                "kind = \"collective\"\n[cluster]\ngpu = \"H100\"\nnodes = 1\ngpus_per_node = {gpus}\n\
                 [collective]\nop = \"{op}\"\nsize = \"{mib} MiB\"\nalgorithm = \"ring\"\n"
            );
            let tier = |t: &str| outcome(&text, &[format!("sim.network=\"{t}\"")]);
            let (f, a) = (tier("flow").map_err(TestCaseError::fail)?, tier("analytical").map_err(TestCaseError::fail)?);
            let (f, a) = (CollectiveReport::of_run(&f), CollectiveReport::of_run(&a));
            let (tf, ta) = (f.time_s, a.time_s);
            prop_assert!((tf / ta - 1.0).abs() < 1e-6, "{} s flow, {} s analytical", tf, ta);
            // algbw is the bytes over the time.
            let bytes = mib as f64 * 1048576.0;
            prop_assert!((f.algbw_gbps * 1e9 * tf / bytes - 1.0).abs() < 1e-9);
            Ok(())
        })
        .unwrap();
}
