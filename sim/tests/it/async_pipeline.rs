//! `parallel.schedule = "async-1f1b"` (PipeDream, SpecTrain): 1F1B without a flush, every
//! micro-batch its own weight update, weights stashed per micro-batch in flight.

use crate::common;

use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use clustersim::workload::training::{self, estimate::Estimator};
use common::count_ops;

fn text(schedule: &str, dp: u32) -> String {
    common::h100_training(
        4 * dp,
        r#"preset = "gpt3-1.3b""#,
        &format!(
            "pp = 4\ndp = {dp}\nmicro_batch = 4\nglobal_batch = {}\nschedule = \"{schedule}\"",
            32 * dp
        ),
    )
}

#[test]
fn the_asynchronous_pipeline_has_no_bubble_between_steps() {
    let sync = common::training("p.toml", &text("1f1b", 1), &[]);
    let asynchronous = common::training("p.toml", &text("async-1f1b", 1), &[]);
    let step = |r: &TrainingReport| r.iteration_time_s;
    let bubble = |r: &TrainingReport| r.breakdown_s.pipeline_bubble;
    // 1F1B pays pp - 1 = 3 rounds of fill and drain on 8 micro-batches; async pays none.
    assert!(bubble(&sync) > 0.2 * step(&sync), "{}", bubble(&sync));
    assert!(bubble(&asynchronous) < 1e-9, "{}", bubble(&asynchronous));
    // Faster, though each micro-batch now pays its own optimizer step (with Adam on a stage of
    // 1.3B / 4 parameters, a few milliseconds: a micro-batch of 1 sequence would lose the gain).
    assert!(
        step(&asynchronous) < 0.95 * step(&sync),
        "{} vs {}",
        step(&asynchronous),
        step(&sync)
    );
    // Busy all the time: the busiest stage's work is the step.
    let compute = asynchronous.breakdown_s.compute;
    assert!((compute / step(&asynchronous) - 1.0).abs() < 1e-6);
}

#[test]
fn every_micro_batch_is_a_weight_update_and_a_gradient_reduction() {
    let out = common::run("p.toml", &text("async-1f1b", 2), &[]);
    // 4 stages x 8 micro-batches.
    assert_eq!(count_ops(&out, "optimizer_step"), 32);
    assert!(count_ops(&out, "grad_reduce") >= 32);
    let sync = common::run("p.toml", &text("1f1b", 2), &[]);
    assert_eq!(count_ops(&sync, "optimizer_step"), 4);
}

#[test]
fn weights_are_stashed_per_micro_batch_in_flight() {
    let sync = common::training("p.toml", &text("1f1b", 1), &[]);
    let asynchronous = common::training("p.toml", &text("async-1f1b", 1), &[]);
    let weights = |r: &TrainingReport| r.memory.breakdown_bytes.weights as f64;
    // The first stage has pp = 4 micro-batches in flight: four versions of its weights.
    let ratio = weights(&asynchronous) / weights(&sync);
    assert!((ratio - 4.0).abs() < 1e-9, "{ratio}");
}

#[test]
fn the_estimate_follows_the_asynchronous_step() {
    for dp in [1, 2] {
        let scenario = common::scenario("p.toml", &text("async-1f1b", dp), &[]);
        let mut setup =
            clustersim::scenario::lower::training::resolve(&scenario).expect("resolves");
        let compute = clustersim::scenario::lower::training::compute_model(&scenario, &mut setup)
            .expect("compute");
        let estimate = Estimator::new(&compute).estimate(&setup);
        let simulated = training::simulate(setup, &compute).expect("one GPU per stage");
        let step = TrainingReport::of_run(&simulated.report).iteration_time_s;
        assert_eq!(estimate.bubble_s, 0.0);
        assert!(
            (estimate.iteration_s / step - 1.0).abs() < 0.25,
            "dp {dp}: estimate {} vs simulated {step}",
            estimate.iteration_s
        );
    }
}

#[test]
fn an_unknown_schedule_names_the_valid_ones() {
    let text = text("async", 1);
    let err = clustersim::Scenario::parse(std::path::Path::new("p.toml"), text, &[])
        .expect_err("refused");
    assert!(err.to_string().contains("async-1f1b"), "{err}");
}
