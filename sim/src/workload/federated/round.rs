//! The server's rounds of federated training, as a `Process` on the engine.
//!
//! A round starts by selecting a cohort among the devices online then; each selected device
//! downloads the model, trains locally and uploads its update, one after the other, at its own
//! speed and links (or drops out part of the way). The round closes at the first of: `quorum`
//! reports in, every selected device reported or dropped, or the deadline; devices still working
//! then are stragglers, dropped. A closed round with fewer than `min_reports` reports failed (its
//! aggregate is not used). The next round starts `server_time` after the close. An event that
//! would fall past the end of simulated time (about 213 days) never happens: a device that slow
//! is a straggler of a round that closes otherwise, and a round that cannot close is reported by
//! [`Server::unfinished`]. Deliberately
//! ignored: contention on the server's own links (each device is limited by its links alone),
//! connection set-up, and devices selected again while still busy with a dropped round.

use super::population::Population;
use crate::engine::{Process, Scheduler, SimTime};

/// What one device must do in a round, apart from its own speeds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Work {
    pub download_bytes: f64,
    pub flops: f64,
    pub upload_bytes: f64,
}

/// How the server runs rounds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Policy {
    pub rounds: u32,
    pub cohort: u32,
    pub quorum: Option<u32>,
    pub min_reports: u32,
    pub deadline: Option<SimTime>,
    pub server_time: SimTime,
}

/// What happened in one round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundRecord {
    pub start: SimTime,
    pub end: SimTime,
    pub selected: u32,
    pub reports: u32,
    pub dropouts: u32,
    pub stragglers: u32,
    /// The round closed with at least `min_reports` reports.
    pub succeeded: bool,
}

/// Seconds one reporting device spent downloading, training and uploading.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DeviceTimes {
    pub download: f64,
    pub compute: f64,
    pub upload: f64,
}

pub enum Ev {
    Start,
    /// (round, cohort slot)
    Report(u32, u32),
    Drop(u32, u32),
    Deadline(u32),
}

/// The server and the population, driven by rounds.
pub struct Server {
    pub population: Population,
    pub work: Work,
    pub policy: Policy,
    pub rounds: Vec<RoundRecord>,
    pub reported: Vec<DeviceTimes>,
    /// The open round's cohort: each slot's times, and whether it has reported or dropped.
    cohort: Vec<DeviceTimes>,
    resolved: Vec<bool>,
    /// Slots of the open round that have neither reported nor dropped.
    pending: usize,
    open: bool,
    /// The longest time past the end of simulated time that an event of the open round needed,
    /// seconds from the round's start (`None`: every event fitted).
    beyond: Option<f64>,
}

impl Server {
    pub fn new(population: Population, work: Work, policy: Policy) -> Server {
        Server {
            population,
            work,
            policy,
            rounds: Vec::new(),
            reported: Vec::new(),
            cohort: Vec::new(),
            resolved: Vec::new(),
            pending: 0,
            open: false,
            beyond: None,
        }
    }

    /// The round left open when the simulation ran out of events (its index, and the time from
    /// its start that one of its events needed past the end of simulated time), or None when
    /// every round closed.
    pub fn unfinished(&self) -> Option<(u32, f64)> {
        self.open
            .then(|| (self.round(), self.beyond.unwrap_or(0.0)))
    }

    /// Schedules `ev` `seconds` after `now`, unless that falls past the end of simulated time.
    fn after(&mut self, sched: &mut Scheduler<Ev>, seconds: f64, ev: Ev) {
        let now = sched.now();
        match now.checked_add(SimTime::from_secs_f64(seconds)) {
            Some(at) if at < SimTime::MAX => {
                sched.at(at, ev);
            }
            _ => self.beyond = Some(self.beyond.unwrap_or(0.0).max(seconds)),
        }
    }

    fn round(&self) -> u32 {
        self.rounds.len() as u32 - 1
    }

    fn start_round(&mut self, sched: &mut Scheduler<Ev>) {
        let now = sched.now();
        let devices = self.population.select(self.policy.cohort);
        let r = self.rounds.len() as u32;
        self.rounds.push(RoundRecord {
            start: now,
            end: now,
            selected: devices.len() as u32,
            reports: 0,
            dropouts: 0,
            stragglers: 0,
            succeeded: false,
        });
        self.cohort.clear();
        self.resolved = vec![false; devices.len()];
        self.pending = devices.len();
        self.open = true;
        self.beyond = None;
        for (slot, &d) in devices.iter().enumerate() {
            let d = d as usize;
            let times = DeviceTimes {
                download: self.work.download_bytes / self.population.downlink[d],
                compute: self.work.flops / self.population.compute[d],
                upload: self.work.upload_bytes / self.population.uplink[d],
            };
            self.cohort.push(times);
            let total = times.download + times.compute + times.upload;
            let slot = slot as u32;
            match self.population.drops_out() {
                Some(fraction) => self.after(sched, total * fraction, Ev::Drop(r, slot)),
                None => self.after(sched, total, Ev::Report(r, slot)),
            };
        }
        if let Some(deadline) = self.policy.deadline {
            self.after(sched, deadline.as_secs_f64(), Ev::Deadline(r));
        }
        if devices.is_empty() {
            self.close(sched);
        }
    }

    fn close(&mut self, sched: &mut Scheduler<Ev>) {
        self.open = false;
        let now = sched.now();
        let stragglers = self.pending as u32;
        let min_reports = self.policy.min_reports;
        let record = self.rounds.last_mut().expect("an open round");
        record.end = now;
        record.stragglers = stragglers;
        record.succeeded = record.reports >= min_reports;
        if (self.rounds.len() as u32) < self.policy.rounds {
            match now.checked_add(self.policy.server_time) {
                Some(at) => {
                    sched.at(at, Ev::Start);
                }
                None => sched.stop(),
            }
        } else {
            sched.stop();
        }
    }

    /// Whether the open round `r` still waits on `slot`.
    fn live(&self, r: u32, slot: u32) -> bool {
        self.open && r == self.round() && !self.resolved[slot as usize]
    }
}

impl Process for Server {
    type Event = Ev;

    fn start(&mut self, sched: &mut Scheduler<Ev>) {
        if self.policy.rounds > 0 {
            sched.at(SimTime::ZERO, Ev::Start);
        }
    }

    fn handle(&mut self, ev: Ev, sched: &mut Scheduler<Ev>) {
        match ev {
            Ev::Start => self.start_round(sched),
            Ev::Report(r, slot) if self.live(r, slot) => {
                self.resolved[slot as usize] = true;
                self.pending -= 1;
                self.reported.push(self.cohort[slot as usize]);
                let record = self.rounds.last_mut().expect("an open round");
                record.reports += 1;
                let quorum = self.policy.quorum.is_some_and(|q| record.reports >= q);
                if quorum || self.pending == 0 {
                    self.close(sched);
                }
            }
            Ev::Drop(r, slot) if self.live(r, slot) => {
                self.resolved[slot as usize] = true;
                self.pending -= 1;
                self.rounds.last_mut().expect("an open round").dropouts += 1;
                if self.pending == 0 {
                    self.close(sched);
                }
            }
            Ev::Deadline(r) if self.open && r == self.round() => self.close(sched),
            // Events of a round already closed.
            Ev::Report(..) | Ev::Drop(..) | Ev::Deadline(_) => {}
        }
    }
}
