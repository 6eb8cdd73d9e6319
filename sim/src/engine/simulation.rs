//! The run loop and the seam every workload plugs into.
//!
//! A [`Process`] owns all model state and reacts to its own events; the [`Scheduler`] it is handed
//! is its only view of time. The same seam serves two styles:
//! - static dependency graphs (training, diffusion): the process releases an operation when its
//!   inputs are done and its resource is free, and schedules its completion (see `exec::graph`);
//! - reactive drivers (a serving scheduler): the process decides at each arrival or completion
//!   what to run next, drawing from named random streams.
//!
//! Components are composed by nesting: a process wraps sub-components and routes an event enum to
//! them. The loop pops events in (time, sequence) order and never moves time backwards; scheduling
//! into the past is a modelling bug and panics naming the sim time.

use super::queue::{EventId, EventQueue};
use super::time::SimTime;

/// A model driven by events of type `Self::Event`.
pub trait Process {
    type Event;

    /// Called once at time zero, before any event; schedules the first events.
    fn start(&mut self, sched: &mut Scheduler<Self::Event>);

    /// Called for each event in (time, sequence) order; `sched.now()` is the event's time.
    fn handle(&mut self, event: Self::Event, sched: &mut Scheduler<Self::Event>);
}

/// The clock and pending events of one run, as a process sees them.
pub struct Scheduler<E> {
    queue: EventQueue<E>,
    now: SimTime,
    handled: u64,
    stopped: bool,
    overran: bool,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Scheduler<E> {
    pub fn new() -> Self {
        Scheduler {
            queue: EventQueue::new(),
            now: SimTime::ZERO,
            handled: 0,
            stopped: false,
            overran: false,
        }
    }

    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at the absolute time `at`, which must not be in the past.
    pub fn at(&mut self, at: SimTime, event: E) -> EventId {
        // An event at the very end of simulated time is one that would have come after it.
        self.overran |= at == SimTime::MAX;
        assert!(
            at >= self.now,
            "event scheduled in the past: at {at} while the simulation is at {}",
            self.now
        );
        self.queue.push(at, event)
    }

    /// Schedules `event` after `delay`. A time past the end of simulated time (about 213 days)
    /// is held at its end and the run marked as having overrun it ([`RunStats::overran`]): the
    /// caller reports that instead of the run's times.
    pub fn after(&mut self, delay: SimTime, event: E) -> EventId {
        let at = self.now.checked_add(delay).unwrap_or_else(|| {
            self.overran = true;
            SimTime::MAX
        });
        self.at(at, event)
    }

    /// Cancels a pending event; false when it already happened or was cancelled before.
    pub fn cancel(&mut self, id: EventId) -> bool {
        self.queue.cancel(id)
    }

    /// Ends the run after the current event, whatever is still pending.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Events still pending.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Events handled so far.
    pub fn handled(&self) -> u64 {
        self.handled
    }
}

/// What a run did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RunStats {
    /// Events handled (cancelled events are not counted).
    pub events: u64,
    /// Time of the last event handled.
    pub end: SimTime,
    /// Whether events were still pending when the run ended (a stop or a time limit).
    pub truncated: bool,
    /// Whether an event was asked for past the end of simulated time (about 213 days) and held
    /// at its end: the run's times are not to be read.
    pub overran: bool,
}

/// A process and its scheduler.
pub struct Simulation<P: Process> {
    pub process: P,
    sched: Scheduler<P::Event>,
    started: bool,
}

impl<P: Process> Simulation<P> {
    pub fn new(process: P) -> Self {
        Simulation {
            process,
            sched: Scheduler::new(),
            started: false,
        }
    }

    /// Runs until no event is pending or the process stops.
    pub fn run(&mut self) -> RunStats {
        self.run_until(SimTime::MAX)
    }

