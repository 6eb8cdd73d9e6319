//! LLM training: one optimizer step of a dense decoder transformer, with data and tensor
//! parallelism (and sequence parallelism), gradient accumulation, activation recomputation and
//! ZeRO 1/2.
//!
//! Symmetry: every tensor-parallel rank does the same work on its shard, and every data-parallel
//! replica runs the same graph on the same hardware, their collectives in lockstep; so one GPU is
//! simulated and stands for all (the report says so under `fidelity.symmetry`). Each collective is
//! priced over its whole group on the topology beside the other groups of its stage that run it
//! at the same moment (`comm::concurrent_groups`), so links they share are shared; what that cost
//! against running alone is `contention.network_s`. Groups of other stages, which run their
//! collectives at other moments of the pipeline, are not put beside it.
//!
//! FLOP conventions (the report's `flops` section): model FLOPs count each GEMM of the forward pass
//! twice per multiply-add, attention as non-causal (4 s^2 h per layer and sequence, as Megatron-LM's
//! Eq. 3 and PaLM's MFU do), and the backward pass as twice the forward; hardware FLOPs add the
//! recomputed forward passes. Time is priced on the work really done (causal attention is half).

pub(crate) mod activation_plan;
pub(crate) mod capacity;
pub(crate) mod comm;
pub(crate) mod degraded;
pub(crate) mod eager;
pub mod estimate;
pub mod framework;
pub(crate) mod layer;
pub(crate) mod layout;
pub(crate) mod links;
pub(crate) mod local_sgd;
pub mod memory;
pub(crate) mod op_checkpoint;
pub(crate) mod optimizer;
pub mod policy;
pub(crate) mod power;
pub(crate) mod ranks;
pub(crate) mod reliability;
pub(crate) mod schedule;
pub(crate) mod sequences;
pub(crate) mod setup;
pub(crate) mod step;

use crate::engine::SimTime;
use crate::exec::{Graph, LaneId, OpKind, Timeline, execute};
use crate::hw::{ComputeModel, ComputeTier};
use crate::report::training::{
    Breakdown as BreakdownReport, Cluster, Communication, Fidelity, Flops, Memory, Model, Parallel,
    TrainingReport,
};
use crate::report::typed::{Sim, TypedReport};
pub use layout::Layout;
use policy::{Recompute, Schedule};
use serde_json::{Value, json};
pub use setup::TrainingConfig;
use std::collections::BTreeMap;
pub use step::HOST_LOOP_PER_RANK_S;

/// What a simulated training step produced.
pub struct TrainingRun {
    pub setup: TrainingConfig,
    pub graph: Graph,
    pub timeline: Timeline,
    pub report: Value,
    /// With `sim.trace_gpus`, those GPUs' pipelines as one graph and their timeline, for the
    /// trace and the viewer (the report reads `graph` and `timeline`).
    pub trace: Option<(Graph, Timeline)>,
    /// The distinct collectives the stage GPUs ran, and which priced each collective op.
    uses: Vec<links::CommUse>,
    collectives: Vec<step::Collective>,
}

impl TrainingRun {
    /// What the step's collectives load on the links between servers (`links::link_loads`).
    pub fn link_loads(&self) -> crate::exec::LinkLoads {
        links::link_loads(&self.setup, self.graph.len(), &self.uses, &self.collectives)
    }
}

