//! `[serving] engine`: each engine's table fills what the scenario leaves out, and stating a
//! table's value changes nothing.

use crate::common;

use clustersim::report::serving::ServingReport;

fn run(gpu: &str, dtype: &str, serving: &str) -> ServingReport {
    let text = format!(
        "kind = \"serving\"\n[cluster]\ngpu = \"{gpu}\"\nnodes = 1\ngpus_per_node = 8\n\
         [model]\npreset = \"llama-3.1-8b\"\ndtype = \"{dtype}\"\n[serving]\n{serving}\n\
         [workload]\nrequests = 200\narrival = \"poisson\"\nrate = \"20/s\"\n\
         prompt_tokens = 3000\noutput_tokens = 100\n"
    );
    common::typed_outcome("engine.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The figures a stated default must leave as they are, by name.
fn figures(r: &ServingReport) -> [(&'static str, f64); 6] {
    [
        ("ttft_s.p50", r.ttft_s.p50.unwrap()),
        ("tpot_s.p50", r.tpot_s.p50.unwrap()),
        ("e2e_s.p99", r.e2e_s.p99.unwrap()),
        ("sim.iterations", r.sim.iterations.unwrap() as f64),
        (
            "memory.kv_bytes_per_gpu",
            r.memory.kv_bytes_per_gpu.unwrap() as f64,
        ),
        (
            "throughput.output_tokens_per_s",
            r.throughput.output_tokens_per_s,
        ),
    ]
}

fn same(silent: &ServingReport, stated: &ServingReport, what: &str) {
    for ((key, a), (_, b)) in figures(silent).into_iter().zip(figures(stated)) {
        assert_eq!(a, b, "{what}: {key}");
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
        assert_eq!(silent.serving.engine, engine, "{what}");
    }
}

/// With no engine named the run is vLLM's.
#[test]
fn no_engine_is_vllm() {
    let silent = run("H100", "bf16", "");
    let named = run("H100", "bf16", "engine = \"vllm\"");
    same(&silent, &named, "vllm");
    assert_eq!(silent.serving.engine, "vllm");
    let said = silent.assumptions.join("\n");
    assert!(said.contains("engine: vLLM"), "{said}");
}

/// The engines read the memory fraction differently: TensorRT-LLM's is of the memory the
/// weights leave free, so at the same fraction it keeps more KV cache than vLLM, and SGLang's
/// default fraction is lower than vLLM's.
#[test]
fn engines_size_the_kv_cache_their_own_way() {
    let kv = |engine: &str| {
        run("H100", "bf16", &format!("engine = \"{engine}\""))
            .memory
            .kv_bytes_per_gpu
            .unwrap() as f64
    };
    let (vllm, trt, sglang) = (kv("vllm"), kv("tensorrt-llm"), kv("sglang"));
    assert!(trt > vllm, "{trt} {vllm}");
    assert!(sglang < vllm, "{sglang} {vllm}");
    // An fp8 checkpoint: TensorRT-LLM keeps an fp8 KV cache, twice the tokens in the same bytes.
    let fp8 = run("H100", "fp8", "engine = \"tensorrt-llm\"");
    let said = fp8.assumptions.join("\n");
    assert!(said.contains("KV cache in fp8"), "{said}");
    assert!(said.contains("quantize their 16-bit inputs"), "{said}");
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

/// Unstated, the release is the engine's newest; stating it changes nothing.
#[test]
fn the_newest_release_is_the_default() {
    for (engine, newest) in [("vllm", "0.14"), ("sglang", "0.4"), ("tensorrt-llm", "1.0")] {
        let silent = run("H100", "bf16", &format!("engine = \"{engine}\""));
        let stated = run(
            "H100",
            "bf16",
            &format!("engine = \"{engine}\"\nengine_version = \"{newest}\""),
        );
        same(&silent, &stated, engine);
    }
}

/// At batch 1 a decode step is short, so the host's work between steps shows: vLLM's
/// synchronous releases take longer per token than 0.14+, which overlaps it; 0.8-0.10, whose
/// attention is launched from Python every layer, longer still on a fast GPU; the V0 engine
/// (0.4-0.7) longest.
#[test]
fn older_releases_pay_their_host_work_at_small_batches() {
    let tpot = |version: &str| {
        let text = format!(
            "kind = \"serving\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"llama-3.1-8b\"\n\
             [serving]\nengine = \"vllm\"\nengine_version = \"{version}\"\n\
             [workload]\nrequests = 1\narrival = \"offline\"\nprompt_tokens = 32\n\
             output_tokens = 64\n"
        );
        common::typed_outcome::<ServingReport>("release.toml", &text)
            .unwrap()
            .tpot_s
            .p50
            .unwrap()
    };
    let (v8, v11, v14) = (tpot("0.8"), tpot("0.11"), tpot("0.14"));
    assert!(v11 > v14 + 0.3e-3, "{v11} {v14}");
    assert!(v8 >= v11, "{v8} {v11}");
    // V0's synchronous loop does more on the host a step than V1's.
    let (v5, v6) = (tpot("0.5"), tpot("0.6"));
    assert!(v5 > v11 + 0.4e-3, "{v5} {v11}");
    assert!(v5 > v6 && v6 > v11, "{v5} {v6} {v11}");
}

#[test]
fn releases_the_tables_do_not_cover_are_refused_at_the_key() {
    for (version, needle) in [("0.3.3", "before 0.4"), ("latest", "not a release number")] {
        let text = format!(
            "kind = \"serving\"\n[cluster]\ngpu = \"H100\"\n[model]\npreset = \"llama-3.1-8b\"\n\
             [serving]\nengine = \"vllm\"\nengine_version = \"{version}\"\n\
             [workload]\nrequests = 10\n"
        );
        let e = common::outcome("old.toml", &text).unwrap_err();
        for n in ["old.toml:8", "engine_version", needle] {
            assert!(e.contains(n), "{n} not in {e}");
        }
    }
}

/// A device defined by its own figures runs no engine's software unless one is named.
#[test]
fn a_custom_accelerator_pays_no_engines_time_unless_named() {
    let text = |serving: &str| {
        format!(
            "kind = \"serving\"\n[cluster]\nnodes = 1\ngpus_per_node = 1\n\
             [cluster.accelerator]\nname = \"dev\"\nmemory = \"80 GB\"\n\
             memory_bandwidth = \"3 TB/s\"\ntdp = \"700 W\"\npeak = {{ bf16 = \"900 TFLOP/s\", fp16 = \"900 TFLOP/s\" }}\n\
             [model]\npreset = \"llama-3.1-8b\"\n[serving]\n{serving}\n\
             [workload]\nrequests = 1\narrival = \"offline\"\nprompt_tokens = 32\n\
             output_tokens = 64\n"
        )
    };
    let silent: ServingReport = common::typed_outcome("dev.toml", &text("")).unwrap();
    let named: ServingReport =
        common::typed_outcome("dev.toml", &text("engine = \"vllm\"")).unwrap();
    assert!(named.tpot_s.p50.unwrap() > silent.tpot_s.p50.unwrap());
    let said = silent.assumptions.join("\n");
    assert!(said.contains("time outside the kernels: none"), "{said}");
}
