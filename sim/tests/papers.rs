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
