//! A static graph of operations: each runs on one lane (a GPU's compute stream, its communication
//! stream, a link) for a known duration once the operations it depends on are done.
//!
//! Lanes are in-order, like CUDA streams: operations on a lane start in the order they were added,
//! each when the previous one on the lane has finished and its own dependencies are done. Durations
//! are fixed when the graph is built (the analytical tiers price everything up front).

use super::chain::{ChainId, Part};
use crate::engine::SimTime;
use std::borrow::Cow;

pub type OpId = u32;
pub type LaneId = u32;

/// What an operation keeps a lane busy with; traces and views colour by it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Compute,
    Communication,
    /// Memory-bound work: optimizer steps, copies.
    Memory,
}

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Compute => "compute",
            OpKind::Communication => "communication",
            OpKind::Memory => "memory",
        }
    }
}

/// One operation.
#[derive(Clone, Debug)]
pub struct Op {
    pub name: Cow<'static, str>,
    pub lane: LaneId,
    pub kind: OpKind,
    pub duration: SimTime,
    /// Arithmetic done, for FLOP accounting and traces.
    pub flops: f64,
    /// Bytes moved (memory traffic for compute, payload for communication).
    pub bytes: f64,
    /// Which cost tier priced it ("roofline", "analytical", ...).
    pub tier: &'static str,
    /// The transformer layer and micro-batch it belongs to, when it belongs to one.
    pub layer: Option<u32>,
    pub micro_batch: Option<u32>,
    /// Counted in model FLOPs (false for recomputation).
    pub model_flops: bool,
    /// The kernels it runs back to back, when it is a chain of them (`chain`): its duration,
    /// FLOPs and bytes are theirs summed.
    pub chain: Option<ChainId>,
}

#[cfg(test)]
impl Op {
    /// A compute operation of `us` microseconds on `lane`, for tests.
    pub(crate) fn test(lane: LaneId, us: u64) -> Op {
        Op {
            name: "op".into(),
            lane,
            kind: OpKind::Compute,
            duration: SimTime::from_us(us),
            flops: 0.0,
            bytes: 0.0,
            tier: "test",
            layer: None,
            micro_batch: None,
            model_flops: true,
            chain: None,
        }
    }
}

/// A lane: one in-order queue of operations.
#[derive(Clone, Debug)]
pub struct Lane {
    pub name: String,
    /// What the lane belongs to (a GPU, a node), for grouping in traces.
    pub group: String,
    /// What its operations occupy on the group's GPU ([`Contention`]).
    pub uses: LaneUse,
    /// The lane whose operations this lane's chains carry as their communication parts
    /// (collectives that block this lane, run inside its chains: `exec::chain`).
    pub carried: Option<LaneId>,
}

/// What a lane's operations occupy on their GPU, for [`Contention`] between the lanes of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LaneUse {
    /// Nothing shared with the others (host CPUs, copy engines, a bookkeeping lane).
    #[default]
    Other,
    /// Kernels on the GPU's multiprocessors: they slow while a collective of the group runs.
    Kernels,
    /// Collective kernels (NCCL's): each holds some of the multiprocessors while it runs.
    Collectives,
}

/// Collectives and computation on one GPU compete for its multiprocessors: NCCL runs each
/// collective as a kernel of one thread block per channel, and a GEMM or attention kernel beside
/// it gets the rest. While any operation of a [`LaneUse::Collectives`] lane of a group runs, the
/// operations of its [`LaneUse::Kernels`] lanes progress at `kernel_rate_ppm` parts per million of
/// their speed (their remaining work is kept and their end moved, in integer picoseconds). The
/// collectives' own durations are not changed: their time is the links'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contention {
    pub kernel_rate_ppm: u64,
}

impl Contention {
    /// Kernels keep the multiprocessors a collective's `blocks` do not take, of `multiprocessors`.
    pub fn of_blocks(blocks: u32, multiprocessors: u32) -> Option<Contention> {
        let sms = multiprocessors as u64;
        let left = sms.checked_sub(blocks as u64).filter(|&l| l > 0)?;
        Some(Contention {
            kernel_rate_ppm: left * 1_000_000 / sms,
        })
    }

