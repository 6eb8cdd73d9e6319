//! Serving videos: requests (`[workload]`: how many, how they arrive) each ask for a video of the
//! `[diffusion] videos` mix, drawn by share; the cluster's GPUs form `total / gpus_per_video`
//! groups, each generating one video at a time, and a free group takes the next waiting request:
//! first come first served (`fcfs`) or shortest job first (`sjf`, by the video's simulated
//! latency).
//!
//! A video's service time is its latency on one group as `Plan::video` simulates it (priced once
//! per size). Deliberately ignored: batching several videos on one group, and groups of
//! different sizes.

use super::policy::VideoScheduler;
use super::{DiffusionRun, Plan, VideoQueue, VideoRun};
use crate::engine::{Process, RngStreams, Scheduler, SimTime, Simulation};
use crate::key_error::KeyError;
use crate::model::dit::Video;
use crate::report::diffusion::{Queue, QueuedVideo};
use crate::report::percentiles::Percentiles;
use crate::report::typed::TypedReport;
use rand::RngExt;

enum Ev {
    Arrival(usize),
    Done(usize),
}

struct Pool {
    arrivals: Vec<SimTime>,
    /// Each request's video (index into the mix) and service time.
    kind: Vec<usize>,
    service: Vec<SimTime>,
    free: u32,
    waiting: Vec<usize>,
    shortest_first: bool,
    started: Vec<Option<SimTime>>,
    finished: Vec<Option<SimTime>>,
}

impl Pool {
    fn dispatch(&mut self, sched: &mut Scheduler<Ev>) {
        while self.free > 0 && !self.waiting.is_empty() {
            let pick = if self.shortest_first {
                (0..self.waiting.len())
                    .min_by_key(|&i| (self.service[self.waiting[i]], self.waiting[i]))
                    .expect("a waiting request")
            } else {
                0
            };
            let r = self.waiting.remove(pick);
            self.free -= 1;
            self.started[r] = Some(sched.now());
            sched.at(sched.now() + self.service[r], Ev::Done(r));
        }
    }
}

impl Process for Pool {
    type Event = Ev;

    fn start(&mut self, sched: &mut Scheduler<Ev>) {
        for (r, &t) in self.arrivals.iter().enumerate() {
            sched.at(t, Ev::Arrival(r));
        }
    }

    fn handle(&mut self, ev: Ev, sched: &mut Scheduler<Ev>) {
        match ev {
            Ev::Arrival(r) => self.waiting.push(r),
            Ev::Done(r) => {
                self.finished[r] = Some(sched.now());
                self.free += 1;
            }
        }
        self.dispatch(sched);
    }
}

/// Serves the queue's requests; `first` is the first video of the mix, already simulated (its
/// graph is the run's trace).
pub(super) fn serve(
    queue: &VideoQueue,
    plan: &Plan,
    mix: &[(Video, f64)],
    first: VideoRun,
) -> Result<DiffusionRun, KeyError> {
    let (requests, seed) = (&queue.requests, queue.seed);
    let mut latencies = vec![first.latency];
    let mut fits = first.report.memory.fits;
    for &(v, _) in &mix[1..] {
        let run = plan.video(v);
        super::within_simulated_time(&run, v)?;
        fits &= run.report.memory.fits;
        latencies.push(run.latency);
    }
    let total: f64 = mix.iter().map(|m| m.1).sum();
    let mut rng = RngStreams::new(seed).stream("video-mix");
    let kind: Vec<usize> = requests
        .iter()
        .map(|_| {
            let mut x = rng.random::<f64>() * total;
            mix.iter()
                .position(|m| {
                    x -= m.1;
                    x < 0.0
                })
                .unwrap_or(mix.len() - 1)
        })
        .collect();
    let groups = plan.total_gpus / plan.layout.world();
    let shortest_first = queue.scheduler == VideoScheduler::Sjf;
    let n = requests.len();
    let pool = Pool {
        arrivals: requests.iter().map(|r| r.arrival).collect(),
        service: kind
            .iter()
            .map(|&k| SimTime::from_secs_f64(latencies[k]))
            .collect(),
        kind,
        free: groups,
        waiting: Vec::new(),
        shortest_first,
        started: vec![None; n],
        finished: vec![None; n],
    };
    let mut sim = Simulation::new(pool);
    let stats = sim.run_to_end();
    let pool = sim.process;
    let secs = |t: SimTime| t.as_secs_f64();
    let e2e: Vec<f64> = (0..n)
        .map(|r| secs(pool.finished[r].expect("every video ends") - pool.arrivals[r]))
        .collect();
    let queueing: Vec<f64> = (0..n)
        .map(|r| secs(pool.started[r].expect("every video starts") - pool.arrivals[r]))
        .collect();
    let start = pool.arrivals.iter().copied().min().unwrap_or(SimTime::ZERO);
    let end = pool
        .finished
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(start);
    let span = secs(end - start).max(f64::MIN_POSITIVE);
    let shapes: Vec<QueuedVideo> = mix
        .iter()
        .zip(&latencies)
        .enumerate()
        .map(|(k, ((v, share), &latency))| QueuedVideo {
            width: v.width,
            height: v.height,
            frames: v.frames,
            share: *share,
            latency_s: latency,
            requests: pool.kind.iter().filter(|&&x| x == k).count() as u64,
        })
        .collect();
    let mean_e2e = e2e.iter().sum::<f64>() / n.max(1) as f64;
    let mut report = first.report;
    report.latency_s = mean_e2e;
    report.videos_per_hour = n as f64 / span * 3600.0;
    report.memory.fits = fits;
    report.serving = Some(Queue {
        requests: n as u64,
        completed: n as u64,
        groups,
        scheduler: if shortest_first { "sjf" } else { "fcfs" }.into(),
        videos_per_hour: n as f64 / span * 3600.0,
        latency_s: Percentiles::of(e2e),
        queueing_s: Percentiles::of(queueing),
        videos: shapes,
        events: stats.events,
    });
    report.assumptions.push(
        "latency_s is the mean from a request's arrival to its video, queueing included; the \
         per-video figures (breakdown, memory, denoise_step_s) are the mix's first video's"
            .into(),
    );
    Ok(DiffusionRun {
        report: report.to_value(),
        graph: first.graph,
        timeline: first.timeline,
    })
}