    /// Runs events with time `<= limit`; the clock stays at the last event handled.
    pub fn run_until(&mut self, limit: SimTime) -> RunStats {
        if !self.started {
            self.started = true;
            self.process.start(&mut self.sched);
        }
        while !self.sched.stopped {
            match self.sched.queue.peek_time() {
                Some(t) if t <= limit => {}
                _ => break,
            }
            let (time, event) = self.sched.queue.pop().expect("peeked event exists");
            self.dispatch(time, event);
        }
        self.stats()
    }

    /// The loop without a time limit: pops directly, no peek per event.
    pub fn run_to_end(&mut self) -> RunStats {
        if !self.started {
            self.started = true;
            self.process.start(&mut self.sched);
        }
        while !self.sched.stopped {
            let Some((time, event)) = self.sched.queue.pop() else {
                break;
            };
            self.dispatch(time, event);
        }
        self.stats()
    }

    fn dispatch(&mut self, time: SimTime, event: P::Event) {
        debug_assert!(time >= self.sched.now, "event queue went back in time");
        self.sched.now = time;
        self.sched.handled += 1;
        self.process.handle(event, &mut self.sched);
    }

    fn stats(&self) -> RunStats {
        RunStats {
            events: self.sched.handled,
            end: self.sched.now,
            truncated: self.sched.pending() > 0,
            overran: self.sched.overran,
        }
    }

    pub fn now(&self) -> SimTime {
        self.sched.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the order in which events arrive; each event may schedule follow-ups.
    struct Recorder {
        seen: Vec<(SimTime, u32)>,
        plan: Vec<(u64, u32)>,
    }

    impl Process for Recorder {
        type Event = u32;
        fn start(&mut self, sched: &mut Scheduler<u32>) {
            for &(t, label) in &self.plan {
                sched.at(SimTime::from_ns(t), label);
            }
        }
        fn handle(&mut self, label: u32, sched: &mut Scheduler<u32>) {
            self.seen.push((sched.now(), label));
            // Event 1 schedules two more at the current time: they must run after the ones
            // already waiting at this time (FIFO), and before later times.
            if label == 1 {
                sched.after(SimTime::ZERO, 100);
                sched.after(SimTime::ZERO, 101);
            }
        }
    }

    #[test]
    fn fifo_at_equal_times_and_never_backwards() {
        let mut sim = Simulation::new(Recorder {
            seen: vec![],
            plan: vec![(10, 1), (10, 2), (5, 0), (10, 3), (20, 4)],
        });
        let stats = sim.run();
        let labels: Vec<u32> = sim.process.seen.iter().map(|&(_, l)| l).collect();
        assert_eq!(labels, vec![0, 1, 2, 3, 100, 101, 4]);
        assert!(sim.process.seen.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(stats.events, 7);
        assert_eq!(stats.end, SimTime::from_ns(20));
        assert!(!stats.truncated);
    }

    #[test]
    fn run_until_stops_at_the_limit_and_resumes() {
        let mut sim = Simulation::new(Recorder {
            seen: vec![],
            plan: vec![(10, 7), (30, 8)],
        });
        let first = sim.run_until(SimTime::from_ns(15));
        assert_eq!(first.events, 1);
        assert!(first.truncated);
        let rest = sim.run();
        assert_eq!(rest.events, 2);
        assert_eq!(sim.now(), SimTime::from_ns(30));
    }

    struct TimeTraveller;
    impl Process for TimeTraveller {
        type Event = ();
        fn start(&mut self, sched: &mut Scheduler<()>) {
            sched.at(SimTime::from_ns(10), ());
        }
        fn handle(&mut self, _: (), sched: &mut Scheduler<()>) {
            sched.at(SimTime::from_ns(5), ());
        }
    }

    #[test]
    #[should_panic(
        expected = "event scheduled in the past: at 5.000 ns while the simulation is at 10.000 ns"
    )]
    fn scheduling_into_the_past_is_refused() {
        Simulation::new(TimeTraveller).run();
    }
}
