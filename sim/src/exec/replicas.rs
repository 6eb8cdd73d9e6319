//! Instances of one graph run side by side, each on its own copy of the lanes: every pipeline
//! of a training step, each GPU with its own timeline.
//!
//! Instance `i` of an operation runs on instance `i` of its lane after instance `i` of its
//! dependencies. A lane's durations may be scaled per instance (a slow GPU) and varied per
//! operation ([`Jitter`]: a lognormal factor of mean 1 drawn for each instance of each
//! operation at its own place in one seeded stream, so the draw does not depend on the order
//! events run in). An operation of a
//! sync class is a collective: each instance arrives when its lane and dependencies allow and
//! holds its lane (and the SMs a collective lane contends for) while it waits, and the members
//! of its group all start once the last has arrived, as NCCL's kernels do. Who waited, and for
//! whom, is added up per instance lane. Ignored: a collective's members finishing at different
//! moments (all end together).

use super::graph::{LaneId, OpId};
use crate::engine::SimTime;
use rand::rngs::ChaCha8Rng;
use std::collections::HashMap;

/// An operation that synchronises nothing.
pub const NO_SYNC: u32 = u32::MAX;

/// How many instances run, how each is perturbed, and which operations synchronise them.
#[derive(Clone, Debug)]
pub struct Replicas {
    pub count: u32,
    /// Duration scale of instance `i`'s lane `l`, millionths, at `i x lanes + l`; empty: all
    /// as built.
    pub scale_ppm: Vec<u32>,
    /// Sync class of each operation ([`NO_SYNC`] for none); empty: nothing synchronises.
    pub sync: Vec<u32>,
    /// The groups of each sync class.
    pub classes: Vec<Groups>,
    /// Durations varying per operation instance; None: as built.
    pub jitter: Option<Jitter>,
    /// Other durations of every operation (the graph priced again, e.g. at a lower power
    /// limit), and which an instance lane takes: `table[instance x lanes + lane]`, 0 for the
    /// graph's own, `k` for `alternates[k - 1]`; empty: the graph's everywhere.
    pub alternates: Vec<Vec<SimTime>>,
    pub table: Vec<u32>,
}

/// Each operation instance's duration times a lognormal factor of mean 1.
#[derive(Clone, Debug)]
pub struct Jitter {
    /// The run's seed and the name of the stream the factors are drawn from (each instance op at
    /// its own position).
    pub seed: u64,
    pub stream: &'static str,
    /// The logarithm's standard deviation per instance lane (`instance x lanes + lane`); 0: none.
    pub sigma: Vec<f64>,
}

/// A [`Jitter`] with its stream opened.
pub(super) struct Draws {
    rng: ChaCha8Rng,
    sigma: Vec<f64>,
}

impl Jitter {
    pub(super) fn open(&self) -> Draws {
        Draws {
            rng: crate::engine::RngStreams::new(self.seed).stream(self.stream),
            sigma: self.sigma.clone(),
        }
    }

    /// The log-standard deviation that gives a lognormal of mean 1 coefficient of variation `cv`.
    pub fn sigma_of(cv: f64) -> f64 {
        crate::stats::math::ln(1.0 + cv * cv).sqrt()
    }
}

impl Draws {
    /// `duration` of instance lane `il` times event `ev`'s factor.
    pub(super) fn vary(&mut self, il: usize, ev: u32, duration: SimTime) -> SimTime {
        let sigma = self.sigma.get(il).copied().unwrap_or(0.0);
        if sigma <= 0.0 {
            return duration;
        }
        // 16 words (8 draws) for each event; the polar method takes 2 a try, rarely more than 4.
        self.rng.set_word_pos(ev as u128 * 16);
        let mu = crate::stats::variate::lognormal_mu(1.0, sigma);
        let factor = crate::stats::variate::lognormal(&mut self.rng, mu, sigma);
        SimTime::from_ps((duration.as_ps() as f64 * factor).round() as u64)
    }
}

impl Replicas {
    /// One instance, as built.
    pub fn single() -> Self {
        Replicas {
            count: 1,
            scale_ppm: Vec::new(),
            sync: Vec::new(),
            classes: Vec::new(),
            jitter: None,
            alternates: Vec::new(),
            table: Vec::new(),
        }
    }

