//! A process that runs beside the graphs of a cluster's jobs on one engine: a serving fleet, for
//! example. It numbers its own events from 0 (`Guest::events` of them); the engine offsets them
//! past the graphs' events. Its transfers between servers are flows on the shared links
//! (`fabric`), slowed alongside the graphs' collectives.

use super::fabric::Fabric;
use crate::engine::{Scheduler, SimTime};

/// A process beside a cluster's graphs.
pub trait Guest {
    /// How many event numbers it uses: its events are `0..events()`.
    fn events(&self) -> u32;
    /// Schedules its first events.
    fn start(&mut self, ctx: &mut GuestCtx);
    /// Handles its event `ev`.
    fn handle(&mut self, ev: u32, ctx: &mut GuestCtx);
    /// Whether it has done its work: the run stops once every guest has (or has no event left)
    /// and every graph has run its count.
    fn done(&self) -> bool;
}

/// The engine and the shared links, as a guest sees them.
pub struct GuestCtx<'a> {
    pub(super) sched: &'a mut Scheduler<u32>,
    pub(super) fabric: &'a mut Option<Fabric>,
    pub(super) base: u32,
    pub(super) job: usize,
    /// The guest's events scheduled and not yet handled: none left, it can do nothing more.
    pub(super) pending: &'a mut u64,
}

impl GuestCtx<'_> {
    pub fn now(&self) -> SimTime {
        self.sched.now()
    }

    /// Schedules the guest's event `ev` at `at`.
    pub fn at(&mut self, at: SimTime, ev: u32) {
        self.sched.at(at, self.base + ev);
        *self.pending += 1;
    }

    /// Starts a transfer of `work` priced alone, loading `links` (`(link, share of its capacity)`
    /// while it runs at that price); event `ev` fires when it ends, at the speed the links allow.
    pub fn transfer(&mut self, links: Vec<(u32, f64)>, work: SimTime, ev: u32) {
        let global = self.base + ev;
        *self.pending += 1;
        match self.fabric.as_mut() {
            Some(f) if !links.is_empty() => {
                f.start_links(self.job, links, global, work.as_ps(), self.sched)
            }
            _ => {
                self.sched.after(work, global);
            }
        }
    }

    /// Stops the whole run.
    pub fn stop(&mut self) {
        self.sched.stop();
    }
}
