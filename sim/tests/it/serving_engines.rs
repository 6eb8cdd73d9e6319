//! `[serving] engine`: each engine's table fills what the scenario leaves out, and stating a
//! table's value changes nothing.

use crate::common;

use common::number as num;
use serde_json::Value;

fn run(gpu: &str, dtype: &str, serving: &str) -> Value {
    let text = format!(
        "kind = \"serving\"\n[cluster]\ngpu = \"{gpu}\"\nnodes = 1\ngpus_per_node = 8\n\
         [model]\npreset = \"llama-3.1-8b\"\ndtype = \"{dtype}\"\n[serving]\n{serving}\n\
         [workload]\nrequests = 200\narrival = \"poisson\"\nrate = \"20/s\"\n\
         prompt_tokens = 3000\noutput_tokens = 100\n"
    );
    common::outcome("engine.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

const KEYS: [&str; 6] = [
    "ttft_s.p50",
    "tpot_s.p50",
    "e2e_s.p99",
    "sim.iterations",
    "memory.kv_bytes_per_gpu",
    "throughput.output_tokens_per_s",
];

fn same(silent: &Value, stated: &Value, what: &str) {
    for key in KEYS {
        assert_eq!(num(silent, key), num(stated, key), "{what}: {key}");
    }
}

/// Each engine's defaults, stated: the scheduler, the batch limits, the memory fraction (with
/// the engine's meaning of it) and the KV cache's format.
#[test]
fn stating_an_engines_defaults_changes_nothing() {
    let cases = [
        // engine, GPU, weights, the table's values as keys
        (
            "vllm",
            "H100",
            "bf16",
            "scheduler = \"sarathi\"\nmax_batch_size = 1024\nmax_batch_tokens = 8192\n\
             kv_memory_fraction = 0.9\nkv_cache_dtype = \"bf16\"",
        ),
        (
            "vllm",
            "L40S",
            "fp8",
            "scheduler = \"sarathi\"\nmax_batch_size = 256\nmax_batch_tokens = 2048\n\
             kv_memory_fraction = 0.9\nkv_cache_dtype = \"bf16\"",
        ),
        (
            "sglang",
            "H100",
            "bf16",
            "scheduler = \"vllm\"\nmax_batch_size = 4096\nmax_batch_tokens = 8192\n\
             kv_memory_fraction = 0.88\nkv_cache_dtype = \"bf16\"",
        ),
        (
            "sglang",
            "L4",
            "bf16",
            "scheduler = \"vllm\"\nmax_batch_size = 4096\nmax_batch_tokens = 2048\n\
             kv_memory_fraction = 0.88\nkv_cache_dtype = \"bf16\"",
        ),
        (
            "tensorrt-llm",
            "H100",
            "fp8",
            "scheduler = \"sarathi\"\nmax_batch_size = 2048\nmax_batch_tokens = 8192\n\
             kv_memory_fraction = 0.9\nkv_cache_dtype = \"fp8\"",
        ),
    ];
    for (engine, gpu, dtype, stated) in cases {
        let what = format!("{engine} on {gpu} in {dtype}");
        let silent = run(gpu, dtype, &format!("engine = \"{engine}\""));
        let full = run(gpu, dtype, &format!("engine = \"{engine}\"\n{stated}"));
        same(&silent, &full, &what);
        assert_eq!(silent["serving"]["engine"], engine, "{what}");
    }
}

/// With no engine named the run is vLLM's.
#[test]
fn no_engine_is_vllm() {
    let silent = run("H100", "bf16", "");
    let named = run("H100", "bf16", "engine = \"vllm\"");
    same(&silent, &named, "vllm");
    assert_eq!(silent["serving"]["engine"], "vllm");
    let said = silent["assumptions"].to_string();
    assert!(said.contains("engine: vLLM"), "{said}");
}

/// The engines read the memory fraction differently: TensorRT-LLM's is of the memory the
/// weights leave free, so at the same fraction it keeps more KV cache than vLLM, and SGLang's
/// default fraction is lower than vLLM's.
#[test]
fn engines_size_the_kv_cache_their_own_way() {
    let kv = |engine: &str| {
        num(
            &run("H100", "bf16", &format!("engine = \"{engine}\"")),
            "memory.kv_bytes_per_gpu",
        )
    };
    let (vllm, trt, sglang) = (kv("vllm"), kv("tensorrt-llm"), kv("sglang"));
    assert!(trt > vllm, "{trt} {vllm}");
    assert!(sglang < vllm, "{sglang} {vllm}");
    // An fp8 checkpoint: TensorRT-LLM keeps an fp8 KV cache, twice the tokens in the same bytes.
    let fp8 = run("H100", "fp8", "engine = \"tensorrt-llm\"");
    let said = fp8["assumptions"].to_string();
    assert!(said.contains("KV cache in fp8"), "{said}");
}

#[test]
fn an_unknown_engine_is_refused_with_the_choices() {
    let text = "kind = \"serving\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"llama-3.1-8b\"\n\
                [serving]\nengine = \"triton\"\n[workload]\nrequests = 10\n";
    let e = common::outcome("bad-engine.toml", text).unwrap_err();
    for needle in [
        "bad-engine.toml",
        "7",
        "triton",
        "vllm",
        "tensorrt-llm",
        "sglang",
    ] {
        assert!(e.contains(needle), "{needle} not in {e}");
    }
}