    /// The kernels' rate beside a collective as a share of their speed, 0-1.
    pub fn rate(self) -> f64 {
        self.kernel_rate_ppm as f64 / 1e6
    }
}

/// Operations, their lanes and their dependencies.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub lanes: Vec<Lane>,
    pub ops: Vec<Op>,
    /// Operations of each lane in program order.
    pub lane_ops: Vec<Vec<OpId>>,
    /// Dependencies of op `i`: `deps[dep_start[i]..dep_start[i + 1]]`.
    deps: Vec<OpId>,
    dep_start: Vec<u32>,
    /// Quantities that follow lanes' operations over time (a GPU's board power), drawn beside
    /// them in traces.
    pub counters: Vec<super::counter::Counter>,
    /// Collectives slowing the kernels beside them; `None`: lanes never slow each other.
    pub contention: Option<Contention>,
    /// The parts of every chain (`Op::chain`).
    pub chains: Vec<Vec<Part>>,
}

impl Graph {
    pub fn new() -> Self {
        Graph {
            dep_start: vec![0],
            ..Default::default()
        }
    }

    pub fn add_lane(&mut self, name: impl Into<String>, group: impl Into<String>) -> LaneId {
        self.lanes.push(Lane {
            name: name.into(),
            group: group.into(),
            uses: LaneUse::Other,
            carried: None,
        });
        self.lane_ops.push(Vec::new());
        (self.lanes.len() - 1) as LaneId
    }

    /// A lane whose operations occupy `uses` on its group's GPU.
    pub fn add_lane_using(
        &mut self,
        name: impl Into<String>,
        group: impl Into<String>,
        uses: LaneUse,
    ) -> LaneId {
        let lane = self.add_lane(name, group);
        self.lanes[lane as usize].uses = uses;
        lane
    }

    /// Adds `op` after everything already on its lane, to start once `deps` are done.
    pub fn add(&mut self, op: Op, deps: &[OpId]) -> OpId {
        let id = self.ops.len() as OpId;
        assert!(
            deps.iter().all(|&d| d < id),
            "op {} depends on an op added after it",
            op.name
        );
        self.lane_ops[op.lane as usize].push(id);
        self.ops.push(op);
        self.deps.extend_from_slice(deps);
        self.dep_start.push(self.deps.len() as u32);
        id
    }

    /// Appends `other`'s lanes and operations, each lane's group renamed by `group` (given the
    /// lane's index and group), for drawing several graphs' runs as one; its counters and
    /// contention are left out.
    pub fn append(&mut self, other: &Graph, group: impl Fn(usize, &str) -> String) {
        let (lanes, ops) = (self.lanes.len() as LaneId, self.ops.len() as OpId);
        let chains = self.chains.len() as ChainId;
        self.chains.extend(other.chains.iter().cloned());
        for (l, lane) in other.lanes.iter().enumerate() {
            let id = self.add_lane_using(lane.name.clone(), group(l, &lane.group), lane.uses);
            self.lanes[id as usize].carried = lane.carried.map(|g| g + lanes);
        }
        for (i, op) in other.ops.iter().enumerate() {
            let deps: Vec<OpId> = other.deps(i as OpId).iter().map(|d| d + ops).collect();
            let mut op = op.clone();
            op.lane += lanes;
            op.chain = op.chain.map(|c| c + chains);
            self.add(op, &deps);
        }
    }

    /// The lanes whose chains carry `lane`'s operations as parts ([`Lane::carried`]).
    pub fn carriers(&self, lane: LaneId) -> impl Iterator<Item = LaneId> + '_ {
        (0..self.lanes.len() as LaneId)
            .filter(move |&h| self.lanes[h as usize].carried == Some(lane))
    }

    pub fn deps(&self, op: OpId) -> &[OpId] {
        let i = op as usize;
        &self.deps[self.dep_start[i] as usize..self.dep_start[i + 1] as usize]
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}
