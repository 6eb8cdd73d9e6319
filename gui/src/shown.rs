//! A result on screen, and taking in what the worker finished: a result replaces the one shown
//! (kept as the previous one, for the compare table), an error is shown above it.

use crate::app::App;
use crate::cards::Summary;
use crate::edited;
use crate::metrics::Metrics;
use crate::timeline::TimelineState;
use crate::topology_view::TopologyState;
use crate::whatif::{self, WhatIf};
use crate::worker::{Loaded, Outcome, Request};
use std::time::Duration;

/// A result on screen.
pub struct Shown {
    pub request: Request,
    pub loaded: Loaded,
    pub summary: Summary,
    pub metrics: Metrics,
    pub wall: Duration,
}

impl Shown {
    /// What the run was: "path --set a=1 --set b=2".
    pub fn title(&self) -> String {
        let mut t = self.request.path.display().to_string();
        if let Some(also) = &self.request.also {
            t.push_str(&format!(" + {}", also.display()));
        }
        for s in &self.request.sets {
            t.push_str(&format!(" --set {s}"));
        }
        t
    }
}

impl App {
    /// Waits up to `timeout` for the run in flight and takes its result in (headless tests);
    /// false when it did not finish in time.
    #[cfg(test)]
    pub(crate) fn finish(&mut self, timeout: Duration) -> bool {
        if !self.busy() {
            return true;
        }
        match self.worker.wait(timeout) {
            Some(outcome) => {
                self.accept(outcome);
                true
            }
            None => false,
        }
    }

    /// Takes in a finished run: a result replaces the one shown, an error is shown above it.
    pub fn accept(&mut self, outcome: Outcome) {
        match outcome.result {
            Ok(loaded) => {
                let summary = Summary::from_report(&loaded.report);
                let metrics = Metrics::from_report(&loaded.report);
                if self.fit_next {
                    self.timeline = TimelineState::showing(self.initial_view.take());
                    self.topology = TopologyState::default();
                }
                self.gpu_note = None;
                let table = loaded
                    .text
                    .as_deref()
                    .and_then(|t| edited::table(t, &outcome.request.sets).ok());
                self.whatif = Some(WhatIf::new(&loaded.report, table.as_ref()));
                let new_file = self
                    .shown
                    .as_ref()
                    .is_none_or(|s| s.request.path != outcome.request.path);
                if new_file || self.save_path.trim().is_empty() {
                    self.save_path = edited::default_path(&outcome.request.path)
                        .display()
                        .to_string();
                    self.save_status = None;
                }
                self.previous = self.shown.take();
                self.shown = Some(Shown {
                    request: outcome.request,
                    loaded,
                    summary,
                    metrics,
                    wall: outcome.wall,
                });
                self.error = None;
                if !self.pending_compare.is_empty() {
                    let sets = std::mem::take(&mut self.pending_compare);
                    self.sets_text = whatif::merge_sets(&self.sets_text, &sets);
                    self.rerun();
                }
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Takes in whatever the worker has finished.
    pub fn poll(&mut self) {
        if let Some(outcome) = self.worker.poll() {
            self.accept(outcome);
        }
    }
}