/// Why the compute stream of `stage` stood idle: each gap before a compute operation is charged to
/// the dependency that ended last before it started, to the pipeline bubble when that was a
/// point-to-point receive and to exposed communication when it was another collective; the gap
/// after its last operation is communication up to the end of the stage's own collectives and
/// bubble (the pipeline draining) after that.
///
/// With optimizer offload, what the host copies and the host CPUs' (or the optimizer node's) work
/// leave after the stage's own work is the third figure, not bubble.
fn idle_time(graph: &Graph, timeline: &Timeline, stage: &step::Stage) -> (f64, f64, f64) {
    let (mut exposed, mut bubble) = (SimTime::ZERO, SimTime::ZERO);
    let mut previous_end = SimTime::ZERO;
    let ops = &graph.lane_ops[stage.compute as usize];
    let comm_lanes: Vec<LaneId> = [
        Some(stage.data),
        stage.tensor,
        stage.gather,
        stage.expert,
        stage.context,
    ]
    .into_iter()
    .flatten()
    .collect();
    for &op in ops {
        // Collectives run inside its chains block it all through.
        if graph.ops[op as usize].chain.is_some() {
            for (_, s, e) in
                crate::exec::placed(graph, timeline, op).filter(|(p, _, _)| p.is_carried())
            {
                exposed += e - s;
            }
        }
        let start = timeline.start[op as usize];
        let gap = start.saturating_sub(previous_end);
        if gap > SimTime::ZERO {
            let gate = graph
                .deps(op)
                .iter()
                .copied()
                .max_by_key(|&d| timeline.end[d as usize]);
            match gate {
                Some(d) if graph.ops[d as usize].name == step::PIPELINE_SEND => bubble += gap,
                // A collective, or the copies around one on its own stream.
                Some(d)
                    if graph.ops[d as usize].kind == OpKind::Communication
                        || comm_lanes.contains(&graph.ops[d as usize].lane) =>
                {
                    exposed += gap
                }
                _ => bubble += gap,
            }
        }
        previous_end = timeline.end[op as usize];
    }
    let own_comm_end = comm_lanes
        .iter()
        .flat_map(|&lane| graph.lane_ops[lane as usize].iter())
        .map(|&op| timeline.end[op as usize])
        .max()
        .unwrap_or(SimTime::ZERO);
    let makespan = timeline.makespan();
    let comm_tail = own_comm_end.max(previous_end).saturating_sub(previous_end);
    exposed += comm_tail;
    let own_end = previous_end + comm_tail;
    let offload_tail = [stage.host_link, stage.offload]
        .into_iter()
        .flatten()
        .flat_map(|lane| graph.lane_ops[lane as usize].iter())
        .map(|&op| timeline.end[op as usize])
        .max()
        .unwrap_or(SimTime::ZERO)
        .saturating_sub(own_end);
    bubble += makespan.saturating_sub(own_end + offload_tail);
    (
        exposed.as_secs_f64(),
        bubble.as_secs_f64(),
        offload_tail.as_secs_f64(),
    )
}

/// Model FLOPs of one step (see the module docs for the convention).
pub fn model_flops(s: &TrainingConfig) -> f64 {
    if let Some(q) = &s.sequences {
        return sequences::model_flops(s, q);
    }
    let m = &s.model;
    let seq = m.seq_len as f64;
    let h = m.hidden as f64;
    let sequences = s.global_batch as f64;
    // The layers' weights one token goes through (its top-k experts in a mixture-of-experts
    // layer), and the output projection.
    let layer_weights = (m.active_params() - m.embedding_params()) as f64;
    let gemm = 2.0 * seq * (layer_weights + m.vocab as f64 * h);
    let attention = m.layers as f64 * 4.0 * seq * seq * h;
    3.0 * sequences * (gemm + attention)
}

/// Hardware FLOPs: model FLOPs plus the recomputed forward passes.
pub fn hardware_flops(s: &TrainingConfig) -> f64 {
    if let Some(q) = &s.sequences {
        return model_flops(s) + sequences::recomputed_flops(s, q);
    }
    let m = &s.model;
    let seq = m.seq_len as f64;
    let h = m.hidden as f64;
    let recomputed_forward = match s.recompute {
        Recompute::Full => {
            s.global_batch as f64
                * s.recomputed_share()
                * m.layers as f64
                * (2.0 * seq * (m.active_params() - m.embedding_params()) as f64 / m.layers as f64
                    + 4.0 * seq * seq * h)
        }
        Recompute::None | Recompute::Selective => 0.0,
        Recompute::Op => {
            (s.global_batch / s.micro_batch) as f64 * op_checkpoint::recomputed_flops(s)
        }
        // The kernels the plan reruns, every layer of every micro-batch (no tensor or context
        // parallelism under adaptive recomputation: one GPU's kernels are the layer's).
        Recompute::Adaptive => {
            let plan = activation_plan::plan(s);
            let per_layer: f64 = plan.recomputed().map(|(_, k)| k.flops()).sum();
            (s.global_batch / s.micro_batch) as f64 * m.layers as f64 * per_layer
        }
    };
    model_flops(s) + recomputed_forward
}

