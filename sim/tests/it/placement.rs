//! Serving on a fleet placed layer by layer (Helix): the max-flow placement against the SWARM
//! and separate-pipelines baselines, the report, and the errors.

use crate::common;

use clustersim::report::serving::ServingReport;
use clustersim::report::typed::TypedReport;
use common::number as num;
use common::section;
use serde_json::Value;

fn simulate(text: String) -> Result<Value, String> {
    common::outcome("placed.toml", &text)
}

/// [`uneven`]'s report, typed.
fn placed(placement: &str) -> ServingReport {
    ServingReport::of_run(&uneven(placement, "").unwrap())
}

/// A placed fleet's `placement` section.
fn placement(r: &ServingReport) -> &Value {
    section(&r.placement, "placement")
}

/// Llama 2 70B in fp16 on 2 A100-40GB, 4 L4 and 6 T4 servers joined by 10 Gb/s Ethernet, 300
/// requests at once; `extra` goes into `[serving]`.
fn uneven(placement: &str, extra: &str) -> Result<Value, String> {
    simulate(format!(
        r#"
kind = "serving"
[model]
preset = "llama-2-70b"
dtype = "fp16"
[cluster.inter_node]
nic_bandwidth = "10 Gb/s"
[serving]
placement = "{placement}"
scheduler = "sarathi"
max_batch_tokens = 2048
{extra}
[[serving.group]]
gpu = "A100-40GB"
replicas = 2
[[serving.group]]
gpu = "L4"
replicas = 4
[[serving.group]]
gpu = "T4"
replicas = 6
[workload]
requests = 300
arrival = "offline"
prompt_tokens = {{ dist = "lognormal", mean = 700, sigma = 0.6, max = 4000 }}
output_tokens = {{ dist = "lognormal", mean = 200, sigma = 0.7, max = 1000 }}
"#
    ))
}

#[test]
fn max_flow_placement_outserves_both_baselines_on_an_uneven_fleet() {
    let best = placed("max-flow");
    let swarm = placed("swarm");
    let pipelines = placed("separate-pipelines");
    let tput = |r: &ServingReport| r.throughput.output_tokens_per_s;
    for r in [&best, &swarm] {
        assert_eq!(r.requests_completed, 300, "{}", placement(r));
        assert_eq!(placement(r)["refused_requests"], 0);
    }
    // No GPU type has the memory for a whole pipeline of its own: separate pipelines serve
    // nothing, and say so.
    assert_eq!(pipelines.requests_completed, 0);
    assert!(!pipelines.memory.fits);
    assert_eq!(placement(&pipelines)["max_flow_tokens_per_s"], 0.0);
    // The search's flow is at least either baseline's, and so is the simulated throughput.
    let flows = &placement(&best)["compared_tokens_per_s"];
    let flow = |m: &str| flows[m].as_f64().unwrap();
    assert!(flow("max-flow") >= flow("swarm") && flow("max-flow") >= flow("separate-pipelines"));
    assert!(
        tput(&best) > 1.2 * tput(&swarm),
        "max-flow {} swarm {}",
        tput(&best),
        tput(&swarm)
    );
    // Every placed server holds what its memory allows and carries no more than its capacity;
    // the ranges chain from layer 0 to layer 80.
    let groups = &best.cluster.groups;
    let servers = placement(&best)["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 12);
    let (mut first, mut last) = (false, false);
    for s in servers {
        let Some(r) = s["layers"].as_array() else {
            continue;
        };
        let (a, b) = (r[0].as_u64().unwrap(), r[1].as_u64().unwrap());
        assert!(a < b && b <= 80);
        let group = &groups[s["group"].as_u64().unwrap() as usize];
        assert!(b - a <= group["max_layers_per_server"].as_u64().unwrap());
        // Flows are whole milli-tokens a second.
        assert!(num(s, "flow_tokens_per_s") <= num(s, "capacity_tokens_per_s") + 1e-2);
        first |= a == 0;
        last |= b == 80;
    }
    assert!(first && last);
    // Small GPUs hold few layers: a T4's 16 GB less than an A100's 40 GB.
    assert!(
        groups[2]["max_layers_per_server"].as_u64() < groups[0]["max_layers_per_server"].as_u64()
    );
    assert_eq!(best.cluster.gpu, "mixed");
    assert_eq!(best.kv_cache.preemptions, 0);
}

#[test]
fn a_placed_run_is_deterministic() {
    let strip = |mut r: Value| {
        r["sim"]["wall_s"] = Value::Null;
        r
    };
    let a = strip(uneven("max-flow", "").unwrap());
    let b = strip(uneven("max-flow", "").unwrap());
    assert_eq!(a, b);
}

#[test]
fn placement_errors_name_the_key() {
    let e = uneven("max-flow", "router = \"round-robin\"").unwrap_err();
    assert!(e.contains("router") && e.contains("placed fleet"), "{e}");
    let e = uneven("max-flow", "preemption = \"swap\"").unwrap_err();
    assert!(e.contains("never preempts"), "{e}");
    let e = uneven("fastest", "").unwrap_err();
    assert!(e.contains("max-flow"), "{e}");
    let e = simulate(
        r#"
kind = "serving"
[cluster]
gpu = "H100"
[model]
preset = "llama-3.1-8b"
[serving]
placement = "max-flow"
[workload]
requests = 10
arrival = "offline"
prompt_tokens = 100
output_tokens = 10
"#
        .into(),
    )
    .unwrap_err();
    assert!(e.contains("[[serving.group]]"), "{e}");
}