    /// The sync class of `op`, if it has one.
    pub(super) fn class(&self, op: OpId) -> Option<u32> {
        self.sync
            .get(op as usize)
            .copied()
            .filter(|&c| c != NO_SYNC)
    }

    /// The duration `op` takes on instance lane `il` before scaling: the graph's `own`, or an
    /// alternate's.
    pub(super) fn base(&self, il: usize, op: OpId, own: SimTime) -> SimTime {
        match self.table.get(il) {
            None | Some(0) => own,
            Some(&k) => self.alternates[k as usize - 1][op as usize],
        }
    }

    /// `duration` of lane `l` of instance `i`, scaled (rounded up).
    pub(super) fn scaled(&self, i: usize, l: usize, lanes: usize, duration: SimTime) -> SimTime {
        match self.scale_ppm.get(i * lanes + l) {
            None | Some(&1_000_000) => duration,
            Some(&ppm) => {
                SimTime::from_ps((duration.as_ps() as u128 * ppm as u128).div_ceil(1_000_000) as u64)
            }
        }
    }
}

/// A partition of the instances into groups, numbered densely from 0.
#[derive(Clone, Debug)]
pub struct Groups {
    /// The group of each instance.
    of: Vec<u32>,
    /// Instances of group `g`: `members[start[g]..start[g + 1]]`, ascending.
    members: Vec<u32>,
    start: Vec<u32>,
}

impl Groups {
    /// Groups from each instance's group id (ids dense from 0).
    pub fn new(of: Vec<u32>) -> Self {
        let groups = of.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
        let mut start = vec![0u32; groups + 1];
        for &g in &of {
            start[g as usize + 1] += 1;
        }
        for g in 0..groups {
            start[g + 1] += start[g];
        }
        let mut fill = start.clone();
        let mut members = vec![0; of.len()];
        for (i, &g) in of.iter().enumerate() {
            members[fill[g as usize] as usize] = i as u32;
            fill[g as usize] += 1;
        }
        Groups { of, members, start }
    }

    pub fn of(&self, instance: u32) -> u32 {
        self.of[instance as usize]
    }

    pub fn members(&self, group: u32) -> &[u32] {
        let g = group as usize;
        &self.members[self.start[g] as usize..self.start[g + 1] as usize]
    }
}

/// Time spent at collectives waiting for the group's last member, per instance lane
/// (`instance x lanes + lane`): what each waited, and what the others waited when it was last.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Waits {
    pub waited: Vec<SimTime>,
    pub held: Vec<SimTime>,
}

/// Collectives some members have reached: by operation and group, who arrived when.
pub(super) struct Rendezvous {
    lanes: usize,
    open: HashMap<(OpId, u32), Vec<(u32, SimTime)>>,
    pub(super) waits: Waits,
}

impl Rendezvous {
    pub(super) fn new(instances: usize, lanes: usize) -> Self {
        Rendezvous {
            lanes,
            open: HashMap::new(),
            waits: Waits {
                waited: vec![SimTime::ZERO; instances * lanes],
                held: vec![SimTime::ZERO; instances * lanes],
            },
        }
    }

    /// Instance `i` reaches `op` of `group` on `lane` at `now`: the members, once all are there
    /// (the waits booked), else None.
    pub(super) fn arrive(
        &mut self,
        op: OpId,
        group: u32,
        size: usize,
        i: u32,
        lane: LaneId,
        now: SimTime,
    ) -> Option<Vec<u32>> {
        let here = self.open.entry((op, group)).or_default();
        here.push((i, now));
        if here.len() < size {
            return None;
        }
        let here = self.open.remove(&(op, group)).expect("just filled");
        let mut held = SimTime::ZERO;
        for &(m, at) in &here {
            let w = now - at;
            self.waits.waited[m as usize * self.lanes + lane as usize] += w;
            held += w;
        }
        self.waits.held[i as usize * self.lanes + lane as usize] += held;
        Some(here.into_iter().map(|(m, _)| m).collect())
    }
}
