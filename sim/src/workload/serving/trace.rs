//! The trace of a serving run: one lane per replica (one per engine of a pipeline-parallel
//! replica; one per server holding layers of a placed fleet) with its iterations (prefill,
//! decode or mixed), one lane per decode replica with the KV caches arriving from a prefill
//! pool, and each
//! completed request's prefill (admission to first token) and decode (first token to last) on
//! rows of a `requests` group, shared first-fit by requests that do not overlap.
//!
//! Deliberately ignored: the time a request waits before admission (the gap before its prefill
//! on its row) and per-kernel detail inside an iteration.

use super::pipelines::Placed;
use super::{Fleet, Lives};
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
            chain: None,
        },
        &[],
    );
    timeline.start.push(a);
    timeline.end.push(b);
}

/// What a trace shows of a fleet's run.
pub(super) struct View<'a> {
    /// (lane, group) of each engine or server, by index (`None`: a server without layers).
    pub lanes: Vec<Option<(String, String)>>,
    /// (engine, start, end, prefill tokens, decodes) of every iteration.
    pub iterations: &'a [(usize, SimTime, SimTime, u64, u32)],
    /// (lane, group) of each receiver of KV caches, and (receiver, start, end, bytes) of every
    /// transfer.
    pub transfer_lanes: Vec<(String, String)>,
    pub transfers: Vec<(usize, SimTime, SimTime, f64)>,
    pub lives: &'a Lives<'a>,
    /// The completed requests.
    pub done: &'a [usize],
}

/// The view of `fleet`'s run.
pub(super) fn of_fleet<'a>(fleet: &'a Fleet, lives: &'a Lives<'a>, done: &'a [usize]) -> View<'a> {
    // Engines in order: replica j of a kind with pp stages runs engines j pp .. (j + 1) pp.
    let mixed_fleet = fleet.kinds.len() > 1;
    let mut lanes = Vec::with_capacity(fleet.replicas.len());
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
                lanes.push(Some((name, group.clone())));
            }
            replica += 1;
        }
    }
    let first_decode = fleet.prefill_replicas.unwrap_or(0);
    let transfer_lanes = match fleet.prefill_replicas {
        Some(p) => (p..fleet.replicas.len())
            .map(|i| ("kv transfers".to_string(), format!("KV into replica {i}")))
            .collect(),
        None => Vec::new(),
    };
    View {
        lanes,
        iterations: &fleet.iterations,
        transfer_lanes,
        transfers: fleet
            .transfers
            .iter()
            .map(|&(_, _, to, a, b, bytes)| (to - first_decode, a, b, bytes))
            .collect(),
        lives,
        done,
    }
}

/// The view of a placed fleet's run: one lane per server that holds layers.
pub(super) fn of_placed<'a>(
    placed: &'a Placed,
    gpu_names: &[&str],
    lives: &'a Lives<'a>,
    done: &'a [usize],
) -> View<'a> {
    let lanes = placed
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.placed().then(|| {
                (
                    format!("layers {}-{}", s.range.0, s.range.1 - 1),
                    format!("server {i} ({})", gpu_names[s.group]),
                )
            })
        })
        .collect();
    View {
        lanes,
        iterations: &placed.iterations,
        transfer_lanes: Vec::new(),
        transfers: Vec::new(),
        lives,
        done,
    }
}

/// The graph and timeline of a run.
pub(super) fn build(view: &View, tier: Tier) -> (Graph, Timeline) {
    let mut graph = Graph::new();
    let mut timeline = Timeline {
        start: Vec::new(),
        end: Vec::new(),
    };
    let lanes: Vec<Option<LaneId>> = view
        .lanes
        .iter()
        .map(|l| {
            l.as_ref()
                .map(|(name, group)| graph.add_lane(name.clone(), group.clone()))
        })
        .collect();
    let transfer_lanes: Vec<LaneId> = view
        .transfer_lanes
        .iter()
        .map(|(name, group)| graph.add_lane(name.clone(), group.clone()))
        .collect();
    for &(i, a, b, prefill, decodes) in view.iterations {
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
            lanes[i].expect("only engines with a lane run"),
            Cow::Borrowed(name),
            (OpKind::Compute, "roofline"),
            (a, b),
            (0.0, Some(decodes), true),
        );
    }
    for &(to, a, b, bytes) in &view.transfers {
        span(
            &mut graph,
            &mut timeline,
            transfer_lanes[to],
            Cow::Borrowed("kv_transfer"),
            (OpKind::Communication, tier.name()),
            (a, b),
            (bytes, None, false),
        );
    }
    let mut rows: Vec<(LaneId, SimTime)> = Vec::new();
    let lives = view.lives;
    let mut by_arrival = view.done.to_vec();
    by_arrival.sort_by_key(|&r| (lives.requests[r].arrival, r));
    for r in by_arrival {
        let (admitted, first, last) = (
            lives.admitted[r].expect("completed"),
            lives.first_token[r].expect("completed"),
            lives.finished[r].expect("completed"),
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
                    Cow::Owned(format!("request {} {what}", lives.requests[r].id)),
                    (OpKind::Compute, "roofline"),
                    (a, b),
                    (0.0, None, false),
                );
            }
        }
    }
    (graph, timeline)
}
