//! `[model] dropout`: with dropout each layer keeps its two one-byte masks for the backward;
//! without it (a preset whose published config has none, or NeMo's and torchtitan's models, by
//! default) it keeps neither, and nothing else moves.

use crate::common;

use clustersim::report::training::TrainingReport;

/// `preset` on one H100, no tensor or pipeline parallelism: every layer's activations of the one
/// micro-batch are held at once.
fn run_preset(preset: &str, model: &str, parallel: &str) -> Result<TrainingReport, String> {
    let text = format!(
        "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 1\ngpus_per_node = 1\n\
         [model]\npreset = \"{preset}\"\nseq_len = 2048\n{model}\n\
         [parallel]\nglobal_batch = 1\nmicro_batch = 1\n{parallel}\n"
    );
    common::typed_outcome("dropout.toml", &text)
}

/// Llama 3.1 8B, whose published config trains without dropout.
fn run(model: &str, parallel: &str) -> Result<TrainingReport, String> {
    run_preset("llama-3.1-8b", model, parallel)
}

/// GPT-3 1.3B, whose paper states no dropout.
fn run_gpt(model: &str, parallel: &str) -> Result<TrainingReport, String> {
    run_preset("gpt3-1.3b", model, parallel)
}

/// A scenario of `preset` that leaves dropout out runs as one that states `stated`, and one of
/// its assumptions says every one of `says`.
fn silent_is_stated(preset: &str, stated: &str, parallel: &str, says: &[&str]) {
    let silent = run_preset(preset, "", parallel).unwrap();
    let written = run_preset(preset, stated, parallel).unwrap();
    assert_eq!(
        silent.memory.peak_bytes_per_gpu, written.memory.peak_bytes_per_gpu,
        "{preset} {parallel}"
    );
    assert_eq!(silent.iteration_time_s, written.iteration_time_s);
    assert!(
        silent
            .assumptions
            .iter()
            .any(|a| says.iter().all(|s| a.contains(s))),
        "{preset}: {:?}",
        silent.assumptions
    );
}

#[test]
fn megatron_lms_dropout_is_the_default_without_a_framework() {
    silent_is_stated(
        "gpt3-1.3b",
        "dropout = 0.1",
        "",
        &["dropout on", "Megatron-LM"],
    );
}

#[test]
fn a_presets_published_config_decides_when_unstated() {
    // Llama's config sets no dropout, whatever the framework's default.
    for parallel in ["", "framework = \"megatron\""] {
        let says = ["no dropout", "\"llama-3.1-8b\"'s published"];
        silent_is_stated("llama-3.1-8b", "dropout = 0.0", parallel, &says);
    }
    // OPT-175B's config keeps a residual dropout of 0.1.
    let says = ["dropout on", "trains with 0.1"];
    silent_is_stated("opt-175b", "dropout = 0.1", "", &says);
}

#[test]
fn without_dropout_each_layer_keeps_no_masks() {
    let with = run("dropout = 0.1", "").unwrap();
    let without = run("dropout = 0.0", "").unwrap();
    // Two masks of a byte per element of the 2048 x 4096 hidden state, in each of 32 layers.
    let masks = 2 * 2048 * 4096 * 32;
    let saved =
        with.memory.breakdown_bytes.activations - without.memory.breakdown_bytes.activations;
    assert_eq!(saved, masks);
    assert_eq!(
        with.memory.peak_bytes_per_gpu - without.memory.peak_bytes_per_gpu,
        masks
    );
    assert_eq!(
        with.iteration_time_s, without.iteration_time_s,
        "dropout kernels are not priced"
    );
}

#[test]
fn unfused_attention_without_dropout_keeps_only_the_softmax_output() {
    let model = "attention_kernel = \"unfused\"";
    let with = run(&format!("{model}\ndropout = 0.1"), "").unwrap();
    let without = run(&format!("{model}\ndropout = 0.0"), "").unwrap();
    // Per layer: the masks, and of the scores' 5 bytes an element (16-bit softmax output, mask,
    // 16-bit dropped probabilities) all but the softmax output; 32 heads, 2048^2 scores each.
    let scores = 3 * 32 * 2048 * 2048;
    let masks = 2 * 2048 * 4096;
    let saved =
        with.memory.breakdown_bytes.activations - without.memory.breakdown_bytes.activations;
    assert_eq!(saved, 32 * (scores + masks));
}

#[test]
fn nemo_and_torchtitan_train_without_dropout() {
    for framework in ["nemo", "torchtitan"] {
        let parallel = format!("framework = \"{framework}\"");
        let silent = run_gpt("", &parallel).unwrap();
        let stated = run_gpt("dropout = 0.0", &parallel).unwrap();
        assert_eq!(
            silent.memory.peak_bytes_per_gpu, stated.memory.peak_bytes_per_gpu,
            "{framework}"
        );
        assert!(
            silent
                .assumptions
                .iter()
                .any(|a| a.contains("no dropout") && a.to_lowercase().contains(framework)),
            "{framework}: {:?}",
            silent.assumptions
        );
        let megatron = run_gpt("", "").unwrap();
        assert!(
            stated.memory.breakdown_bytes.activations < megatron.memory.breakdown_bytes.activations
        );
    }
}

#[test]
fn a_dropout_outside_zero_to_one_is_a_located_error() {
    for p in ["1.0", "-0.1"] {
        let e = run(&format!("dropout = {p}"), "").unwrap_err();
        assert!(
            e.contains("dropout.toml:9") && e.contains("below 1") && e.contains("help"),
            "{e}"
        );
    }
}

#[test]
fn serving_refuses_a_dropout() {
    let path = common::root().join("scenarios/serving/llama-3.1-8b-1xh100-offline.toml");
    let text = std::fs::read_to_string(path).expect("a shipped serving scenario");
    let text = text.replacen("[model]", "[model]\ndropout = 0.1", 1);
    common::refused_saying(
        "serve.toml",
        &text,
        "inference runs without dropout",
        "remove dropout",
    );
}

#[test]
fn an_imported_configs_dropout_is_the_default() {
    // Llama 3 8B's config.json, read beside a scenario in the test folder.
    let dir = common::root().join("sim/tests/hf");
    let scenario = |model: &str| {
        format!(
            "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 1\ngpus_per_node = 1\n\
             [model]\nhf_config = \"llama-3-8b.json\"\nseq_len = 2048\n{model}\n\
             [parallel]\nglobal_batch = 1\nmicro_batch = 1\n"
        )
    };
    let path = dir.join("dropout.toml");
    let run = |model: &str| {
        common::typed_outcome::<TrainingReport>(path.to_str().unwrap(), &scenario(model)).unwrap()
    };
    let silent = run("");
    let stated = run("dropout = 0.0");
    assert_eq!(
        silent.memory.peak_bytes_per_gpu,
        stated.memory.peak_bytes_per_gpu
    );
    assert!(
        silent
            .assumptions
            .iter()
            .any(|a| a.contains("no dropout") && a.contains("\"llama-3-8b.json\"")),
        "{:?}",
        silent.assumptions
    );
}
