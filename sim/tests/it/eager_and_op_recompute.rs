//! torchtitan's way of running a Llama layer: eager PyTorch's elementwise kernels
//! (`[model] elementwise = "eager"`) and its per-operator selective checkpointing
//! (`recompute = "op"`).

use crate::common;

use clustersim::RunOutput;
use common::{count_ops as count, training_of};

fn run(model: &str, recompute: &str, extra: &str) -> RunOutput {
    let text = common::h100_training(
        8,
        &format!("preset = \"llama-3.1-8b\"\nseq_len = 4096\n{model}"),
        &format!(
            r#"
            tp = 2
            dp = 4
            micro_batch = 1
            global_batch = 4
            recompute = "{recompute}"
            {extra}
            "#
        ),
    );
    common::run("torchtitan.toml", &text, &[])
}

fn step(out: &RunOutput) -> f64 {
    training_of(out).iteration_time_s
}

fn activations(out: &RunOutput) -> f64 {
    training_of(out).memory.breakdown_bytes.activations as f64
}

#[test]
fn op_recomputation_sits_between_none_and_full_in_time_and_memory() {
    let none = run("", "none", "");
    let op = run("", "op", "");
    let full = run("", "full", "");
    assert!(step(&none) < step(&op) && step(&op) < step(&full));
    assert!(activations(&full) < activations(&op) && activations(&op) < activations(&none));
    // Three of seven multiplies per layer come back (key, output and up projections), the
    // hardware FLOPs count them and the model FLOPs do not.
    assert_eq!(count(&op, "k_proj"), 32);
    assert_eq!(count(&op, "out_proj"), 2 * 32);
    assert_eq!(count(&op, "up_proj"), 32);
    assert_eq!(count(&op, "q_proj"), 0);
    let model = |o: &RunOutput| training_of(o).flops.model_per_step;
    let hardware = |o: &RunOutput| training_of(o).flops.hardware_per_step;
    assert_eq!(model(&op), model(&none));
    let recomputed = hardware(&op) / model(&op) - 1.0;
    let full_recomputed = hardware(&full) / model(&full) - 1.0;
    assert!(
        recomputed > 0.05 && recomputed < 0.5 * full_recomputed,
        "{recomputed}"
    );
}

#[test]
fn eager_elementwise_kernels_cost_time_not_flops() {
    let fused = run("", "none", "");
    let eager = run("elementwise = \"eager\"", "none", "");
    assert!(
        step(&eager) > step(&fused) * 1.03,
        "{} vs {}",
        step(&eager),
        step(&fused)
    );
    let hw = |o: &RunOutput| training_of(o).flops.hardware_per_step;
    assert_eq!(hw(&eager), hw(&fused));
    // Six passes for each of the two norms of 32 layers, forward; GQA keys and values repeated.
    assert_eq!(count(&eager, "norm_upcast"), 2 * 32);
    assert_eq!(count(&eager, "repeat_kv"), 32);
    assert_eq!(count(&fused, "norm_upcast"), 0);
    // Per-operator recomputation reruns the eager kernels too.
    let both = run("elementwise = \"eager\"", "op", "");
    assert_eq!(count(&both, "norm_upcast"), 2 * 2 * 32);
    assert!(step(&both) > step(&eager));
}

#[test]
fn eager_is_refused_for_a_plain_mlp_and_outside_training() {
    let text = common::h100_training(
        8,
        "preset = \"gpt3-1.3b\"\nelementwise = \"eager\"",
        "tp = 1\nmicro_batch = 1\nglobal_batch = 8",
    );
    let e = common::refused("plain.toml", &text, "a plain MLP is refused");
    let e = e.to_string();
    assert!(e.contains("elementwise") && e.contains("not gated"), "{e}");
    let serving = r#"
kind = "serving"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 1
[model]
preset = "llama-3.1-8b"
elementwise = "eager"
[serving]
tp = 1
[workload]
requests = 10
arrival = "poisson"
rate = "1/s"
prompt_tokens = 128
output_tokens = 128
"#;
    let e = common::outcome("serving.toml", serving).expect_err("serving refuses it");
    assert!(
        e.contains("elementwise") && e.contains("serving.toml:9"),
        "{e}"
    );
}

#[test]
fn op_recomputation_is_refused_with_sequences_of_unlike_lengths() {
    let text = r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "llama-3.1-8b"
[parallel]
dp = 8
recompute = "op"
[sequences]
lengths = [8192, 4096, 2048]
micro_batch_tokens = 8192
"#;
    let e = common::outcome("sequences.toml", text).expect_err("refused");
    assert!(
        e.contains("per-operator") && e.contains("sequences.toml:11"),
        "{e}"
    );
}
