//! Every GPU of a training step its own timeline (`sim.ranks = "all"`).
//!
//! The stage graph runs once per pipeline (each tensor-, context- and data-parallel coordinate),
//! so every GPU has its own lanes; sends between stages stay inside a pipeline. A GPU named by
//! `[[perturb]]` (or the straggler) runs its kernels that many times longer, and every collective
//! starts when the last member of its group reaches it (`exec::Replicas`), so a slow GPU holds up
//! exactly the peers its collectives and sends reach. Collectives keep the price the stage mode
//! gives them (each group beside the other groups of its stage). The report describes the
//! pipeline that finishes last and says who waited for whom. `[[perturb]] jitter` varies each
//! kernel of a GPU by a lognormal factor of mean 1 (stream `perturb/jitter` of the seed).
//! Groups whose routes cross a degraded link take longer (`degraded`).

use super::comm::Comm;
use super::setup::TrainingConfig;
use super::step::Stage;
use crate::engine::{RunStats, SimTime};
use crate::exec::{Graph, Groups, Jitter, NO_SYNC, Replicas, Timeline, execute_replicas};
use crate::hw::ComputeModel;
use crate::key_error::KeyError;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Operation instances one run holds at most (the executor's event ids are 32-bit).
pub const MAX_OPERATIONS: u64 = 1 << 31;

/// What the full-rank run produced: the timeline of the pipeline that finished last (indexed as
/// the stage graph is), the run's statistics and the report's `ranks` section.
pub struct FullRun {
    pub timeline: Timeline,
    pub stats: RunStats,
    pub report: Value,
    /// The pipelines of `sim.trace_gpus` as one graph (each lane under its GPU) and their
    /// timeline; None when the scenario names none.
    pub trace: Option<(Graph, Timeline)>,
}

/// A pipeline's coordinates: tensor, context and data-parallel index.
#[derive(Copy, Clone)]
struct Coord {
    t: u32,
    c: u32,
    d: u32,
}

impl TrainingConfig {
    pub(super) fn pipelines(&self) -> u32 {
        self.tp * self.cp * self.dp
    }

    fn coord(&self, i: u32) -> Coord {
        Coord {
            t: i % self.tp,
            c: i / self.tp % self.cp,
            d: i / (self.tp * self.cp),
        }
    }

    fn pipeline(&self, k: Coord) -> u32 {
        k.t + self.tp * (k.c + self.cp * k.d)
    }

    /// Global rank of stage `p`'s GPU in pipeline `i`.
    pub(super) fn rank_of(&self, i: u32, p: u32) -> u32 {
        let (k, st) = (self.coord(i), self.stride);
        k.t * st.tp + k.c * st.cp + k.d * st.dp + self.stage_rank(p)
    }

    /// Pipeline and stage of global rank `r`.
    pub(super) fn place(&self, r: u32) -> (u32, u32) {
        let st = self.stride;
        let k = Coord {
            t: r / st.tp % self.tp,
            c: r / st.cp % self.cp,
            d: r / st.dp % self.dp,
        };
        (self.pipeline(k), r / st.pp % self.pp)
    }

    /// The first pipeline of pipeline `i`'s group on `comm`; None for sends, which stay inside
    /// a pipeline.
    pub(super) fn group_of(&self, i: u32, comm: Comm) -> Option<u32> {
        let k = self.coord(i);
        let site = self.site_replicas();
        let first = k.d - k.d % site;
        let k = match comm {
            Comm::Tensor => Coord { t: 0, ..k },
            Comm::Data => Coord {
                c: 0,
                d: first,
                ..k
            },
            Comm::Context | Comm::ContextPeer => Coord { c: 0, ..k },
            Comm::Expert => Coord {
                d: k.d - k.d % self.ep,
                ..k
            },
            Comm::ExpertData => Coord {
                c: 0,
                d: first + k.d % self.ep,
                ..k
            },
            Comm::Outer => Coord { d: k.d % site, ..k },
            Comm::Pipe(_) => return None,
        };
        Some(self.pipeline(k))
    }
}

/// Kinds of communicator that synchronise pipelines, one sync class each.
const CLASSES: [Comm; 7] = [
    Comm::Tensor,
    Comm::Data,
    Comm::Context,
    Comm::ContextPeer,
    Comm::Expert,
    Comm::ExpertData,
    Comm::Outer,
];

/// Every GPU's slowdown: the perturbed ones, and the straggler as stage `pp - 1`'s GPU of the
/// first pipeline.
fn slowdowns(setup: &TrainingConfig) -> BTreeMap<u32, f64> {
    let mut slow: BTreeMap<u32, f64> = setup.slow_gpus.iter().copied().collect();
    if setup.straggler_slowdown > 1.0 {
        *slow.entry(setup.stage_rank(setup.pp - 1)).or_insert(1.0) *= setup.straggler_slowdown;
    }
    slow
}

/// The step's durations at each lower power limit of `[[perturb]]` (the stage graph priced
/// again with it), and which of them each pipeline's compute lane takes.
fn limited(
    setup: &TrainingConfig,
    compute: &ComputeModel,
    graph: &Graph,
    stages: &[Stage],
) -> (Vec<Vec<SimTime>>, Vec<u32>) {
    if setup.limited_gpus.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let lanes = graph.lanes.len();
    let mut watts: Vec<f64> = setup.limited_gpus.iter().map(|&(_, w)| w).collect();
    watts.sort_by(f64::total_cmp);
    watts.dedup();
    let alternates = watts
        .iter()
        .map(|&w| {
            let mut limited = compute.clone();
            let cluster = compute.power_limit_watts.unwrap_or(setup.gpu.tdp_watts);
            let w = w.min(cluster);
            limited.power_limit_watts = (w < setup.gpu.tdp_watts).then_some(w);
            let (again, _) = super::step::StepBuilder::new(setup, &limited).build();
            assert_eq!(
                again.len(),
                graph.len(),
                "a step priced at another power limit has the same operations"
            );
            again.ops.iter().map(|o| o.duration).collect()
        })
        .collect();
    let mut table = vec![0u32; setup.pipelines() as usize * lanes];
    for &(rank, w) in &setup.limited_gpus {
        let (i, p) = setup.place(rank);
        let k = watts.iter().position(|&x| x == w).expect("listed") + 1;
        table[i as usize * lanes + stages[p as usize].compute as usize] = k as u32;
    }
    (alternates, table)
}

/// Runs the step with every GPU its own timeline. `collectives` are the stage graph's
/// collectives and sends with their stage and communicator.
pub fn execute(
    setup: &TrainingConfig,
    compute: &ComputeModel,
    graph: &Graph,
    stages: &[Stage],
    (uses, collectives): (&[super::links::CommUse], &[super::step::Collective]),
) -> Result<FullRun, KeyError> {
    let pipelines = setup.pipelines();
    let (n, lanes) = (graph.len(), graph.lanes.len());
    let total = pipelines as u64 * n as u64;
    if total >= MAX_OPERATIONS {
        return Err(KeyError::new(
            "sim.ranks",
            format!(
                "{pipelines} pipelines of {n} operations each ({total} in all) are more than one \
                 run holds ({MAX_OPERATIONS})"
            ),
        )
        .with_help("use ranks = \"stage\", or fewer micro-batches a step"));
    }
    let mut sync = vec![NO_SYNC; n];
    for &(op, _, comm, _) in collectives {
        if let Some(class) = CLASSES.iter().position(|&c| c == comm) {
            sync[op as usize] = class as u32;
        }
    }
    let classes = CLASSES
        .iter()
        .map(|&comm| {
            let mut dense: BTreeMap<u32, u32> = BTreeMap::new();
            let of = (0..pipelines)
                .map(|i| {
                    let g = setup.group_of(i, comm).unwrap_or(i);
                    let next = dense.len() as u32;
                    *dense.entry(g).or_insert(next)
                })
                .collect();
            Groups::new(of)
        })
        .collect();
    let slow = slowdowns(setup);
    let scale_ppm = if slow.is_empty() {
        Vec::new()
    } else {
        let mut scale = vec![1_000_000u32; pipelines as usize * lanes];
        for (&rank, &x) in &slow {
            let (i, p) = setup.place(rank);
            let lane = stages[p as usize].compute as usize;
            scale[i as usize * lanes + lane] = (x * 1e6).round().min(u32::MAX as f64) as u32;
        }
        scale
    };
    let jitter = (!setup.jitter_gpus.is_empty()).then(|| {
        let mut sigma = vec![0.0; pipelines as usize * lanes];
        for &(rank, cv) in &setup.jitter_gpus {
            let (i, p) = setup.place(rank);
            sigma[i as usize * lanes + stages[p as usize].compute as usize] = Jitter::sigma_of(cv);
        }
        Jitter {
            seed: setup.seed,
            stream: "perturb/jitter",
            sigma,
        }
    });
    let (mut alternates, mut table) = limited(setup, compute, graph, stages);
    let degraded = (!setup.degraded_links.is_empty()).then(|| {
        super::degraded::slow_groups(
            setup,
            graph,
            (uses, collectives),
            &mut alternates,
            &mut table,
        )
    });
    let replicas = Replicas {
        count: pipelines,
        scale_ppm,
        sync,
        classes,
        jitter,
        alternates,
        table,
    };
    let (all, stats, waits) = execute_replicas(graph, &replicas);
    // Op `o` of pipeline `i` is at `o x pipelines + i`.
    let count = pipelines as usize;
    let mut ends = vec![SimTime::ZERO; count];
    for (k, &end) in all.end.iter().enumerate() {
        ends[k % count] = ends[k % count].max(end);
    }
    // The pipeline that finishes last (the first of equals) sets the step.
    let last = (0..ends.len()).fold(0, |best, i| if ends[i] > ends[best] { i } else { best });
    let timeline = Timeline {
        start: (0..n).map(|o| all.start[o * count + last]).collect(),
        end: (0..n).map(|o| all.end[o * count + last]).collect(),
    };
    // Waits per GPU: each lane belongs to its stage's GPU.
    let mut stage_of_lane = vec![0u32; lanes];
    for (p, stage) in stages.iter().enumerate() {
        for l in stage.lanes() {
            stage_of_lane[l as usize] = p as u32;
        }
    }
    let mut waited: BTreeMap<u32, SimTime> = BTreeMap::new();
    let mut held: BTreeMap<u32, SimTime> = BTreeMap::new();
    for i in 0..pipelines as usize {
        for (l, &p) in stage_of_lane.iter().enumerate() {
            let rank = setup.rank_of(i as u32, p);
            let (w, h) = (waits.waited[i * lanes + l], waits.held[i * lanes + l]);
            if w > SimTime::ZERO {
                *waited.entry(rank).or_default() += w;
            }
            if h > SimTime::ZERO {
                *held.entry(rank).or_default() += h;
            }
        }
    }
    let mut report = report(setup, (pipelines, n), &ends, last, &slow, &waited, &held);
    if let Some(d) = degraded {
        report["degraded_links"] = d;
    }
    let trace = (!setup.trace_gpus.is_empty()).then(|| {
        let mut pipelines: Vec<u32> = setup.trace_gpus.iter().map(|&r| setup.place(r).0).collect();
        pipelines.sort_unstable();
        pipelines.dedup();
        let mut g = Graph::new();
        let mut t = Timeline {
            start: Vec::new(),
            end: Vec::new(),
        };
        for &i in &pipelines {
            g.append(graph, |l, _| {
                let p = stage_of_lane[l];
                format!("GPU {} (stage {p}, pipeline {i})", setup.rank_of(i, p))
            });
            t.start
                .extend((0..n).map(|o| all.start[o * count + i as usize]));
            t.end
                .extend((0..n).map(|o| all.end[o * count + i as usize]));
        }
        (g, t)
    });
    Ok(FullRun {
        trace,
        timeline,
        stats,
        report,
    })
}

/// The report's `ranks` section.
fn report(
    setup: &TrainingConfig,
    (pipelines, n): (u32, usize),
    ends: &[SimTime],
    last: usize,
    slow: &BTreeMap<u32, f64>,
    waited: &BTreeMap<u32, SimTime>,
    held: &BTreeMap<u32, SimTime>,
) -> Value {
    let first = ends.iter().copied().min().unwrap_or_default();
    let total_wait: SimTime = waited.values().copied().fold(SimTime::ZERO, |a, b| a + b);
    let most_waiting = waited
        .iter()
        .fold(None::<(u32, SimTime)>, |best, (&r, &w)| match best {
            Some((_, b)) if b >= w => best,
            _ => Some((r, w)),
        });
    let mut holders: Vec<(u32, SimTime)> = held.iter().map(|(&r, &h)| (r, h)).collect();
    holders.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    json!({
        "mode": "all",
        "gpus_simulated": setup.gpus(),
        "pipelines": pipelines,
        "operations": pipelines as u64 * n as u64,
        "slowest_pipeline": {
            "index": last,
            "gpus": (0..setup.pp).map(|p| setup.rank_of(last as u32, p)).collect::<Vec<_>>(),
        },
        "finish_s": { "first": first.as_secs_f64(), "last": ends[last].as_secs_f64() },
        "slow_gpus": slow.iter().map(|(&gpu, &x)| json!({ "gpu": gpu, "slowdown": x })).collect::<Vec<_>>(),
        "power_limits": setup.limited_gpus.iter().map(|&(gpu, w)| json!({ "gpu": gpu, "watts": w })).collect::<Vec<_>>(),
        "jitter": {
            "gpus": setup.jitter_gpus.len(),
            "cv_max": setup.jitter_gpus.iter().map(|&(_, cv)| cv).fold(0.0, f64::max),
            "stream": "perturb/jitter",
            "seed": setup.seed,
        },
        "waited_s": {
            "total": total_wait.as_secs_f64(),
            "per_gpu": total_wait.as_secs_f64() / setup.gpus() as f64,
            "most": most_waiting.map(|(gpu, w)| json!({ "gpu": gpu, "s": w.as_secs_f64() })),
        },
        "held_up_by": holders.iter().take(5).map(|&(gpu, h)| json!({ "gpu": gpu, "others_waited_s": h.as_secs_f64() })).collect::<Vec<_>>(),
    })
}
