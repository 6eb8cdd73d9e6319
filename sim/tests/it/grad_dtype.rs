//! `parallel.grad_dtype`: gradients kept and reduced in fp32 (Megatron-LM, the default) or in the
//! model's 16-bit format (DeepSpeed's fp16 engine, as GPT-NeoX trains).

use crate::common;

use clustersim::report::training::TrainingReport;

/// GPT-3 1.3B data parallelism over two V100 nodes with ZeRO-1: the gradient reduction
/// crosses the network.
const TEXT: &str = r#"
kind = "training"
[cluster]
gpu = "V100-SXM2-32GB"
nodes = 2
gpus_per_node = 4
[cluster.inter_node]
nic_bandwidth = "100 Gb/s"
nics_per_node = 2
[model]
preset = "gpt3-1.3b"
seq_len = 1024
dtype = "fp16"
[parallel]
zero = 1
micro_batch = 1
global_batch = 8
"#;

#[test]
fn sixteen_bit_gradients_shrink_the_reduction_and_the_gradient_memory() {
    let fp32 = common::training("grads.toml", TEXT, &[]);
    let fp16 = common::training("grads.toml", TEXT, &["parallel.grad_dtype=fp16"]);
    let dp = |r: &TrainingReport| r.communication_s.data_parallel;
    // ZeRO-1 reduce-scatters the gradients (4 or 2 bytes a parameter) and all-gathers the
    // 16-bit weights (2): about (2 + 2) / (4 + 2) of the time.
    let ratio = dp(&fp16) / dp(&fp32);
    assert!(ratio > 0.62 && ratio < 0.72, "{ratio}");
    // 2 bytes a parameter plus the optimizer's fp32 copy of its 1/8 shard, against 4 bytes.
    let grads = |r: &TrainingReport| r.memory.breakdown_bytes.gradients as f64;
    let expected = (2.0 + 4.0 / 8.0) / 4.0;
    assert!(
        (grads(&fp16) / grads(&fp32) - expected).abs() < 1e-9,
        "{} vs {}",
        grads(&fp16),
        grads(&fp32)
    );
    assert!(fp32.assumptions.iter().any(|a| a.contains("in fp32")));
    assert!(
        fp16.assumptions
            .iter()
            .any(|a| a.contains("reduced in fp16"))
    );
    // Saying fp32 is the default, without its assumption.
    let said = common::training("grads.toml", TEXT, &["parallel.grad_dtype=fp32"]);
    assert_eq!(said.iteration_time_s, fp32.iteration_time_s);
}

#[test]
fn a_gradient_format_other_than_fp32_or_the_models_is_a_located_error() {
    for dtype in ["bf16", "fp8"] {
        let s = common::scenario(
            "grads.toml",
            TEXT,
            &[&format!("parallel.grad_dtype={dtype}")],
        );
        let e = clustersim::run(&s)
            .err()
            .unwrap_or_else(|| panic!("{dtype} ran"))
            .to_string();
        assert!(
            e.contains("parallel.grad_dtype")
                && e.contains("fp32 or in the model's 16-bit format (fp16)"),
            "{dtype}: {e}"
        );
    }
}