/// Which compute tiers priced the step, read from the tiers of its compute-lane operations: the
/// tier's name when one priced everything ("roofline"), else each tier with the kinds of kernel
/// it priced, the roofline (the fallback) last, e.g. "profile (GEMM), roofline (other kernels)",
/// or "profile (GEMM: 96 of 144 ops), roofline (GEMM: 48 of 144 ops, other kernels)" when a kind
/// was split between tiers.
pub fn compute_fidelity(graph: &Graph) -> String {
    const CLASSES: [&str; 3] = step::KERNEL_CLASSES;
    let fallback = ComputeTier::Roofline.name();
    // Operations of each class by tier, counted in a short list (a graph has one tier or a few;
    // tiers are static names, so the same pointer is the same tier).
    let mut counted: Vec<(&str, [usize; CLASSES.len()])> = Vec::new();
    let mut count = |kind: OpKind, name: &str, op_tier: &'static str, n: usize| {
        let Some(c) = step::kernel_class(kind, name) else {
            return;
        };
        let same = |tier: &str| std::ptr::eq(tier, op_tier) || tier == op_tier;
        match counted.iter_mut().find(|(tier, _)| same(tier)) {
            Some((_, k)) => k[c] += n,
            None => {
                let mut k = [0; CLASSES.len()];
                k[c] = n;
                counted.push((op_tier, k));
            }
        }
    };
    // Every kernel: each operation not a chain once, each chain's parts as often as it ran.
    let mut runs = vec![0usize; graph.chains.len()];
    for op in &graph.ops {
        match op.chain {
            Some(c) => runs[c as usize] += 1,
            None => count(op.kind, &op.name, op.tier, 1),
        }
    }
    for (parts, &n) in graph.chains.iter().zip(&runs) {
        for p in parts {
            count(p.kind, &p.name, p.tier, n);
        }
    }
    // tier -> kernel class -> operations
    let mut by_tier: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for (tier, n) in counted {
        for (class, &count) in CLASSES.iter().zip(&n).filter(|(_, n)| **n > 0) {
            *by_tier.entry(tier).or_default().entry(class).or_default() += count;
            *totals.entry(class).or_default() += count;
        }
    }
    if by_tier.len() <= 1 {
        return by_tier
            .keys()
            .next()
            .copied()
            .unwrap_or(fallback)
            .to_string();
    }
    let mut tiers: Vec<&str> = by_tier.keys().copied().filter(|t| *t != fallback).collect();
    if by_tier.contains_key(fallback) {
        tiers.push(fallback);
    }
    let parts: Vec<String> = tiers
        .iter()
        .enumerate()
        .map(|(i, tier)| {
            let counts = &by_tier[tier];
            let last = i + 1 == tiers.len();
            let mut items = Vec::new();
            let mut whole_classes = false;
            for class in CLASSES {
                let (Some(&n), Some(&total)) = (counts.get(class), totals.get(class)) else {
                    continue;
                };
                if n < total {
                    items.push(format!("{class}: {n} of {total} ops"));
                } else if last {
                    whole_classes = true;
                } else {
                    items.push(class.to_string());
                }
            }
            // The last tier priced whatever the others did not.
            if whole_classes {
                items.push("other kernels".to_string());
            }
            format!("{tier} ({})", items.join(", "))
        })
        .collect();
    parts.join(", ")
}

/// The step time of an asynchronous pipeline in steady state, given `once`, the time of one step
/// from an empty pipeline: the pipeline is not flushed between steps, so a step costs what two
/// steps in a row add to one (the fill and drain are paid once per run, not per step).
fn steady_step(setup: &TrainingConfig, compute: &ComputeModel, once: SimTime) -> SimTime {
    let mut twice = setup.clone();
    twice.accumulation *= 2;
    twice.global_batch *= 2;
    let (graph, _) = step::StepBuilder::new(&twice, compute).build();
    let (timeline, _) = execute(&graph);
    timeline.makespan().saturating_sub(once)
}

