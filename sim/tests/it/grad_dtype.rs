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
    // 2 bytes a parameter against 4: the optimizer's fp32 copy of its 1/8 shard lives only
    // during the step, after the passes free their activations, so it is not at this peak.
    let grads = |r: &TrainingReport| r.memory.breakdown_bytes.gradients as f64;
    let expected = 2.0 / 4.0;
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

/// Without ZeRO the optimizer's fp32 copy of every gradient outweighs the activations of short
/// sequences: the step is the peak, holding the 16-bit gradients and the copy, no activations.
#[test]
fn the_optimizer_steps_gradient_copy_is_the_peak_when_it_outweighs_the_passes() {
    let short = ["parallel.zero=0", "model.seq_len=128"];
    let fp32 = common::training("grads.toml", TEXT, &short);
    let fp16 = common::training(
        "grads.toml",
        TEXT,
        &[short[0], short[1], "parallel.grad_dtype=fp16"],
    );
    let (m, b) = (&fp16.memory, &fp16.memory.breakdown_bytes);
    assert_eq!((b.activations, b.logits), (0, 0), "{b:?}");
    // 2 bytes a parameter and the 4 of the copy, against fp32's 4.
    let ratio = b.gradients as f64 / fp32.memory.breakdown_bytes.gradients as f64;
    assert!((ratio - 1.5).abs() < 1e-6, "{ratio}");
    let held = b.weights + b.gradients + b.optimizer + b.buffers;
    assert!(
        held.abs_diff(m.peak_bytes_per_gpu) <= 2,
        "{held} vs {}",
        m.peak_bytes_per_gpu
    );
    // fp32 gradients hold the activations at their peak.
    assert!(fp32.memory.breakdown_bytes.activations > 0);
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
