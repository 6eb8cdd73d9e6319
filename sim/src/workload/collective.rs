//! `kind = "collective"`: one collective priced on the scenario's cluster, the file-based twin
//! of `clustersim collective`, so that collective what-ifs (an algorithm, a network, compression)
//! can live in scenario files with `[expect]`.
//!
//! The report has the contract's collective keys (`time_s`, `algbw_GBps`, `busbw_GBps`, with
//! nccl-tests' definitions) and, when `[collective.compression]` is given, the same collective
//! priced without it (`uncompressed.*`) and the speed-up. `links` lists every directed link the
//! collective used: its ends (device names), kind, the bytes it carried on the wire over the whole
//! collective (`collective::cost`'s `link_bytes`), and `busy`, those bytes over the link's line
//! rate times the collective's time (its average utilisation; NCCL's protocol overheads are in
//! the bytes, the tier's efficiency is not in the rate). Deliberately ignored: everything but
//! the collective (no compute, no other traffic), and the accuracy cost of lossy compression.

use crate::collective::cost::{Collective, CollectiveCost, Options, cost};
use crate::collective::{Algorithm, CollectiveOp, Group};
use crate::engine::SimTime;
use crate::exec::{Graph, Op, OpKind};
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use serde_json::{Value, json};
use std::borrow::Cow;

fn row(c: &CollectiveCost) -> Value {
    json!({
        "time_s": c.seconds,
        "algbw_GBps": c.algbw / 1e9,
        "busbw_GBps": c.busbw / 1e9,
        "algorithm": c.algorithm.name(),
        "protocol": c.protocol.name(),
    })
}

/// A lane of rank 0 holding one operation: the collective as priced, for the trace.
fn traced(graph: &mut Graph, lane: &str, op: CollectiveOp, c: &CollectiveCost, bytes: f64) {
    let lane = graph.add_lane(lane, "GPU 0");
    graph.add(
        Op {
            name: Cow::Owned(format!(
                "{} ({}, {})",
                op.name(),
                c.algorithm.name(),
                c.protocol.name()
            )),
            lane,
            kind: OpKind::Communication,
            duration: SimTime::from_secs_f64(c.seconds),
            flops: 0.0,
            bytes,
            tier: c.tier.name(),
            layer: None,
            micro_batch: None,
            model_flops: false,
        },
        &[],
    );
}

/// Prices the scenario's collective: the report, and a graph of it (with the uncompressed
/// collective on a lane of its own when compressed) for the trace.
pub fn simulate(s: &Scenario) -> Result<(Value, Graph), ScenarioError> {
    let mut assumptions = Vec::new();
    let section = s.file.collective.as_ref().ok_or_else(|| {
        s.error_at(
            "collective",
            "a collective scenario needs a [collective] table",
        )
        .with_help("add [collective] with op = \"all-reduce\" and size = \"1 GiB\"")
    })?;
    let setup = cluster::resolve(
        s,
        &mut assumptions,
        Needs {
            sizes: true,
            inter_node: true,
        },
    )?;
    let op = CollectiveOp::parse(&section.op).ok_or_else(|| {
        let valid: Vec<&str> = CollectiveOp::ALL.iter().map(|o| o.name()).collect();
        s.error_at(
            "collective.op",
            format!("unknown operation \"{}\"", section.op),
        )
        .with_help(format!("valid operations: {}", valid.join(", ")))
    })?;
    let algorithm = match &section.algorithm {
        None => Algorithm::Auto,
        Some(a) => Algorithm::parse(a).ok_or_else(|| {
            s.error_at("collective.algorithm", format!("unknown algorithm \"{a}\""))
                .with_help("ring, tree, halving-doubling, hierarchical, nvls, direct or auto")
        })?,
    };
    let gpus = setup.nodes * setup.gpus_per_node;
    let ranks = section.ranks.unwrap_or(gpus);
    if ranks < 2 || ranks > gpus {
        return Err(s.error_at(
            "collective.ranks",
            format!("ranks = {ranks}: a collective needs 2 to the cluster's {gpus} GPUs"),
        ));
    }
    if section.size.0 == 0 {
        return Err(s.error_at("collective.size", "a collective of 0 bytes moves nothing"));
    }
    let compression = crate::scenario::lower::compression::resolve(
        s,
        section.compression.as_ref(),
        "collective.compression",
        "the payload",
        false,
        &mut assumptions,
    )?;
    let mut options = Options::new(setup.tier);
    options.nvls_available = setup.in_switch_reduction;
    options.record_links = true;
    let price = |compression| {
        let c = Collective {
            op,
            algorithm,
            group: Group::first(ranks, setup.gpus_per_node),
            bytes: section.size.0 as f64,
            compression,
        };
        cost(&setup.topology, &c, &options).map_err(|e| s.error_at("collective.algorithm", e))
    };
    let priced = price(compression)?;
    let mut report = json!({
        "kind": "collective",
        "scenario": s.name(),
        "op": op.name(),
        "size_bytes": section.size.0,
        "ranks": ranks,
        "cluster": {
            "gpu": setup.gpu.name,
            "gpus": gpus,
            "nodes": setup.nodes,
            "gpus_per_node": setup.gpus_per_node,
        },
        "fidelity": {
            "network": setup.tier.name(),
            "topology": setup.topology.name,
            "symmetry": "identical steps of an algorithm priced once",
        },
        "assumptions": assumptions,
        "sim": { "events": 0 },
    });
    if let (Some(r), Value::Object(extra)) = (report.as_object_mut(), row(&priced)) {
        r.extend(extra);
    }
    report["links"] =
        crate::report::links::links(&setup.topology, &priced.link_bytes, priced.seconds);
    let mut graph = Graph::new();
    let bytes = section.size.0 as f64;
    traced(&mut graph, "collective", op, &priced, bytes);
    if let Some(z) = compression {
        let raw = price(None)?;
        traced(&mut graph, "uncompressed (for comparison)", op, &raw, bytes);
        report["uncompressed"] = row(&raw);
        report["speedup"] = json!(raw.seconds / priced.seconds);
        report["compression"] = crate::workload::compression::report(&z);
    }
    Ok((report, graph))
}
