//! Tensor parallelism in the training workload: Megatron-LM's split of work, memory and
//! communication, checked on the report and the operation graph of small runs.

use crate::common;

use clustersim::RunOutput;
use common::{count_ops as count, training_of};

fn run(tp: u32, sequence_parallel: bool, recompute: &str) -> RunOutput {
    let text = common::h100_training(
        8,
        r#"preset = "gpt3-1.3b""#,
        &format!(
            r#"
            tp = {tp}
            sequence_parallel = {sequence_parallel}
            micro_batch = 2
            global_batch = {}
            recompute = "{recompute}"
            "#,
            2 * 8 / tp
        ),
    );
    common::run("tp.toml", &text, &[])
}

fn activations(out: &RunOutput) -> f64 {
    training_of(out).memory.breakdown_bytes.activations as f64
}

#[test]
fn activations_follow_korthikanti_for_gpt_shapes() {
    // Per layer: 34 sbh unsplit; with tp = 8, 10 + 24/8 = 13 sbh; with sequence parallelism 34/8.
    let one = activations(&run(1, false, "none"));
    let tp8 = activations(&run(8, false, "none"));
    let sp8 = activations(&run(8, true, "none"));
    assert!((one / tp8 - 34.0 / 13.0).abs() < 1e-9, "{}", one / tp8);
    assert!((one / sp8 - 8.0).abs() < 1e-9, "{}", one / sp8);
}

#[test]
fn model_state_divides_by_tp() {
    let one = training_of(&run(1, false, "none")).memory.breakdown_bytes;
    let tp4 = training_of(&run(4, false, "none")).memory.breakdown_bytes;
    for (part, a, b) in [
        ("weights", one.weights, tp4.weights),
        ("gradients", one.gradients, tp4.gradients),
        ("optimizer", one.optimizer, tp4.optimizer),
    ] {
        let (a, b) = (a as f64, b as f64);
        assert!((a / b - 4.0).abs() < 1e-6, "{part}: {}", a / b);
    }
}

#[test]
fn four_all_reduces_per_layer_or_their_sequence_parallel_pairs() {
    let layers = 24;
    // One micro-batch per replica (global batch 2 over dp 1 with micro-batch 2).
    let plain = run(8, false, "none");
    // Two forward (after the attention and MLP output projections), two backward, plus the
    // embedding's forward and the output layer's input gradient.
    assert_eq!(count(&plain, "tp_all_reduce"), 4 * layers + 2);
    assert_eq!(count(&plain, "tp_loss_all_reduce"), 1);
    let sp = run(8, true, "none");
    assert_eq!(count(&sp, "tp_all_reduce"), 0);
    // Each all-reduce becomes an all-gather on one side and a reduce-scatter on the other: per
    // layer two of each forward and two of each backward (the same bytes as four all-reduces).
    assert_eq!(count(&sp, "tp_all_gather"), 4 * layers + 1);
    assert_eq!(count(&sp, "tp_reduce_scatter"), 4 * layers + 2);
    // Full recomputation runs each layer's forward collectives again.
    let full = run(8, false, "full");
    assert_eq!(count(&full, "tp_all_reduce"), 6 * layers + 2);
    // Without tensor parallelism there is neither the lane nor its collectives.
    let none = run(1, false, "none");
    assert_eq!(none.graph.lanes.len(), 2);
    assert_eq!(training_of(&none).communication_s.tensor_parallel, 0.0);
}

#[test]
fn tensor_parallel_communication_blocks_compute() {
    let out = run(8, false, "none");
    let r = training_of(&out);
    let tp_comm = r.communication_s.tensor_parallel;
    let exposed = r.breakdown_s.exposed_communication;
    assert!(tp_comm > 0.0);
    // Every tensor-parallel collective waits for the compute before it and holds up the next.
    assert!(
        exposed >= tp_comm * 0.999,
        "exposed {exposed} < tp {tp_comm}"
    );
}

