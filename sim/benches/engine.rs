//! Engine throughput on a synthetic load: events per second through the whole loop (queue, clock,
//! dispatch to a process), with a standing population of pending events, many events at equal
//! timestamps, and a mix of schedules and cancels like a flow-level network rescheduling completions.
//!
//! `cargo bench -p clustersim --bench engine`; the figures go to BENCHMARKS.md.

use clustersim::engine::{EventId, Process, Scheduler, SimTime, Simulation};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use std::hint::black_box;

const POPULATION: usize = 100_000;
const EVENTS: u64 = 10_000_000;

#[derive(Clone, Copy)]
enum Ev {
    Work(u32),
    Timeout(u32),
}

struct Churn {
    /// The load's own generator is a cheap one, so that the figure measures the engine.
    rng: Xoshiro256PlusPlus,
    scheduled: u64,
    timeouts: Vec<EventId>,
    checksum: u64,
}

impl Churn {
    fn new(seed: u64) -> Self {
        Churn {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            scheduled: 0,
            timeouts: Vec::with_capacity(1024),
            checksum: 0,
        }
    }

    /// Delays are whole microseconds from 0 to 15: most timestamps are shared by many events.
    fn delay(&mut self) -> SimTime {
        SimTime::from_us(self.rng.random_range(0..16u64))
    }
}

impl Process for Churn {
    type Event = Ev;

    fn start(&mut self, sched: &mut Scheduler<Ev>) {
        for i in 0..POPULATION as u32 {
            let d = self.delay();
            sched.after(d, Ev::Work(i));
            self.scheduled += 1;
        }
    }

    fn handle(&mut self, event: Ev, sched: &mut Scheduler<Ev>) {
        let label = match event {
            Ev::Work(l) | Ev::Timeout(l) => l,
        };
        self.checksum = self.checksum.wrapping_add(label as u64);
        // Stop feeding once every event still to be handled is already pending: a run handles
        // exactly EVENTS events.
        if sched.handled() + sched.pending() as u64 >= EVENTS {
            return;
        }
        // Keep the population steady: one new event per event handled.
        let d = self.delay();
        sched.after(d, Ev::Work(label.wrapping_add(1)));
        self.scheduled += 1;
        // One event in four also arms a far timeout; half of the timeouts get cancelled
        // (rescheduled completions), so about one schedule in nine is cancelled.
        if label % 4 == 0 {
            let far = SimTime::from_us(16 + self.rng.random_range(0..64u64));
            self.timeouts.push(sched.after(far, Ev::Timeout(label)));
            self.scheduled += 1;
            if self.timeouts.len() >= 2 {
                let victim = self
                    .timeouts
                    .swap_remove(self.rng.random_range(0..self.timeouts.len()));
                sched.cancel(victim);
            }
        }
    }
}

fn bench_engine(c: &mut Criterion) {
    // One untimed run to report how many events a run handles.
    let mut probe = Simulation::new(Churn::new(1));
    let stats = probe.run_to_end();
    eprintln!(
        "engine bench: {} events handled, {} scheduled, end at {}; {} bytes per pending event",
        stats.events,
        probe.process.scheduled,
        stats.end,
        clustersim::engine::EventQueue::<Ev>::bytes_per_pending_event()
    );
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.throughput(Throughput::Elements(stats.events));
    group.bench_function("churn_10M", |b| {
        b.iter(|| {
            let mut sim = Simulation::new(Churn::new(1));
            let stats = sim.run_to_end();
            black_box((stats, sim.process.checksum))
        })
    });
    group.finish();
}

criterion_group!(benches, bench_engine);
criterion_main!(benches);
