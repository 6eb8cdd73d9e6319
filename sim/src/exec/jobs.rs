//! Several graphs on one engine, the jobs of one cluster: their collectives share the links
//! between servers (`fabric`). Each job runs its graph again as soon as it finishes, until every
//! job has finished `steps` runs and every guest (`guest`, a process such as a serving fleet) is
//! done, so each counted run had the others running beside it throughout.

use super::executor::Executor;
use super::fabric::{Fabric, LinkLoads};
use super::graph::Graph;
use super::guest::{Guest, GuestCtx};
use super::replicas::Replicas;
use super::timeline::Timeline;
use crate::engine::{Process, RunStats, Scheduler, SimTime, Simulation};

/// A graph and what its operations load on the shared links.
#[derive(Clone, Copy)]
pub struct Job<'g> {
    pub graph: &'g Graph,
    pub loads: &'g LinkLoads,
}

/// What one job did: its first run's timeline, each counted run's length and the bytes it
/// moved on each shared link over the whole run.
#[derive(Clone, Debug)]
pub struct JobRun {
    pub timeline: Timeline,
    pub runs: Vec<SimTime>,
    pub carried: Vec<f64>,
}

struct Jobs<'g, 'h, 'q> {
    execs: Vec<Executor<'g>>,
    bases: Vec<u32>,
    guests: &'h mut [&'q mut dyn Guest],
    /// Each guest's first event number, and its events pending.
    guest_bases: Vec<u32>,
    pending: Vec<u64>,
    fabric: Option<Fabric>,
    steps: usize,
    began: Vec<SimTime>,
    runs: Vec<Vec<SimTime>>,
    first: Vec<Option<Timeline>>,
}

impl Jobs<'_, '_, '_> {
    /// Every graph has run its count and every guest is done or idle.
    fn finished(&self) -> bool {
        self.runs.iter().all(|r| r.len() >= self.steps)
            && (0..self.guests.len()).all(|k| self.pending[k] == 0 || self.guests[k].done())
    }

    fn guest(&mut self, k: usize, ev: Option<u32>, sched: &mut Scheduler<u32>) {
        let mut ctx = GuestCtx {
            sched,
            fabric: &mut self.fabric,
            base: self.guest_bases[k],
            job: self.execs.len() + k,
            pending: &mut self.pending[k],
        };
        match ev {
            Some(ev) => {
                *ctx.pending -= 1;
                self.guests[k].handle(ev - self.guest_bases[k], &mut ctx);
            }
            None => self.guests[k].start(&mut ctx),
        }
    }
}

impl Process for Jobs<'_, '_, '_> {
    type Event = u32;

    fn start(&mut self, sched: &mut Scheduler<u32>) {
        for ex in &mut self.execs {
            ex.start_all(sched, &mut self.fabric);
        }
        for k in 0..self.guests.len() {
            self.guest(k, None, sched);
        }
    }

    fn handle(&mut self, ev: u32, sched: &mut Scheduler<u32>) {
        if let Some(f) = self.fabric.as_mut() {
            f.finish(ev, sched);
        }
        if let Some(&first) = self.guest_bases.first()
            && ev >= first
        {
            let k = self.guest_bases.partition_point(|&b| b <= ev) - 1;
            self.guest(k, Some(ev), sched);
            if self.finished() {
                sched.stop();
            }
            return;
        }
        let j = self.bases.partition_point(|&b| b <= ev) - 1;
        let ex = &mut self.execs[j];
        ex.finished(ev - self.bases[j], sched, &mut self.fabric);
        if ex.done < ex.total() {
            return;
        }
        let now = sched.now();
        self.runs[j].push(now - self.began[j]);
        if self.first[j].is_none() {
            self.first[j] = Some(Timeline {
                start: ex.start.clone(),
                end: ex.end.clone(),
            });
        }
        if self.finished() {
            return sched.stop();
        }
        let ex = &mut self.execs[j];
        ex.reset();
        self.began[j] = now;
        ex.start_all(sched, &mut self.fabric);
    }
}

/// What the guests moved: bytes per guest per shared link.
pub type GuestBytes = Vec<Vec<f64>>;

