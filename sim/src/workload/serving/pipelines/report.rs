//! The report of a placed fleet's run: each request's latency, each server's layers, flow and
//! memory, each group's share, and the placement methods compared.

use super::super::config::{Placed as PlacedFleet, ServingConfig};
use super::super::placement::{Flow, Method, Placement, Problem};
use super::super::{FleetSections, Lives, ServingRun, serving_report, trace};
use super::{Placed, ServerGroup};
use crate::report::serving::{Cluster, Fidelity, KvCache, Memory, ServingReport};
use crate::report::typed::TypedReport;
use serde_json::{Value, json};

/// What a placed fleet's run started from: the scenario, the fleet, the placement problem, every
/// method's placement with its max-flow (tokens per second), and the chosen placement's flow.
pub(super) struct Outcome<'a> {
    pub(super) c: &'a ServingConfig,
    pub(super) p: &'a PlacedFleet,
    pub(super) problem: &'a Problem,
    pub(super) placements: &'a [(Method, Placement, f64)],
    pub(super) flow: &'a Flow,
    /// Whether every placed server holds a KV block and the placement carries any flow.
    pub(super) fits: bool,
}

/// The run's report, with the trace of its iterations.
pub(super) fn report(o: &Outcome, placed: Placed, events: u64) -> ServingRun {
    let (c, p, groups) = (o.c, o.p, &o.p.groups);
    let tier = c.tier;
    let servers = groups.iter().map(|g| g.servers).sum::<u32>();
    let max_flow = o.flow.tokens_per_s;
    let outputs: Vec<u32> = placed
        .requests
        .iter()
        .map(|r| r.output_tokens.max(1))
        .collect();
    let lives = Lives {
        requests: &placed.requests,
        outputs: &outputs,
        admitted: &placed.admitted,
        first_token: &placed.first_token,
        finished: &placed.finished,
    };
    let (done, latency) = lives.report(&c.slo);
    let block_tokens = c.memory.block_tokens;
    let gpu_names: Vec<&str> = groups.iter().map(|g| &*g.gpu.name).collect();
    let (server_rows, served) = server_rows(o, &placed, &gpu_names);
    let group_rows = group_rows(groups, o.problem, &served);
    let peak_kv = placed
        .servers
        .iter()
        .filter(|sv| sv.placed())
        .map(|sv| sv.peak_blocks_used as f64 / sv.kind.blocks.max(1) as f64)
        .fold(0.0, f64::max);
    let compared: serde_json::Map<String, Value> = o
        .placements
        .iter()
        .map(|(m, _, v)| (m.name().to_string(), json!(v)))
        .collect();
    let single = (groups.len() == 1).then(|| &*groups[0].gpu.name);
    let (graph, timeline) =
        trace::build(&trace::of_placed(&placed, &gpu_names, &lives, &done), tier);
    let sections = FleetSections {
        kv_cache: KvCache {
            blocks_per_replica: None,
            block_tokens,
            peak_use: peak_kv,
            preemptions: 0,
            preemption: "none (whole length reserved at admission)".into(),
            swapped_bytes: 0.0,
        },
        memory: Memory {
            weights_bytes_per_gpu: None,
            weights_offload_bytes_per_gpu: 0.0,
            kv_bytes_per_gpu: None,
            capacity_bytes: None,
            fits: o.fits,
        },
        cluster: Cluster {
            gpu: single.unwrap_or("mixed").into(),
            gpus: groups.iter().map(|g| g.servers * g.tp).sum::<u32>(),
            nodes: servers,
            replicas: servers,
            tp: None,
            pp: None,
            groups: group_rows,
            profile: None,
        },
        fidelity: Fidelity {
            compute: "roofline".into(),
            network: tier.name().into(),
            symmetry: "none: every server and request simulated".into(),
        },
    };
    let report = ServingReport {
        placement: Some(json!({
            "method": p.method.name(),
            "max_flow_tokens_per_s": max_flow,
            "compared_tokens_per_s": compared,
            "servers_used": placed.servers.iter().filter(|sv| sv.placed()).count(),
            "servers": server_rows,
            "refused_requests": placed.refused,
        })),
        ..serving_report(c, latency, sections, events, placed.iterations.len())
    };
    ServingRun {
        report: report.to_value(),
        graph,
        timeline,
    }
}

/// One row a server: its layers, capacity and flow (tokens per second), requests and memory
/// (bytes a GPU); and the requests each group's servers served.
fn server_rows(o: &Outcome, placed: &Placed, gpu_names: &[&str]) -> (Vec<Value>, Vec<u64>) {
    let block_tokens = o.c.memory.block_tokens;
    let mut served = vec![0u64; o.p.groups.len()];
    let rows = placed
        .servers
        .iter()
        .enumerate()
        .map(|(i, sv)| {
            served[sv.group] += sv.requests;
            let through = o.flow.next[i].iter().fold(0.0, |a, e| a + e.1);
            json!({
                "group": sv.group,
                "gpu": gpu_names[sv.group],
                "layers": sv.placed().then(|| vec![sv.range.0, sv.range.1]),
                "capacity_tokens_per_s": sv.placed().then(|| o.problem.speed[i][(sv.range.1 - sv.range.0 - 1) as usize]),
                "flow_tokens_per_s": through,
                "requests": sv.requests,
                "kv_blocks": if sv.placed() { sv.kind.blocks } else { 0 },
                "weights_bytes_per_gpu": if sv.placed() { sv.kind.weights_per_gpu.round() } else { 0.0 },
                "kv_bytes_per_gpu": if sv.placed() {
                    (sv.kind.blocks as f64 * block_tokens as f64 * sv.kind.kv_per_token).round()
                } else {
                    0.0
                },
            })
        })
        .collect();
    (rows, served)
}

/// One row a group of servers: its GPUs, the most layers one of its servers can hold, and the
/// requests it served.
fn group_rows(groups: &[ServerGroup], problem: &Problem, served: &[u64]) -> Vec<Value> {
    groups
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            json!({
                "gpu": g.gpu.name,
                "replicas": g.servers,
                "tp": g.tp,
                "pp": null,
                "max_layers_per_server": problem.speed[problem.group.iter().position(|&x| x == gi).expect("a server per group")].len(),
                "capacity_bytes": g.gpu.memory_bytes,
                "requests_routed": served[gi],
            })
        })
        .collect()
}
