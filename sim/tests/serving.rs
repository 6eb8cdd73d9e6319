//! Serving: the fleet process, its schedulers and its report.

use clustersim::Scenario;
use serde_json::Value;
use std::path::Path;

fn report(serving: &str, workload: &str) -> Value {
    let text = format!(
        r#"
kind = "serving"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "llama-3.1-8b"
[serving]
{serving}
[workload]
{workload}
[slo]
ttft = "2 s"
tpot = "100 ms"
"#
    );
    let s = Scenario::parse(Path::new("serving.toml"), text, &[]).unwrap_or_else(|e| panic!("{e}"));
    clustersim::run(&s).unwrap_or_else(|e| panic!("{e}")).report
}

fn num(r: &Value, path: &str) -> f64 {
    path.split('.')
        .fold(r, |v, k| &v[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path} in {r}"))
}

const OFFLINE: &str =
    "requests = 200\narrival = \"offline\"\nprompt_tokens = 512\noutput_tokens = 128";

#[test]
fn every_request_completes_and_latencies_are_ordered() {
    for scheduler in ["vllm", "sarathi", "static"] {
        let r = report(&format!("scheduler = \"{scheduler}\""), OFFLINE);
        assert_eq!(r["requests_completed"], 200, "{scheduler}");
        for key in ["ttft_s", "tpot_s", "e2e_s"] {
            assert!(
                num(&r, &format!("{key}.p50")) <= num(&r, &format!("{key}.p99")),
                "{scheduler} {key}"
            );
        }
        assert!(
            num(&r, "ttft_s.mean") < num(&r, "e2e_s.mean"),
            "{scheduler}"
        );
        assert!(num(&r, "throughput.output_tokens_per_s") > 0.0);
    }
}

#[test]
fn continuous_batching_beats_static_batching() {
    let continuous = report("scheduler = \"vllm\"\nmax_batch_size = 64", OFFLINE);
    let fixed = report("scheduler = \"static\"\nmax_batch_size = 64", OFFLINE);
    assert!(
        num(&continuous, "throughput.output_tokens_per_s")
            > num(&fixed, "throughput.output_tokens_per_s"),
        "{} vs {}",
        num(&continuous, "throughput.output_tokens_per_s"),
        num(&fixed, "throughput.output_tokens_per_s")
    );
}

#[test]
fn bigger_batches_raise_offline_throughput() {
    let small = report("max_batch_size = 8", OFFLINE);
    let large = report("max_batch_size = 128", OFFLINE);
    assert!(
        num(&large, "throughput.output_tokens_per_s")
            > 3.0 * num(&small, "throughput.output_tokens_per_s")
    );
}

#[test]
fn a_small_kv_cache_forces_preemption_and_still_finishes() {
    // A quarter of memory leaves about 3 GB of KV cache (23k tokens) for 200 x 640 tokens.
    let r = report("kv_memory_fraction = 0.25\nmax_batch_size = 256", OFFLINE);
    assert_eq!(r["requests_completed"], 200);
    assert!(num(&r, "kv_cache.preemptions") > 0.0, "{}", r["kv_cache"]);
    assert!(num(&r, "kv_cache.peak_use") > 0.9);
}

#[test]
fn weights_that_do_not_fit_are_a_result() {
    let r = report("kv_memory_fraction = 0.05", OFFLINE);
    assert_eq!(r["memory"]["fits"], false);
    assert_eq!(r["requests_completed"], 0);
}

#[test]
fn more_replicas_serve_more_and_tensor_parallelism_speeds_decoding() {
    let one = report("replicas = 1", OFFLINE);
    let four = report("replicas = 4\nrouter = \"round-robin\"", OFFLINE);
    assert!(num(&four, "throughput.requests_per_s") > 2.5 * num(&one, "throughput.requests_per_s"));
    let tp1 = report("max_batch_size = 16", OFFLINE);
    let tp4 = report("tp = 4\nmax_batch_size = 16", OFFLINE);
    assert!(num(&tp4, "tpot_s.p50") < num(&tp1, "tpot_s.p50"));
}

#[test]
fn refused_features_say_so() {
    let text = r#"
kind = "serving"
[cluster]
gpu = "H100"
[model]
preset = "llama-3.1-8b"
[serving]
pp = 2
[workload]
requests = 1
prompt_tokens = 1
output_tokens = 1
"#;
    let s = Scenario::parse(Path::new("pp.toml"), text.into(), &[]).unwrap();
    let e = clustersim::run(&s)
        .err()
        .expect("pipeline-parallel serving is refused");
    assert!(
        e.message.contains("not modelled by this version"),
        "{}",
        e.message
    );
}
