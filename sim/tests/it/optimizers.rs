//! Optimizers in the memory model and the step: Adam, 8-bit Adam, Adafactor and GaLore; and the
//! report's largest micro-batch that fits.

use crate::common;

use clustersim::report::training::TrainingReport;
use common::{h100_training, outcome};

const MODEL: &str = "preset = \"llama-2-7b\"\nseq_len = 2048";

fn with(optimizer: &str, extra: &str) -> TrainingReport {
    let parallel =
        format!("micro_batch = 1\nrecompute = \"full\"\noptimizer = \"{optimizer}\"\n{extra}");
    common::training("optimizer.toml", &h100_training(1, MODEL, &parallel), &[])
}

fn optimizer_bytes(r: &TrainingReport) -> f64 {
    r.memory.breakdown_bytes.optimizer as f64
}

#[test]
fn adam_keeps_twelve_bytes_a_parameter_and_the_others_less() {
    let adam = with("adam", "");
    let params = adam.model.params as f64;
    assert_eq!(optimizer_bytes(&adam), (12.0 * params).round());
    let eight = with("adam-8bit", "");
    assert_eq!(optimizer_bytes(&eight), (6.0 * params).round());
    // Adafactor: master weights and factored second moments (a few MB), plus the unlisted 1-D
    // weights' full second moment (none are counted in this model's parameters).
    let adafactor = with("adafactor", "");
    assert!(
        adafactor
            .assumptions
            .iter()
            .any(|a| a.contains("gradients and adafactor states")),
        "{:?}",
        adafactor.assumptions
    );
    let factored = optimizer_bytes(&adafactor) - 4.0 * params;
    assert!(factored > 0.0 && factored < 0.002 * params, "{factored}");
    // GaLore at rank 1024 keeps well under half of Adam's moments and more than 8-bit Adam's.
    let galore = with("galore", "galore_rank = 1024");
    let moments = optimizer_bytes(&galore) - 4.0 * params;
    assert!(moments < 0.4 * 8.0 * params, "{moments}");
    assert!(moments > 2.0 * params, "{moments}");
    assert_eq!(galore.parallel.optimizer["rank"], 1024);
}

#[test]
fn galore_state_and_step_follow_rank_and_interval() {
    let low = with("galore", "galore_rank = 256\ngalore_interval = 200");
    let high = with("galore", "galore_rank = 1024\ngalore_interval = 200");
    assert!(optimizer_bytes(&low) < optimizer_bytes(&high));
    // A rank at the matrices' full width projects nothing: Adam's state.
    let full = with("galore", "galore_rank = 4096");
    let adam = with("adam", "");
    assert_eq!(optimizer_bytes(&full), optimizer_bytes(&adam));
    // Projections cost time; refreshing every step costs more than every 200.
    let often = with("galore", "galore_rank = 1024\ngalore_interval = 1");
    let t = |r: &TrainingReport| r.iteration_time_s;
    assert!(t(&high) > t(&adam), "{} vs {}", t(&high), t(&adam));
    assert!(t(&often) > t(&high), "{} vs {}", t(&often), t(&high));
}

#[test]
fn galore_defaults_are_recorded_and_its_keys_need_it() {
    let r = with("galore", "");
    let assumptions = r.assumptions.join("\n");
    assert!(assumptions.contains("GaLore rank 1024"), "{assumptions}");
    assert!(assumptions.contains("every 200 steps"), "{assumptions}");
    let text = h100_training(
        1,
        MODEL,
        "micro_batch = 1\noptimizer = \"adam\"\ngalore_rank = 128",
    );
    let err = outcome("bad.toml", &text).expect_err("galore_rank without GaLore");
    assert!(err.contains("galore_rank"), "{err}");
    assert!(err.contains("bad.toml:"), "{err}");
}

#[test]
fn largest_micro_batch_is_the_edge_of_fitting() {
    let r = with("adam-8bit", "");
    let largest = r.memory.largest_micro_batch.unwrap() as u32;
    assert!(largest >= 1, "{largest}");
    let at = |mb: u32| {
        let parallel =
            format!("micro_batch = {mb}\nrecompute = \"full\"\noptimizer = \"adam-8bit\"");
        common::training("optimizer.toml", &h100_training(1, MODEL, &parallel), &[])
    };
    assert!(at(largest).memory.fits);
    assert!(!at(largest + 1).memory.fits);
    // Adam's state alone overflows the 80 GB: nothing fits.
    assert_eq!(with("adam", "").memory.largest_micro_batch, Some(0));
}
