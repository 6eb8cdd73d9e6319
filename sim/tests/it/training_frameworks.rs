//! `[parallel] framework`: each framework's table fills what the scenario leaves out, and stating
//! a table's values changes nothing.

use crate::common;

use clustersim::report::training::TrainingReport;

fn run(parallel: &str, model: &str) -> Result<TrainingReport, String> {
    let text = format!(
        "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 2\ngpus_per_node = 8\n\
         [cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"\n\
         [model]\npreset = \"llama-3.1-8b\"\nseq_len = 4096\n{model}\n\
         [parallel]\n{parallel}\nglobal_batch = 64\nmicro_batch = 1\n"
    );
    common::typed_outcome("framework.toml", &text)
}

/// The figures a stated default must leave as they are, by name.
fn figures(r: &TrainingReport) -> [(&'static str, f64); 4] {
    [
        ("iteration_time_s", r.iteration_time_s),
        (
            "memory.peak_bytes_per_gpu",
            r.memory.peak_bytes_per_gpu as f64,
        ),
        (
            "breakdown_s.exposed_communication",
            r.breakdown_s.exposed_communication,
        ),
        ("hardware_tflops_per_gpu", r.hardware_tflops_per_gpu),
    ]
}

fn same(silent: &TrainingReport, stated: &TrainingReport, what: &str) {
    for ((key, a), (_, b)) in figures(silent).into_iter().zip(figures(stated)) {
        assert_eq!(a, b, "{what}: {key}");
    }
}

#[test]
fn stating_a_frameworks_defaults_changes_nothing() {
    let cases = [
        (
            "framework = \"nemo\"\ntp = 4",
            "tp = 4\nsequence_parallel = true\nzero = 1\ntp_dgrad_overlap = true\n\
             grad_dtype = \"bf16\"",
            "dropout = 0.0",
        ),
        (
            "framework = \"torchtitan\"\ntp = 2\nrecompute = \"selective\"",
            "tp = 2\nsequence_parallel = true\nrecompute = \"op\"",
            "attention_kernel = \"flash-attention-2\"\nelementwise = \"eager\"\ndropout = 0.0",
        ),
        (
            "framework = \"megatron\"\nframework_version = \"2.0\"\ntp = 2",
            "tp = 2",
            "attention_kernel = \"unfused\"",
        ),
        (
            "framework = \"megatron\"\ntp = 2",
            "tp = 2\ntp_dgrad_overlap = true",
            "",
        ),
        (
            "framework = \"deepspeed\"\nframework_version = \"0.3\"\nzero = 3",
            "zero = 3\nparam_gather = \"on-demand\"\ngrad_dtype = \"bf16\"",
            "attention_kernel = \"unfused\"",
        ),
        ("framework = \"deepspeed\"\nzero = 3", "zero = 3", ""),
        (
            "framework = \"fms-fsdp\"\nzero = 3\nrecompute = \"selective\"",
            "zero = 3\nrecompute = \"full\"\ngrad_dtype = \"bf16\"",
            "attention_kernel = \"flash-attention-2\"\nelementwise = \"eager\"\ndropout = 0.0",
        ),
        (
            "framework = \"torchtitan\"\ncp = 2",
            "cp = 2\ncp_algorithm = \"all-gather\"",
            "attention_kernel = \"flash-attention-2\"\nelementwise = \"eager\"\ndropout = 0.0",
        ),
    ];
    for (named, stated, model) in cases {
        let silent = run(named, "").unwrap_or_else(|e| panic!("{named}: {e}"));
        let full = run(stated, model).unwrap_or_else(|e| panic!("{stated}: {e}"));
        same(&silent, &full, named);
        assert!(!silent.assumptions.is_empty(), "{named}");
    }
}

/// The frameworks differ where their defaults differ: NeMo's distributed optimizer and sequence
/// parallelism take memory off every GPU.
#[test]
fn frameworks_move_the_result_where_their_defaults_differ() {
    let plain = run("tp = 4", "").unwrap();
    let nemo = run("framework = \"nemo\"\ntp = 4", "").unwrap();
    assert!(nemo.memory.peak_bytes_per_gpu < plain.memory.peak_bytes_per_gpu);
    let said = nemo.assumptions.join("\n");
    assert!(said.contains("NeMo"), "{said}");
    // torchtitan all-gathers the keys and values of context parallelism; the fallback is a ring.
    let ring = run("cp = 2", "").unwrap();
    let titan = run("framework = \"torchtitan\"\ncp = 2", "").unwrap();
    assert_eq!(ring.parallel.cp_algorithm, "ring");
    assert_eq!(titan.parallel.cp_algorithm, "all-gather");
    let said = titan.assumptions.join("\n");
    assert!(said.contains("context_parallel_rotate_method"), "{said}");
}

#[test]
fn framework_errors_name_the_key() {
    let e = run("framework = \"jax\"", "").unwrap_err();
    for needle in [
        "framework.toml",
        "jax",
        "megatron",
        "nemo",
        "deepspeed",
        "torchtitan",
        "fms-fsdp",
    ] {
        assert!(e.contains(needle), "{needle} not in {e}");
    }
    let e = run("framework_version = \"3.0\"", "").unwrap_err();
    assert!(e.contains("without a framework"), "{e}");
    let e = run("framework = \"megatron\"\nframework_version = \"core\"", "").unwrap_err();
    assert!(
        e.contains("framework_version") && e.contains("not a release"),
        "{e}"
    );
}

fn fp8(parallel: &str) -> TrainingReport {
    let text = format!(
        "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 8\ngpus_per_node = 8\n\
         [cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"\n\
         [model]\npreset = \"llama-3.1-70b\"\nseq_len = 8192\ndtype = \"fp8\"\n\
         [parallel]\ntp = 4\npp = 4\nglobal_batch = 128\nmicro_batch = 1\n{parallel}\n"
    );
    common::typed_outcome("fp8.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// Unstated, every fp8 GEMM call casts its weight; NeMo's and Megatron-Core's Transformer Engine
/// casts each weight once a step, which shortens a step of many micro-batches.
#[test]
fn fp8_weight_casts_follow_the_framework() {
    let silent = fp8("");
    let per_call = fp8("fp8_casts = \"per-call\"");
    same(&silent, &per_call, "no framework");
    let te = fp8("fp8_casts = \"transformer-engine\"");
    assert!(te.iteration_time_s < 0.97 * silent.iteration_time_s);
    for framework in ["nemo", "megatron"] {
        let named = fp8(&format!("framework = \"{framework}\""));
        let stated = fp8(&format!(
            "framework = \"{framework}\"\nfp8_casts = \"transformer-engine\""
        ));
        same(&named, &stated, framework);
    }
    let titan = fp8("framework = \"torchtitan\"");
    let titan_stated = fp8("framework = \"torchtitan\"\nfp8_casts = \"per-call\"");
    same(&titan, &titan_stated, "torchtitan");
}