/// Simulates a resolved set-up (its layout checked with `Layout::check`); refuses at `sim.ranks`
/// a full-rank run larger than one run holds.
pub fn simulate(
    setup: TrainingConfig,
    compute: &ComputeModel,
) -> Result<TrainingRun, crate::key_error::KeyError> {
    let (graph, stages, uses, collectives) =
        step::StepBuilder::new(&setup, compute).build_counting();
    let (timeline, stats, ranks, trace) = match setup.ranks {
        policy::Ranks::Stage => {
            let (timeline, stats) = execute(&graph);
            (timeline, stats, None, None)
        }
        policy::Ranks::All => {
            let run = ranks::execute(&setup, compute, &graph, &stages, (&uses, &collectives))?;
            (run.timeline, run.stats, Some(run.report), run.trace)
        }
    };
    let inner = if setup.schedule == Schedule::Async1F1B {
        steady_step(&setup, compute, timeline.makespan())
    } else {
        timeline.makespan()
    }
    .as_secs_f64();
    // Under local SGD a step's time includes its share of the outer synchronisation.
    let round = local_sgd::round(&setup, inner);
    let iteration = round.map_or(inner, |r| r.step_s);
    let lanes = Breakdown::of(&setup, &graph, &timeline, &stages, &uses, iteration);
    let tokens = match &setup.sequences {
        Some(q) => sequences::tokens(&setup, q),
        None => setup.global_batch as f64 * setup.model.seq_len as f64,
    };
    let step_time = StepTime {
        iteration,
        tokens,
        round,
    };
    let mut report = step_report(&setup, &graph, &lanes, &step_time, stats.events);
    optional_reports(&mut report, &setup, &lanes, &step_time, &uses);
    let (power, board_watts) = power::report(&setup, compute, &graph, &timeline, lanes.critical);
    report.power = Some(power);
    let step = capacity::Step {
        seconds: iteration,
        tokens,
        busy: lanes.compute_busy / iteration,
        board_watts,
    };
    capacity::report(&setup, &step, &mut report);
    report.ranks = ranks;
    let report = report.to_value();
    Ok(TrainingRun {
        setup,
        graph,
        timeline,
        report,
        trace,
        uses,
        collectives,
    })
}

/// A simulated step's length, seconds, and the tokens it trains on.
struct StepTime {
    iteration: f64,
    tokens: f64,
    /// Local SGD: the outer round the step's time includes its share of.
    round: Option<local_sgd::Round>,
}

/// Where a simulated step's time went: busy seconds of the lanes of the stage that computes
/// longest (the critical stage), and what its compute stream waited for.
struct Breakdown {
    /// Index of the critical stage.
    critical: usize,
    compute_busy: f64,
    /// What contention for SMs and links added (the report's `contention`).
    contention: Value,
    tensor: f64,
    pipeline: f64,
    expert: f64,
    context: f64,
    /// The longest data-parallel communication of any stage.
    data_parallel: f64,
    exposed: f64,
    bubble: f64,
    offload_tail: f64,
    /// Optimizer offload: the critical stage's host copies and optimizer work.
    host_copies: f64,
    offload: f64,
}

impl Breakdown {
    fn of(
        setup: &TrainingConfig,
        graph: &Graph,
        timeline: &Timeline,
        stages: &[step::Stage],
        uses: &[links::CommUse],
        iteration: f64,
    ) -> Self {
        let busy = |lane: Option<LaneId>, kind: Option<OpKind>| {
            lane.map_or(0.0, |l| timeline.busy(graph, l, kind).as_secs_f64())
        };
        // The stage that computes longest sets the breakdown.
        let computing: Vec<f64> = stages
            .iter()
            .map(|st| busy(Some(st.compute), None))
            .collect();
        let critical = stages
            .iter()
            .zip(&computing)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .expect("at least one stage")
            .0;
        let compute_busy = busy(Some(critical.compute), None);
        // What the collectives beside it added to its kernels (`exec::Contention`).
        let priced: f64 = graph.lane_ops[critical.compute as usize]
            .iter()
            .map(|&op| graph.own_duration(op).as_secs_f64())
            .sum();
        let contention = json!({
            "compute_s": (compute_busy - priced).max(0.0),
            "network_s": links::sharing_seconds(setup, uses),
            "kernel_rate": graph.contention.map_or(1.0, |c| c.rate()),
            "collective_blocks": setup.contention().0,
        });
        let comm = Some(OpKind::Communication);
        let (tensor, pipeline) = (busy(critical.tensor, comm), busy(critical.send, comm));
        let (expert, context) = (busy(critical.expert, comm), busy(critical.context, comm));
        let data_parallel = stages
            .iter()
            .map(|st| busy(Some(st.data), comm))
            .fold(0.0, f64::max);
        let (exposed, bubble, offload_tail) = idle_time(graph, timeline, critical);
        // An asynchronous pipeline's fill and drain are not part of its steady-state step: what is
        // left idle is the step less the busiest stage's work.
        let bubble = if setup.schedule == Schedule::Async1F1B {
            // (to the picosecond, so that float rounding leaves no residue)
            ((iteration - compute_busy - exposed) * 1e12)
                .round()
                .max(0.0)
                / 1e12
        } else {
            bubble
        };
        Breakdown {
            critical: stages
                .iter()
                .position(|st| st.compute == critical.compute)
                .expect("the critical stage is a stage"),
            compute_busy,
            contention,
            tensor,
            pipeline,
            expert,
            context,
            data_parallel,
            exposed,
            bubble,
            offload_tail,
            host_copies: busy(critical.host_link, None),
            offload: busy(critical.offload, None),
        }
    }
}

