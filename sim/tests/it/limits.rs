//! Sizes beyond what the simulator builds, and inputs at the edge of sense, are refused with the
//! limit named at the key that exceeds it: never a crash, never a run that exhausts the memory.

use crate::common;

use clustersim::Scenario;

/// The error of the shipped scenario `file` with `--set` overrides; panics if it runs.
fn refusal(file: &str, sets: &[&str]) -> String {
    let path = common::root().join("scenarios").join(file);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let result = Scenario::load(&path, &sets).and_then(|s| clustersim::run(&s).map(|_| ()));
    match result {
        Err(e) => e.to_string(),
        Ok(()) => panic!("{file} with {sets:?} ran"),
    }
}

#[test]
fn clusters_beyond_a_quarter_million_gpus_or_nics_are_refused() {
    let e = refusal(
        "training/llama-3-70b-64xh100.toml",
        &["cluster.nodes=99999999"],
    );
    assert!(
        e.contains("799999992 GPUs") && e.contains("at most 262144"),
        "{e}"
    );
    let e = refusal(
        "training/gpt3-1.3b-8xh100.toml",
        &["cluster.gpus_per_node=2000"],
    );
    assert!(
        e.contains("2000 GPUs in a node") && e.contains("at most 1024"),
        "{e}"
    );
    let e = refusal(
        "papers/clapping-llama-2-7b-pp4-1gbps-uncompressed.toml",
        &["cluster.inter_node.nics_per_node=99999999"],
    );
    assert!(e.contains("over at most 8 NICs"), "{e}");
    let e = refusal(
        "papers/clapping-llama-2-7b-pp4-1gbps-uncompressed.toml",
        &[
            "cluster.nodes=200000",
            "cluster.gpus_per_node=1",
            "cluster.inter_node.nics_per_node=8",
        ],
    );
    assert!(
        e.contains("1600000 NICs") && e.contains("at most 262144"),
        "{e}"
    );
    // A serving fleet's servers are nodes too.
    let e = refusal(
        "serving/llama-3-70b-disaggregated-2p6d.toml",
        &["cluster.nodes=99999999"],
    );
    assert!(e.contains("at most 262144"), "{e}");
}

#[test]
fn a_video_smaller_than_a_token_or_with_absurd_steps_is_refused() {
    let file = "diffusion/wan2.1-14b-720p-8xh100-cfg-ulysses.toml";
    let e = refusal(file, &["diffusion.height=3"]);
    assert!(
        e.contains("less than one token") && e.contains("at least 16 pixels"),
        "{e}"
    );
    let e = refusal(file, &["diffusion.width=15"]);
    assert!(e.contains("width of 15 pixels"), "{e}");
    let e = refusal(file, &["diffusion.steps=99999999"]);
    assert!(e.contains("at most 10000"), "{e}");
    // PipeFusion's patches are rows of the latent's tokens: 30 at 720 x 480 on CogVideoX.
    let e = refusal(
        "diffusion/cogvideox-5b-8xh100-pipefusion-cfg.toml",
        &["parallel.pipefusion_patches=31"],
    );
    assert!(
        e.contains("30 rows of tokens") && e.contains("1 to 30"),
        "{e}"
    );
}

#[test]
fn a_step_of_more_micro_batches_than_are_simulated_is_refused() {
    let e = refusal(
        "papers/memory-efficient-optimizers-llama-2-7b-1xa100-adam.toml",
        &["parallel.global_batch=99999999"],
    );
    assert!(
        e.contains("99999999 micro-batches") && e.contains("at most 16384"),
        "{e}"
    );
    assert!(e.contains("raise micro_batch"), "{e}");
    // Packed sequences: the tokens over the cap are at least that many micro-batches.
    let e = refusal(
        "papers/infinipipe-llama-2-7b-128k-8xa100-elastic.toml",
        &["sequences.micro_batch_tokens=3"],
    );
    assert!(
        e.contains("at most 16384") && e.contains("raise micro_batch_tokens"),
        "{e}"
    );
}

#[test]
fn a_step_of_more_layer_passes_than_are_simulated_is_refused() {
    let e = refusal(
        "papers/power-thermal-llama-3-70b-64xh100-mb2-no-recompute.toml",
        &["parallel.global_batch=64000"],
    );
    assert!(
        e.contains("1280000 layer passes") && e.contains("262144"),
        "{e}"
    );
}

#[test]
fn too_many_children_for_the_trace_are_refused() {
    let e = refusal(
        "papers/dp-consolidation-16k-children-v100-grid.toml",
        &["kernels.children=99999999"],
    );
    assert!(e.contains("at most 4194304"), "{e}");
}

