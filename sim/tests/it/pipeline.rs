//! Pipeline parallelism in the training workload: schedules, bubbles, in-flight memory and the
//! point-to-point traffic between stages, checked on small runs.

use crate::common;

use clustersim::RunOutput;
use common::{count_ops, training_of};

fn run(pp: u32, schedule: &str, virtual_stages: u32, micro_batches: u32) -> RunOutput {
    let text = common::h100_training(
        pp,
        r#"
        layers = 24
        hidden = 2048
        heads = 16
        vocab = 256
        seq_len = 2048
        "#,
        &format!(
            r#"
            pp = {pp}
            schedule = "{schedule}"
            virtual_stages = {virtual_stages}
            micro_batch = 1
            global_batch = {micro_batches}
            "#
        ),
    );
    common::run("pp.toml", &text, &[])
}

fn bubble_fraction(out: &RunOutput) -> f64 {
    let r = training_of(out);
    r.breakdown_s.pipeline_bubble / r.iteration_time_s
}

#[test]
fn one_f_one_b_bubble_is_pp_minus_1_over_m_plus_pp_minus_1() {
    // A tiny vocabulary keeps the first and last stages' extra work small: stages are near equal.
    for (pp, m) in [(4, 8), (4, 16), (8, 16)] {
        let measured = bubble_fraction(&run(pp, "1f1b", 1, m));
        let theory = (pp - 1) as f64 / (m + pp - 1) as f64;
        assert!(
            (measured - theory).abs() / theory < 0.1,
            "pp {pp} m {m}: {measured} vs {theory}"
        );
    }
}

#[test]
fn interleaving_divides_the_bubble_by_the_virtual_stages() {
    let plain = bubble_fraction(&run(4, "1f1b", 1, 8));
    let interleaved = bubble_fraction(&run(4, "interleaved-1f1b", 2, 8));
    let ratio = interleaved / plain;
    assert!(ratio > 0.4 && ratio < 0.65, "{ratio}");
}

#[test]
fn gpipe_keeps_every_micro_batch_in_flight_and_1f1b_only_pp() {
    let activations = |out: &RunOutput| training_of(out).memory.breakdown_bytes.activations as f64;
    let gpipe = run(4, "gpipe", 1, 16);
    let one = run(4, "1f1b", 1, 16);
    assert!((activations(&gpipe) / activations(&one) - 16.0 / 4.0).abs() < 1e-9);
    // About the same bubble (up to how sends overlap): 1F1B saves memory, not time.
    let (a, b) = (bubble_fraction(&gpipe), bubble_fraction(&one));
    assert!((a - b).abs() / b < 0.02, "{a} {b}");
}

#[test]
fn stages_exchange_activations_and_gradients() {
    for (pp, schedule, v, m) in [
        (4, "1f1b", 1, 8),
        (4, "interleaved-1f1b", 2, 8),
        (2, "gpipe", 1, 3),
        (3, "interleaved-1f1b", 2, 6),
    ] {
        let out = run(pp, schedule, v, m);
        let sends = count_ops(&out, "pp_send") as u32;
        // Every micro-batch crosses every chunk boundary once forward and once backward.
        assert_eq!(
            sends,
            2 * m * (pp * v - 1),
            "pp {pp} {schedule} v {v} m {m}"
        );
        assert_eq!(training_of(&out).parallel.pp, pp);
        // One compute stream per stage, each with its optimizer step.
        let steps = count_ops(&out, "optimizer_step") as u32;
        assert_eq!(steps, pp);
    }
}

#[test]
fn uneven_layer_counts_split_as_evenly_as_possible() {
    let text = common::h100_training(
        4,
        r#"
        layers = 10
        hidden = 1024
        heads = 8
        vocab = 256
        seq_len = 1024
        "#,
        r#"
        pp = 4
        global_batch = 4
        "#,
    );
    let out = common::run("uneven.toml", &text, &[]);
    let assumptions = training_of(&out).assumptions.join("\n");
    assert!(
        assumptions.contains("10 layers split unevenly over 4 pipeline chunks"),
        "{assumptions}"
    );
    // Layers 0-2 on stage 0, 3-5 on stage 1, 6-7 on stage 2, 8-9 on stage 3.
    let layers_on = |lane: u32| {
        let mut l: Vec<u32> = out.graph.lane_ops[lane as usize]
            .iter()
            .filter_map(|&op| out.graph.ops[op as usize].layer)
            .collect();
        l.sort();
        l.dedup();
        l
    };
    let compute_lanes: Vec<u32> = (0..out.graph.lanes.len() as u32)
        .filter(|&l| out.graph.lanes[l as usize].name == "compute")
        .collect();
    assert_eq!(layers_on(compute_lanes[0]), vec![0, 1, 2]);
    assert_eq!(layers_on(compute_lanes[3]), vec![8, 9]);
}
