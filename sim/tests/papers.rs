//! The paper gallery's effects (docs/PAPERS.md): each replay's variants run side by side and the
//! effect the paper reports must come out of the model, not out of the scenario's numbers.

mod common;

use common::number;
use serde_json::Value;

fn run(file: &str, sets: &[&str]) -> Value {
    let path = common::root().join("scenarios/papers").join(file);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = clustersim::Scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
    clustersim::run(&scenario)
        .unwrap_or_else(|e| panic!("{e}"))
        .report
}

/// Helix: max-flow placement against SWARM and separate pipelines on the same mixed fleet.
#[test]
fn helix_max_flow_outserves_both_baselines() {
    let file = "helix-llama-2-70b-24-nodes-max-flow.toml";
    let placed = |method: &str| run(file, &[&format!("serving.placement={method}")]);
    let (best, swarm, pipelines) = (
        placed("max-flow"),
        placed("swarm"),
        placed("separate-pipelines"),
    );
    let tput = |r: &Value| number(r, "throughput.output_tokens_per_s");
    let baseline = tput(&swarm).max(tput(&pipelines));
    assert!(
        tput(&best) > 1.4 * baseline,
        "max-flow {} against the best baseline {baseline}",
        tput(&best)
    );
    // Requests wait less for their first token.
    for other in [&swarm, &pipelines] {
        assert!(number(&best, "ttft_s.p50") < number(other, "ttft_s.p50"));
    }
}

/// Latent Parallelism: splitting the latent instead of the model removes most communication.
#[test]
fn latent_parallelism_moves_a_small_fraction_of_tensor_parallel_bytes() {
    let latent = run("latent-parallelism-wan2.1-14b-4xh100-latent.toml", &[]);
    let tp = run("latent-parallelism-wan2.1-14b-4xh100-tp.toml", &[]);
    let bytes = |r: &Value| number(r, "communication_bytes_per_gpu");
    assert!(
        bytes(&latent) < 0.03 * bytes(&tp),
        "{} vs {}",
        bytes(&latent),
        bytes(&tp)
    );
    assert!(number(&latent, "latency_s") < number(&tp, "latency_s"));
}

/// FT-HSDP: at 98,304 GPUs replica-level fault tolerance keeps far more of the time training.
#[test]
fn ft_hsdp_keeps_training_through_failures() {
    let r = run("ft-hsdp-llama-3.1-405b-98304xh100.toml", &[]);
    let sync = number(&r, "reliability.synchronous_restart.goodput");
    let ft = number(&r, "reliability.fault_tolerant.goodput");
    assert!(
        ft > sync + 0.15,
        "fault-tolerant {ft} vs synchronous {sync}"
    );
    // Without the regrouping stall, fault tolerance would look better still.
    let no_stall = run(
        "ft-hsdp-llama-3.1-405b-98304xh100.toml",
        &["reliability.stall=\"0 s\""],
    );
    assert!(number(&no_stall, "reliability.fault_tolerant.goodput") > ft);
}

/// ZCCL: compression inside the collective pays on a slow network, much less on a fast one.
#[test]
fn zccl_compression_pays_where_bandwidth_is_short() {
    let slow = run("zccl-all-reduce-16x4xa100-slow.toml", &[]);
    let fast = run("zccl-all-reduce-16x4xa100-fast.toml", &[]);
    let speedup = |r: &Value| number(r, "speedup");
    assert!(
        speedup(&slow) > 2.0 * speedup(&fast),
        "{} vs {}",
        speedup(&slow),
        speedup(&fast)
    );
    // The other operations the paper compresses gain alike on the slow network.
    for op in ["all-gather", "broadcast"] {
        let r = run(
            "zccl-all-reduce-16x4xa100-slow.toml",
            &[&format!("collective.op={op}")],
        );
        assert!(speedup(&r) > 4.0, "{op}: {}", speedup(&r));
    }
}

/// DiLoCoX: local steps with a compressed, one-round-late outer sync against all-reduce every step.
#[test]
fn dilocox_leaves_the_slow_link_out_of_the_steps() {
    let sync = run("dilocox-101b-2-sites-1gbps-allreduce.toml", &[]);
    let local = run("dilocox-101b-2-sites-1gbps-dilocox.toml", &[]);
    let step = |r: &Value| number(r, "iteration_time_s");
    assert!(
        step(&sync) > 10.0 * step(&local),
        "{} vs {}",
        step(&sync),
        step(&local)
    );
    // The outer synchronisation, compressed, hides behind the round of local steps; without the
    // compression it would not.
    assert_eq!(
        number(&local, "local_sgd.outer_sync_exposed_per_step_s"),
        0.0
    );
    let raw = run(
        "dilocox-101b-2-sites-1gbps-dilocox.toml",
        &["compression.outer.ratio=1"],
    );
    assert!(number(&raw, "local_sgd.outer_sync_exposed_per_step_s") > 0.0);
}

/// Skipping attention sublayers: Llama 2 7B without the last 11 attention sublayers decodes a
/// token faster, by about the share of the weights they held.
#[test]
fn skipping_attention_sublayers_cuts_single_token_latency() {
    let full = run("skip-attention-llama-2-7b-1xa100-full.toml", &[]);
    let skip = run("skip-attention-llama-2-7b-1xa100-skip11.toml", &[]);
    let tpot = |r: &Value| number(r, "tpot_s.p50");
    let cut = 1.0 - tpot(&skip) / tpot(&full);
    let weights = |r: &Value| number(r, "memory.weights_bytes_per_gpu");
    let lighter = 1.0 - weights(&skip) / weights(&full);
    assert!(cut > 0.08 && cut < 0.3, "TPOT {cut:.3} lower");
    // A batch-1 decode reads the weights: the latency falls at least as much as they do.
    assert!(cut >= lighter, "TPOT {cut:.3} lower, weights {lighter:.3}");
}
