//! `kind = "collective"`: one collective priced on a cluster (`scenario/lower/collective.rs` reads
//! the scenario), the file-based twin
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

use crate::collective::compression::Compression;
use crate::collective::cost::{Collective, CollectiveCost, Options, cost};
use crate::collective::{Algorithm, CollectiveOp, Group};
use crate::engine::SimTime;
use crate::exec::{Graph, Op, OpKind};
use crate::key_error::KeyError;
use crate::report::collective::{Cluster, CollectiveReport, Fidelity, Priced};
use crate::report::typed::{Sim, TypedReport};
use crate::workload::cluster::ClusterSetup;
use serde_json::Value;
use std::borrow::Cow;

fn priced(c: &CollectiveCost) -> Priced {
    Priced {
        time_s: c.seconds,
        algbw_gbps: c.algbw / 1e9,
        busbw_gbps: c.busbw / 1e9,
        algorithm: c.algorithm.name().into(),
        protocol: c.protocol.name().into(),
    }
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
            chain: None,
        },
        &[],
    );
}

/// One collective on a cluster, fully specified.
#[derive(Clone, Debug)]
pub struct CollectiveConfig {
    /// The scenario's name, for the report.
    pub scenario: String,
    pub cluster: ClusterSetup,
    pub op: CollectiveOp,
    pub algorithm: Algorithm,
    /// Ranks taking part: the first `ranks` GPUs, 2 up to the cluster's.
    pub ranks: u32,
    /// Bytes of the operation (above zero).
    pub bytes: u64,
    pub compression: Option<Compression>,
    pub assumptions: Vec<String>,
}

/// Prices the collective: the report, and a graph of it (with the uncompressed collective on a
/// lane of its own when compressed) for the trace. An algorithm the group cannot run is refused
/// at `collective.algorithm`.
pub fn simulate(c: &CollectiveConfig) -> Result<(Value, Graph), KeyError> {
    let setup = &c.cluster;
    let (op, ranks, compression) = (c.op, c.ranks, c.compression);
    let gpus = setup.nodes * setup.gpus_per_node;
    let mut options = Options::new(setup.tier);
    options.nvls_available = setup.in_switch_reduction;
    options.record_links = true;
    let price = |compression| {
        let one = Collective {
            op,
            algorithm: c.algorithm,
            group: Group::first(ranks, setup.gpus_per_node),
            bytes: c.bytes as f64,
            compression,
        };
        cost(&setup.topology, &one, &options)
            .map_err(|e| KeyError::new("collective.algorithm", e.to_string()))
    };
    let priced_cost = price(compression)?;
    let p = priced(&priced_cost);
    let mut report = CollectiveReport {
        kind: "collective".into(),
        scenario: c.scenario.clone(),
        op: op.name().into(),
        size_bytes: c.bytes,
        ranks,
        time_s: p.time_s,
        algbw_gbps: p.algbw_gbps,
        busbw_gbps: p.busbw_gbps,
        algorithm: p.algorithm,
        protocol: p.protocol,
        cluster: Cluster {
            gpu: setup.gpu.name.to_string(),
            gpus,
            nodes: setup.nodes,
            gpus_per_node: setup.gpus_per_node,
        },
        fidelity: Fidelity {
            network: setup.tier.name().into(),
            topology: setup.topology.name.to_string(),
            symmetry: "identical steps of an algorithm priced once".into(),
        },
        assumptions: c.assumptions.clone(),
        sim: Sim::events(0),
        links: crate::report::links::links(
            &setup.topology,
            &priced_cost.link_bytes,
            priced_cost.seconds,
        ),
        uncompressed: None,
        speedup: None,
        compression: None,
        uncertainty: None,
        cost: None,
    };
    let mut graph = Graph::new();
    let bytes = c.bytes as f64;
    traced(&mut graph, "collective", op, &priced_cost, bytes);
    if let Some(z) = compression {
        let raw = price(None)?;
        traced(&mut graph, "uncompressed (for comparison)", op, &raw, bytes);
        report.uncompressed = Some(priced(&raw));
        report.speedup = Some(raw.seconds / priced_cost.seconds);
        report.compression = Some(crate::workload::compression::report(&z));
    }
    Ok((report.to_value(), graph))
}