/// Runs `jobs` side by side on links of effective capacities `capacity` (bytes/s), each at
/// least `steps` times (at least once), with `guests` beside them until each is done.
pub fn execute_jobs(
    jobs: &[Job],
    guests: &mut [&mut dyn Guest],
    capacity: Vec<f64>,
    steps: u32,
) -> (Vec<JobRun>, GuestBytes, RunStats) {
    let single = Replicas::single();
    let mut bases = Vec::with_capacity(jobs.len());
    let mut next = 0u64;
    let execs: Vec<Executor> = jobs
        .iter()
        .enumerate()
        .map(|(j, job)| {
            assert!(!job.graph.is_empty(), "job {j} has no operations");
            bases.push(next as u32);
            next += job.graph.len() as u64;
            assert!(
                next < u32::MAX as u64,
                "the jobs' operations overflow 32-bit events"
            );
            Executor::new(job.graph, &single).placed(j, bases[j], job.loads)
        })
        .collect();
    let guest_bases: Vec<u32> = guests
        .iter()
        .map(|g| {
            let b = next as u32;
            next += g.events() as u64;
            assert!(
                next < u32::MAX as u64,
                "the jobs' events overflow 32-bit events"
            );
            b
        })
        .collect();
    let n = jobs.len();
    let pending = vec![0; guests.len()];
    let mut sim = Simulation::new(Jobs {
        execs,
        bases,
        fabric: Some(Fabric::new(capacity, n + guests.len())),
        guests,
        guest_bases,
        pending,
        steps: steps.max(1) as usize,
        began: vec![SimTime::ZERO; n],
        runs: vec![Vec::new(); n],
        first: vec![None; n],
    });
    let stats = sim.run_to_end();
    let p = sim.process;
    let mut carried = p.fabric.map(|f| f.carried).unwrap_or_default();
    let guest_bytes = carried.split_off(n.min(carried.len()));
    let runs = p
        .first
        .into_iter()
        .zip(p.runs)
        .zip(carried)
        .map(|((first, runs), carried)| JobRun {
            timeline: first.expect("every job finishes its graph before the run stops"),
            runs,
            carried,
        })
        .collect();
    (runs, guest_bytes, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::graph::{LaneUse, Op};

    /// A job: `compute` µs of kernels, then a `comm` µs collective loading link 0 by `share`.
    fn job(compute: u64, comm: u64, share: f64) -> (Graph, LinkLoads) {
        let mut g = Graph::new();
        let k = g.add_lane_using("compute", "gpu0", LaneUse::Kernels);
        let c = g.add_lane_using("comm", "gpu0", LaneUse::Collectives);
        let a = g.add(Op::test(k, compute), &[]);
        let r = g.add(Op::test(c, comm), &[a]);
        let mut loads = LinkLoads::new(g.len());
        let e = loads.add([(0, share)]);
        loads.set(r, e);
        (g, loads)
    }

    fn us(t: SimTime) -> f64 {
        t.as_ps() as f64 / 1e6
    }

    fn both<'a>(a: &'a (Graph, LinkLoads), b: &'a (Graph, LinkLoads)) -> [Job<'a>; 2] {
        [a, b].map(|(graph, loads)| Job { graph, loads })
    }

    #[test]
    fn jobs_slow_each_other_only_while_both_communicate() {
        let (a, b) = (job(10, 20, 1.0), job(10, 20, 1.0));
        let jobs = both(&a, &b);
        let (runs, _, _) = execute_jobs(&jobs, &mut [], vec![1e9], 1);
        // Both collectives start at 10 µs on the same full link: each at half speed, 40 µs.
        assert_eq!(us(runs[0].runs[0]), 50.0);
        assert_eq!(us(runs[1].runs[0]), 50.0);
        // Alone, each takes its own 30 µs.
        let (alone, _, _) = execute_jobs(&jobs[..1], &mut [], vec![1e9], 1);
        assert_eq!(us(alone[0].runs[0]), 30.0);
        // A collective that meets only the other's compute is not slowed: the first job's
        // runs (collectives at 30-50 and 80-100 µs) keep clear of the second's (100-120 µs).
        let (a, b) = (job(30, 20, 1.0), job(100, 20, 1.0));
        let jobs = both(&a, &b);
        let (runs, _, _) = execute_jobs(&jobs, &mut [], vec![1e9], 1);
        assert_eq!(us(runs[0].runs[0]), 50.0);
        assert_eq!(us(runs[1].runs[0]), 120.0);
    }

    #[test]
    fn a_short_job_repeats_until_every_job_has_its_count() {
        let (a, b) = (job(10, 5, 0.1), job(100, 5, 0.1));
        let jobs = both(&a, &b);
        let (runs, _, stats) = execute_jobs(&jobs, &mut [], vec![1e9], 2);
        assert_eq!(runs[1].runs.len(), 2);
        assert!(runs[0].runs.len() >= 13, "{}", runs[0].runs.len());
        assert!(runs[0].runs.iter().all(|&t| us(t) == 15.0));
        assert_eq!(us(stats.end), 210.0);
        // The first run's timeline is kept: the short job's collective ended at 15 µs.
        assert_eq!(us(runs[0].timeline.end[1]), 15.0);
        // Bytes on link 0: 0.1 of 1 GB/s for 5 µs per counted run and beyond.
        assert!(runs[1].carried[0] >= 2.0 * 500.0 - 1e-6);
    }
}