/// The report of a simulated step: throughput and utilisation, the time breakdown, memory,
/// FLOPs, and the cluster, model and layout it ran.
fn step_report(
    setup: &TrainingConfig,
    graph: &Graph,
    lanes: &Breakdown,
    time: &StepTime,
    events: u64,
) -> TrainingReport {
    let (iteration, round) = (time.iteration, time.round);
    let gpus = setup.gpus() as f64;
    let model = model_flops(setup);
    let hardware = hardware_flops(setup);
    let peak = setup
        .gpu
        .peak_flops(setup.gemm_dtype)
        .expect("checked in set-up");
    let tflops = model / iteration / gpus / 1e12;
    let hardware_tflops = hardware / iteration / gpus / 1e12;
    TrainingReport {
        kind: "training".into(),
        scenario: setup.scenario.clone(),
        iteration_time_s: iteration,
        tokens_per_s: time.tokens / iteration,
        tflops_per_gpu: tflops,
        hardware_tflops_per_gpu: hardware_tflops,
        mfu: tflops * 1e12 / peak,
        hfu: hardware_tflops * 1e12 / peak,
        breakdown_s: BreakdownReport {
            compute: lanes.compute_busy,
            exposed_communication: lanes.exposed + round.map_or(0.0, |r| r.step_s - r.inner_step_s),
            pipeline_bubble: lanes.bubble,
            optimizer_offload: None,
        },
        contention: lanes.contention.clone(),
        communication_s: Communication {
            data_parallel: lanes.data_parallel,
            tensor_parallel: lanes.tensor,
            pipeline: lanes.pipeline,
            expert_parallel: lanes.expert,
            context_parallel: lanes.context,
        },
        memory: memory_report(setup),
        flops: Flops {
            model_per_step: model,
            hardware_per_step: hardware,
            convention: "model: 6 x GEMM FLOPs per token + non-causal attention (Megatron-LM \
                         Eq. 3 without recompute); hardware: plus recomputed forwards"
                .into(),
        },
        cluster: Cluster {
            gpu: setup.gpu.name.to_string(),
            gpus: setup.gpus(),
            nodes: setup.fabric.nodes,
            gpus_per_node: setup.fabric.gpus_per_node,
            peak_tflops_per_gpu: peak / 1e12,
            profile: setup.profile.as_ref().map(|p| p.name.clone()),
        },
        model: Model {
            name: setup.model.name.clone(),
            params: setup.model.params(),
            active_params: setup.model.active_params(),
            layers: setup.model.layers,
            hidden: setup.model.hidden,
            seq_len: setup.model.seq_len,
            dtype: setup.gemm_dtype.name().into(),
        },
        parallel: parallel_report(setup),
        fidelity: fidelity_report(setup, graph),
        assumptions: setup.assumptions.clone(),
        sim: Sim {
            operations: Some(graph.len() as u64),
            ..Sim::events(events)
        },
        power: None,
        energy: None,
        ranks: None,
        reliability: None,
        capacity: None,
        local_sgd: None,
        sequences: None,
        optimizer_offload: None,
        links: None,
        uncertainty: None,
        cost: None,
    }
}