/// `tp_dgrad_overlap` moves each column-split GEMM's backward collective beside its
/// weight-gradient GEMM: the step gets faster, but not as fast as overlapping every
/// tensor-parallel collective, and the forward is unchanged.
#[test]
fn input_gradient_collectives_overlap_the_weight_gradient() {
    let step = |overlap: &str| {
        let text = common::h100_training(
            8,
            r#"preset = "gpt3-1.3b""#,
            &format!("tp = 8\nmicro_batch = 2\nglobal_batch = 2\n{overlap}"),
        );
        let out = common::run("tp.toml", &text, &[]);
        // All-reduces that start with a weight-gradient GEMM of a column-split layer.
        let starts = |name: &str| {
            out.graph
                .ops
                .iter()
                .enumerate()
                .filter(|(_, op)| op.name == name)
                .map(|(i, _)| out.timeline.start[i])
                .collect::<Vec<_>>()
        };
        let wgrads = [starts("qkv_proj_wgrad"), starts("mlp_up_wgrad")].concat();
        let beside = starts("tp_all_reduce")
            .iter()
            .filter(|t| wgrads.contains(t))
            .count();
        (
            training_of(&out).iteration_time_s,
            count(&out, "tp_all_reduce"),
            beside,
        )
    };
    let ((blocking, n, beside_blocking), (dgrad, n_dgrad, beside), (all, _, _)) = (
        step(""),
        step("tp_dgrad_overlap = true"),
        step("tp_comm_overlap = true"),
    );
    // Every collective still runs (two a layer each way); only where they start moves: with the
    // overlap each backward all-reduce of a column-split GEMM's input gradient starts with that
    // GEMM's weight gradient (two a layer), without it none does.
    assert!(n >= 2 * 2 * 24);
    assert_eq!(n, n_dgrad);
    assert_eq!(beside, 2 * 24);
    assert_eq!(beside_blocking, 0);
    assert!(dgrad < blocking, "{dgrad} vs {blocking}");
    assert!(all < dgrad, "{all} vs {dgrad}");
}

/// A blocking tensor-parallel collective between kernels of one layer runs inside their chain
/// (one operation with the stage's other work, docs/TRAINING.md#the-step-graph): the step and
/// every lane's busy time, and its communication time, are those of the same graph with every
/// kernel and collective an operation of its own, run again: the collective is never slowed by
/// the ones beside it. (How a slowed chain's stretch falls on its kernels is shared out, so the
/// busy time by kind of kernel is not compared.)
#[test]
fn collectives_inside_chains_run_as_they_would_alone() {
    use clustersim::exec::{OpKind, execute};
    for file in [
        "llama-3-70b-64xh100.toml",
        "megatron-7.5b-128xa100-tp4.toml",
    ] {
        let path = common::root().join("scenarios/training").join(file);
        let scenario = clustersim::Scenario::load(&path, &[]).unwrap();
        let out = clustersim::run(&scenario).unwrap();
        let (alone, _) = out.graph.expand(&out.timeline);
        let (t, _) = execute(&alone);
        let (a, b) = (out.timeline.makespan(), t.makespan());
        assert!(
            (a.as_secs_f64() / b.as_secs_f64() - 1.0).abs() < 1e-9,
            "{file}: {a} vs {b}"
        );
        let carried = out
            .graph
            .lanes
            .iter()
            .filter(|l| l.carried.is_some())
            .count();
        assert!(carried > 0, "{file}: no lane carries collectives");
        for lane in 0..out.graph.lanes.len() as u32 {
            for kind in [None, Some(OpKind::Communication)] {
                let x = out.timeline.busy(&out.graph, lane, kind).as_secs_f64();
                let y = t.busy(&alone, lane, kind).as_secs_f64();
                assert!(
                    (x - y).abs() <= 1e-9 * y.max(1e-3),
                    "{file}: lane {lane} {kind:?}: {x} s vs {y} s"
                );
            }
        }
        let ops = |g: &clustersim::exec::Graph| g.len();
        assert!(
            2 * ops(&out.graph) < ops(&alone),
            "{file}: {} operations, {} one by one",
            ops(&out.graph),
            ops(&alone)
        );
    }
}