#[test]
fn a_federated_round_that_cannot_close_within_simulated_time_is_an_error() {
    // No deadline and no quorum: the round waits for its slowest device, and a spread this wide
    // draws devices whose upload would take longer than simulated time spans.
    let file = "papers/private-fl-nnlm-100k-vocab-peu-lora.toml";
    let path = common::root().join("scenarios").join(file);
    let text = std::fs::read_to_string(&path).expect("the shipped scenario");
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("deadline") && !l.starts_with("quorum"))
        .collect::<Vec<_>>()
        .join("\n");
    let sets = ["federated.uplink_sigma=6"];
    let s = common::scenario("fl.toml", &text, &sets);
    let e = clustersim::run(&s)
        .err()
        .expect("a round that cannot close");
    let e = e.to_string();
    assert!(e.contains("cannot close within the 213 days"), "{e}");
    assert!(e.contains("set a round deadline"), "{e}");
    // With the shipped deadline the same devices are stragglers of rounds that close.
    let r: clustersim::report::federated::FederatedReport = common::typed_paper(
        "private-fl-nnlm-100k-vocab-peu-lora.toml",
        &["federated.uplink_sigma=6"],
    );
    assert!(r.rounds > 0);
    // A population larger than a run draws, and more device-rounds than it simulates, are
    // refused at their keys, the limits named.
    let e = refusal(file, &["federated.population=1000000000"]);
    assert!(
        e.contains("1000000000 devices") && e.contains("16777216"),
        "{e}"
    );
    let e = refusal(file, &["federated.rounds=40000"]);
    assert!(
        e.contains("40000 rounds of a cohort of 1300") && e.contains("4194304"),
        "{e}"
    );
    // A pause between rounds that carries the next round past the end: the round it would be,
    // and when it would start.
    let e = refusal(file, &["federated.server_time=4800 h"]);
    assert!(
        e.contains("round 3 (starting at day 400.0) cannot close"),
        "{e}"
    );
}

#[test]
fn serving_beyond_a_million_requests_or_placing_over_too_many_servers_is_refused() {
    let e = refusal(
        "serving/llama-3.1-8b-1xh100-offline.toml",
        &["workload.requests=4294967295"],
    );
    assert!(e.contains("at most 1000000"), "{e}");
    // The first of the Helix fleet's groups grown by 41, one server past the limit (--set does not
    // index arrays).
    let path = common::root().join("scenarios/papers/helix-llama-2-70b-3-regions-max-flow.toml");
    let text = std::fs::read_to_string(path).expect("the shipped scenario");
    let text = text.replacen("replicas = 4", "replicas = 45", 1);
    let e = common::outcome("helix.toml", &text).expect_err("too many servers");
    assert!(
        e.contains("65 servers to place") && e.contains("at most 64"),
        "{e}"
    );
    // A group of a mixed fleet: replicas times their GPUs, and a sum that would pass 2^32.
    let path = common::root().join("scenarios/serving/llama-3.1-8b-mixed-h100-a100-l40s.toml");
    let text = std::fs::read_to_string(path).expect("the shipped scenario");
    let text = text.replacen("replicas = 2", "replicas = 4294967295", 1);
    let e = common::outcome("mixed.toml", &text).expect_err("too many GPUs");
    assert!(e.contains("a fleet holds at most 262144 GPUs"), "{e}");
}

/// A fleet that would run more iterations than a run simulates stops there, refused at
/// `requests` with the limit named. Reaching the limit takes about 5 s in a release build.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "a minute in a debug build: run with --release"
)]
fn a_fleet_stops_at_the_iterations_a_run_simulates() {
    let e = refusal(
        "serving/llama-3-70b-disaggregated-2p6d.toml",
        &["workload.requests=1000000"],
    );
    assert!(
        e.contains("as many iterations as a run simulates (4194304"),
        "{e}"
    );
    assert!(e.contains("workload.requests"), "{e}");
}

#[test]
fn a_checkpoint_that_takes_no_time_is_refused() {
    // Daly's interval would be zero: a checkpoint every instant.
    let e = refusal(
        "training/gpt3-175b-1024xa100-300b-tokens.toml",
        &["reliability.checkpoint_write=0 s"],
    );
    assert!(
        e.contains("checkpoint_write") && e.contains("longer than zero"),
        "{e}"
    );
}

#[test]
fn models_beyond_the_largest_shapes_are_refused() {
    let e = refusal(
        "papers/spectrain-gpt-350m-4xv100s-pcie-async.toml",
        &["model.layers=4294967295"],
    );
    assert!(
        e.contains("`model.layers` = 4294967295 is more than 4096"),
        "{e}"
    );
}

#[test]
fn work_past_the_end_of_simulated_time_is_an_error() {
    // A million frames of 720p video: each step's attention alone outlasts 213 days.
    let e = refusal(
        "diffusion/hunyuanvideo-720p-8xh100-ulysses.toml",
        &["diffusion.frames=1000000"],
    );
    assert!(e.contains("takes longer than the 213 days"), "{e}");
    // GPT-3 175B on one A100 at 16M tokens a sequence: a step of quadratic attention.
    let e = refusal(
        "training/gpt3-175b-1024xa100-ptdp.toml",
        &[
            "cluster.nodes=1",
            "cluster.gpus_per_node=1",
            "parallel.tp=1",
            "parallel.pp=1",
            "parallel.dp=1",
            "parallel.global_batch=4",
            "model.seq_len=16777216",
        ],
    );
    assert!(e.contains("a step takes longer than the 213 days"), "{e}");
}