/// Memory a GPU of the fullest stage holds, against its capacity.
fn memory_report(setup: &TrainingConfig) -> Memory {
    let (stage, mem) = memory::memory(setup);
    let capacity = setup.gpu.memory_bytes;
    Memory {
        stage,
        activation_plan: (setup.recompute == Recompute::Adaptive)
            .then(|| activation_plan::plan(setup).report()),
        // (micro-batches of unlike shapes have no one size to grow)
        largest_micro_batch: match setup.sequences {
            Some(_) => None,
            None => Some(memory::largest_micro_batch(setup, capacity as f64)),
        },
        ..mem.report(capacity)
    }
}

/// The parallel layout and training policies the step ran.
fn parallel_report(setup: &TrainingConfig) -> Parallel {
    Parallel {
        dp: setup.dp,
        tp: setup.tp,
        pp: setup.pp,
        cp: setup.cp,
        ep: setup.ep,
        cp_algorithm: setup.cp_algorithm.name().into(),
        schedule: setup.schedule.name().into(),
        virtual_stages: setup.virtual_stages,
        sequence_parallel: setup.sequence_parallel,
        micro_batch: setup.micro_batch,
        global_batch: setup.global_batch,
        accumulation_steps: setup.accumulation,
        recompute: setup.recompute.name().into(),
        recompute_layers: setup
            .recompute_layers
            .filter(|_| setup.recompute == Recompute::Full),
        zero: setup.zero,
        optimizer: setup.optimizer.report(),
        compression: setup.compression.report(),
    }
}

/// How the step was priced: compute tiers, network tier, topology, and the symmetry that lets
/// one GPU a stage stand for all.
fn fidelity_report(setup: &TrainingConfig, graph: &Graph) -> Fidelity {
    let symmetry = match setup.ranks {
        policy::Ranks::All => format!(
            "every GPU simulated: {} GPUs as {} pipelines of {} stage{}, each GPU its own timeline; a collective starts when its group's last member reaches it",
            setup.gpus(),
            setup.gpus() / setup.pp,
            setup.pp,
            if setup.pp == 1 { "" } else { "s" },
        ),
        policy::Ranks::Stage => format!(
            "{} GPU{} simulated (one per pipeline stage) for {} ({} tensor-parallel x {} context-parallel ranks x {} data-parallel replicas each): ranks of a stage do identical work and their collectives run in lockstep",
            setup.pp,
            if setup.pp == 1 { "" } else { "s" },
            setup.gpus(),
            setup.tp,
            setup.cp,
            setup.dp
        ),
    };
    Fidelity {
        compute: compute_fidelity(graph),
        network: setup.tier.name().into(),
        topology: setup.topology.name.to_string(),
        ranks: setup.ranks.name().into(),
        symmetry,
    }
}

/// The report's sections for what only some set-ups have: local SGD, `[sequences]`, optimizer
/// offload and per-link traffic.
fn optional_reports(
    report: &mut TrainingReport,
    setup: &TrainingConfig,
    lanes: &Breakdown,
    time: &StepTime,
    uses: &[links::CommUse],
) {
    if let Some(r) = &time.round {
        report.local_sgd = Some(local_sgd::report(setup, r));
    }
    if let Some(q) = &setup.sequences {
        report.sequences = Some(sequences::report(setup, q));
    }
    if let Some(host) = setup.host {
        report.breakdown_s.optimizer_offload = Some(lanes.offload_tail);
        report.optimizer_offload = Some(json!({
            "mode": setup.optimizer_offload.name(),
            "host_copies_s": lanes.host_copies,
            "optimizer_s": lanes.offload,
            "exposed_s": lanes.offload_tail,
            "host": {
                "cpu_flops": host.flops,
                "memory_bandwidth": host.memory_bandwidth,
                "memory_bytes": host.memory_bytes,
            },
        }));
    }
    if setup.record_links {
        let bytes = links::link_bytes(setup, uses);
        report.links = Some(crate::report::links::links(
            &setup.topology,
            &bytes,
            time.iteration,
        ));
    }
}
