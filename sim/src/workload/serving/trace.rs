//! The trace of a serving run: one lane per replica (one per engine of a pipeline-parallel
//! replica) with its iterations (prefill, decode or mixed), one lane per decode replica with the KV caches arriving from a prefill pool, and each
//! completed request's prefill (admission to first token) and decode (first token to last) on
//! rows of a `requests` group, shared first-fit by requests that do not overlap.
//!
//! Deliberately ignored: the time a request waits before admission (the gap before its prefill
//! on its row) and per-kernel detail inside an iteration.

use super::Fleet;
use crate::engine::SimTime;
use crate::exec::{Graph, LaneId, Op, OpKind, Timeline};
use crate::net::tier::Tier;
use std::borrow::Cow;

/// One span on `lane` from `a` to `b`; `model_flops` marks a replica's iteration (the work the
/// model itself does), not a transfer or a request's life.
fn span(
    graph: &mut Graph,
    timeline: &mut Timeline,
    lane: LaneId,
    name: Cow<'static, str>,
    (kind, tier): (OpKind, &'static str),
    (a, b): (SimTime, SimTime),
    (bytes, micro_batch, model_flops): (f64, Option<u32>, bool),
) {
    graph.add(
        Op {
            name,
            lane,
            kind,
            duration: b - a,
            flops: 0.0,
            bytes,
            tier,
            layer: None,
            micro_batch,
            model_flops,
        },
        &[],
    );
    timeline.start.push(a);
    timeline.end.push(b);
}

/// The graph and timeline of `fleet`'s run; `done` are the completed requests.
pub(super) fn build(fleet: &Fleet, done: &[usize], tier: Tier) -> (Graph, Timeline) {
    let mut graph = Graph::new();
    let mut timeline = Timeline {
        start: Vec::new(),
        end: Vec::new(),
    };
    // Engines in order: replica j of a kind with pp stages runs engines j pp .. (j + 1) pp.
    let mixed_fleet = fleet.kinds.len() > 1;
    let mut lanes: Vec<LaneId> = Vec::with_capacity(fleet.replicas.len());
    let mut replica = 0;
    for kind in &fleet.kinds {
        for _ in 0..kind.replicas {
            let group = if mixed_fleet {
                format!("replica {replica} ({})", kind.gpu.name)
            } else {
                format!("replica {replica}")
            };
            for engine in 0..kind.pp {
                let name = if kind.pp > 1 {
                    format!("engine {engine}")
                } else {
                    "iterations".to_string()
                };
                lanes.push(graph.add_lane(name, group.clone()));
            }
            replica += 1;
        }
    }
    let first_decode = fleet.prefill_replicas;
    let transfer_lanes: Vec<LaneId> = match first_decode {
        Some(p) => (p..fleet.replicas.len())
            .map(|i| graph.add_lane("kv transfers", format!("KV into replica {i}")))
            .collect(),
        None => Vec::new(),
    };
    for &(i, a, b, prefill, decodes) in &fleet.iterations {
        let name = if prefill > 0 && decodes > 0 {
            "mixed"
        } else if prefill > 0 {
            "prefill"
        } else {
            "decode"
        };
        span(
            &mut graph,
            &mut timeline,
            lanes[i],
            Cow::Borrowed(name),
            (OpKind::Compute, "roofline"),
            (a, b),
            (0.0, Some(decodes), true),
        );
    }
    for &(_, _, to, a, b, bytes) in &fleet.transfers {
        span(
            &mut graph,
            &mut timeline,
            transfer_lanes[to - first_decode.unwrap_or(0)],
            Cow::Borrowed("kv_transfer"),
            (OpKind::Communication, tier.name()),
            (a, b),
            (bytes, None, false),
        );
    }
    let mut rows: Vec<(LaneId, SimTime)> = Vec::new();
    let mut by_arrival = done.to_vec();
    by_arrival.sort_by_key(|&r| (fleet.requests[r].arrival, r));
    for r in by_arrival {
        let (admitted, first, last) = (
            fleet.admitted[r].expect("completed"),
            fleet.first_token[r].expect("completed"),
            fleet.finished[r].expect("completed"),
        );
        let row = match rows.iter().position(|&(_, free)| free <= admitted) {
            Some(k) => k,
            None => {
                let lane = graph.add_lane(format!("row {}", rows.len()), "requests");
                rows.push((lane, SimTime::ZERO));
                rows.len() - 1
            }
        };
        rows[row].1 = last;
        for (what, a, b) in [("prefill", admitted, first), ("decode", first, last)] {
            if b > a {
                span(
                    &mut graph,
                    &mut timeline,
                    rows[row].0,
                    Cow::Owned(format!("request {} {what}", fleet.requests[r].id)),
                    (OpKind::Compute, "roofline"),
                    (a, b),
                    (0.0, None, false),
                );
            }
        }
    }
    (graph, timeline)
}
