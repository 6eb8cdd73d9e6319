//! The application: what the window holds between frames, and where everything goes on screen.
//!
//! State is the scenario path being edited, the `--set` overrides text, the last good result
//! (kept on screen when a later run fails) and the one before it (for the compare table), the last
//! error, the what-if fields, the loaded sweep, and the timeline's view. Runs go to the
//! [`Worker`]; "Open" runs the path in the field and fits the timeline to the new step (or loads a
//! sweep result when the path ends in .csv or .jsonl), "Re-run" (or F5) runs the shown scenario
//! again with the overrides as they are now and keeps the timeline where it was, so the effect of
//! an override can be compared in place. "Apply and re-run" in the what-if tab merges its fields
//! into the overrides and does the same.
//!
//! Layout: a control bar on top (path, Open, Re-run, spinner, status; the overrides under it), then
//! the scenario's name, a red panel for a failed run, the report cards, and tabs filling the rest:
//! Timeline, Metrics (plots), What-if (fields, compare table, save) and Sweep.
//!
//! Opening: the path field (Tab completes file names, `path_field`), files dropped on the window
//! (`egui`'s `dropped_files`: a scenario, a sweep result, or a saved run's report and trace
//! together), or the command line. A saved run (.json) is read back instead of simulated.
//! Deliberately left out: a native file dialog (see `path_field` for why), watching the file for
//! changes, more than two results kept, and persistence between sessions.

use crate::args::Args;
use crate::cards::{self, Summary};
use crate::plots::{self, Metrics};
use crate::sweep_view::{self, SweepView};
use crate::timeline::{self, TimelineState, View};
use crate::topology_view::{self, TopologyState};
use crate::whatif::{self, WhatIf};
use crate::worker::{Loaded, Outcome, Request, RunError, Worker};
use crate::{compare, edited, gpu_lanes, path_field, saved, units};
use egui::{Color32, Frame, Key, Margin, RichText, TextEdit, Ui};
use std::path::PathBuf;
use std::time::Duration;

/// The tabs under the cards.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tab {
    Timeline,
    Topology,
    Metrics,
    WhatIf,
    Sweep,
}

impl Tab {
    pub(crate) const ALL: [Tab; 5] = [
        Tab::Timeline,
        Tab::Topology,
        Tab::Metrics,
        Tab::WhatIf,
        Tab::Sweep,
    ];

    fn name(self) -> &'static str {
        match self {
            Tab::Timeline => "Timeline",
            Tab::Topology => "Topology",
            Tab::Metrics => "Metrics",
            Tab::WhatIf => "What-if & compare",
            Tab::Sweep => "Sweep",
        }
    }
}

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

pub struct App {
    /// The scenario path field.
    pub path: String,
    /// The overrides field: one `KEY=VALUE` per line.
    pub sets_text: String,
    worker: Worker,
    pub shown: Option<Shown>,
    /// The result shown before `shown`, for the compare table.
    pub previous: Option<Shown>,
    pub error: Option<RunError>,
    pub tab: Tab,
    /// The what-if fields of the shown run.
    pub whatif: Option<WhatIf>,
    pub sweep: SweepView,
    /// Where "Save edited scenario" writes, and what the last save did.
    pub save_path: String,
    pub save_status: Option<Result<String, String>>,
    pub(crate) timeline: TimelineState,
    pub(crate) topology: TopologyState,
    /// What a click on a GPU in the Topology tab found (its lanes, or why there are none).
    pub gpu_note: Option<String>,
    /// Whether the next result replaces the view (Open) or keeps it (Re-run).
    fit_next: bool,
    /// The window asked for on the command line, for the first result.
    initial_view: Option<View>,
    /// CPU time of the previous frame, as eframe measured it.
    pub(crate) last_frame_s: Option<f32>,
    /// `--compare`: overrides to add for a second run once the first is in.
    pending_compare: Vec<String>,
    /// The path field's completions after the last Tab, listed under the control bar.
    pub completions: Vec<String>,
}

/// The overrides field as `--set` values: one per line, blank lines and `#` comments skipped,
/// a leading `--set` tolerated (pasted from a shell command).
pub fn parse_sets(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .map(|l| l.strip_prefix("--set").map_or(l, str::trim_start))
        .map(|l| l.strip_prefix('=').unwrap_or(l).trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

impl App {
    /// An app that starts a run of `args.scenario` right away, if given.
    pub fn new(args: Args, worker: Worker) -> App {
        let mut app = App {
            path: args
                .scenario
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            sets_text: args.sets.join("\n"),
            worker,
            shown: None,
            previous: None,
            error: None,
            tab: Tab::Timeline,
            whatif: None,
            sweep: SweepView::default(),
            save_path: String::new(),
            save_status: None,
            timeline: TimelineState::default(),
            topology: TopologyState::default(),
            gpu_note: None,
            fit_next: true,
            initial_view: args.view.map(|(t0, t1)| View { t0, t1 }),
            last_frame_s: None,
            pending_compare: args.compare.clone(),
            completions: Vec::new(),
        };
        app.tab = match args.tab.as_deref() {
            Some("topology") => Tab::Topology,
            Some("metrics") => Tab::Metrics,
            Some("whatif") => Tab::WhatIf,
            Some("sweep") => Tab::Sweep,
            _ => Tab::Timeline,
        };
        match (&args.scenario, &args.also) {
            (Some(a), Some(b)) => app.open_files(&[a.clone(), b.clone()]),
            (Some(_), None) => app.open(),
            _ => {}
        }
        app
    }

    /// Runs the path in the field; the timeline will show the new step whole. A sweep result
    /// (.csv, .jsonl) is loaded into the sweep tab instead, a saved report or trace (.json) is read
    /// back.
    pub fn open(&mut self) {
        let path = self.path.trim();
        if path.is_empty() {
            return;
        }
        if sweep_view::is_sweep_path(path) {
            self.sweep.open(std::path::Path::new(path));
            self.tab = Tab::Sweep;
            return;
        }
        self.fit_next = true;
        let path = PathBuf::from(path);
        let request = if saved::is_saved_path(&path) {
            // Overrides are for scenarios; a saved run is shown as it was.
            Request::scenario(path, Vec::new())
        } else {
            Request::scenario(path, parse_sets(&self.sets_text))
        };
        self.worker.start(request);
    }

    /// Opens files dropped on the window (or named together on the command line): a scenario,
    /// a sweep result, or a saved run's report and trace (two .json files are read as one run).
    /// Anything else is refused with a message, and what is on screen stays.
    pub fn open_files(&mut self, files: &[PathBuf]) {
        let Some(first) = files.first() else { return };
        let json: Vec<&PathBuf> = files.iter().filter(|f| saved::is_saved_path(f)).collect();
        let refuse = |message: String| RunError {
            position: first.display().to_string(),
            message: format!(
                "error: {message}\n  = help: drop a scenario (.toml), a sweep result (.csv, \
                 .jsonl), or a saved report and its trace (.json, from `clustersim run --json` \
                 and `--trace`)"
            ),
        };
        if json.len() == files.len() {
            if files.len() > 2 {
                self.error = Some(refuse(format!(
                    "{} .json files at once: a saved run is one report and one trace",
                    files.len()
                )));
                return;
            }
            self.path = first.display().to_string();
            self.fit_next = true;
            let mut request = Request::scenario(first.clone(), Vec::new());
            request.also = files.get(1).cloned();
            self.worker.start(request);
            return;
        }
        if files.len() > 1 {
            self.error = Some(refuse(format!(
                "{} files at once: open one scenario or sweep result at a time",
                files.len()
            )));
            return;
        }
        let known = first
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["toml", "csv", "jsonl"].contains(&e.to_ascii_lowercase().as_str()));
        if !known {
            self.error = Some(refuse(format!(
                "{} is not a file the viewer opens",
                first.display()
            )));
            return;
        }
        self.path = first.display().to_string();
        self.open();
    }

    /// Merges the what-if fields into the overrides and runs again.
    pub fn apply_whatif(&mut self) {
        let Some(w) = &self.whatif else { return };
        let sets = w.sets();
        if sets.is_empty() {
            return;
        }
        self.sets_text = whatif::merge_sets(&self.sets_text, &sets);
        self.rerun();
    }

    /// The overrides a save would apply: the overrides field with the pending what-if fields.
    pub fn edited_sets(&self) -> Vec<String> {
        let pending = self.whatif.as_ref().map(WhatIf::sets).unwrap_or_default();
        parse_sets(&whatif::merge_sets(&self.sets_text, &pending))
    }

    /// Writes the shown scenario with [`App::edited_sets`] applied to `save_path`.
    pub fn save_edited(&mut self) {
        let Some(s) = &self.shown else { return };
        let Some(text) = &s.loaded.text else {
            self.save_status = Some(Err("the scenario's text is not available".into()));
            return;
        };
        let from = s.request.path.display().to_string();
        let target = PathBuf::from(self.save_path.trim());
        let result = edited::apply(text, &self.edited_sets(), &from).and_then(|body| {
            std::fs::write(&target, body)
                .map_err(|e| format!("cannot write {}: {e}", target.display()))
        });
        self.save_status = Some(result.map(|()| format!("saved {}", target.display())));
    }

    /// Runs the scenario on screen again with the current overrides, keeping the timeline's view.
    pub fn rerun(&mut self) {
        let Some(path) = self.shown.as_ref().map(|s| s.request.path.clone()) else {
            return self.open();
        };
        let also = self.shown.as_ref().and_then(|s| s.request.also.clone());
        self.fit_next = false;
        let mut request = Request::scenario(path, parse_sets(&self.sets_text));
        request.also = also;
        self.worker.start(request);
    }

    pub fn busy(&self) -> bool {
        self.worker.busy()
    }

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

    fn controls(&mut self, ui: &mut Ui) {
        ui.add_space(4.0);
        ui.horizontal(|ui| {
            let label = ui.label("Scenario");
            let field = ui
                .add(
                    TextEdit::singleline(&mut self.path)
                        .id_salt("path")
                        .hint_text("scenarios/training/gpt3-1.3b-8xh100.toml (Tab completes)")
                        .lock_focus(true)
                        .desired_width(420.0),
                )
                .labelled_by(label.id);
            if field.changed() {
                self.completions.clear();
            }
            if field.has_focus() && ui.input(|i| i.key_pressed(Key::Tab)) {
                self.complete_path(ui.ctx(), field.id);
            }
            let enter = field.lost_focus() && ui.input(|i| i.key_pressed(Key::Enter));
            if ui.button("Open").clicked() || enter {
                self.completions.clear();
                self.open();
            }
            let can_rerun = self.shown.is_some() || !self.path.trim().is_empty();
            if ui
                .add_enabled(can_rerun, egui::Button::new("Re-run"))
                .on_hover_text("Run the shown scenario again with the overrides below (F5)")
                .clicked()
            {
                self.rerun();
            }
            if self.busy() {
                ui.add(egui::Spinner::new());
                ui.label("running…");
            } else if let Some(s) = &self.shown {
                let verb = if s.request.is_saved() {
                    "read back"
                } else {
                    "simulated"
                };
                ui.weak(format!(
                    "{verb} {} operations in {}",
                    s.loaded.tracks.ops,
                    units::duration(s.wall.as_secs_f64())
                ));
            }
            if let Some(cpu) = self.last_frame_s {
                ui.weak(format!(
                    "· last frame drawn in {}",
                    units::duration(f64::from(cpu))
                ))
                .on_hover_text("CPU time of the previous frame (egui layout and painting)");
            }
        });
        self.completion_list(ui);
        ui.horizontal(|ui| {
            ui.label("Overrides")
                .on_hover_text("--set options: one KEY=VALUE per line, applied on Open and Re-run");
            ui.add(
                TextEdit::multiline(&mut self.sets_text)
                    .code_editor()
                    .desired_rows(2)
                    .desired_width(ui.available_width() - 8.0)
                    .hint_text("one KEY=VALUE per line, e.g. parallel.micro_batch=4"),
            );
        });
        ui.add_space(2.0);
    }

    /// Tab in the path field: extends the path as far as the matches agree, lists them.
    fn complete_path(&mut self, ctx: &egui::Context, field: egui::Id) {
        let cwd = std::env::current_dir().unwrap_or_default();
        let c = path_field::complete(&self.path, &cwd);
        self.path = c.text;
        self.completions = if c.candidates.len() > 1 {
            c.candidates
        } else {
            Vec::new()
        };
        // The cursor to the end of the completed text.
        if let Some(mut state) = egui::TextEdit::load_state(ctx, field) {
            let end = egui::text::CCursor::new(self.path.chars().count());
            state
                .cursor
                .set_char_range(Some(egui::text::CCursorRange::one(end)));
            state.store(ctx, field);
        }
    }

    /// The path field's matches as buttons: a directory continues the path, a file opens.
    fn completion_list(&mut self, ui: &mut Ui) {
        if self.completions.is_empty() {
            return;
        }
        const SHOWN: usize = 24;
        let mut picked = None;
        ui.horizontal_wrapped(|ui| {
            ui.weak("matches:");
            for c in self.completions.iter().take(SHOWN) {
                let name = c.rsplit_once('/').map_or(c.as_str(), |(_, n)| n);
                let name = if name.is_empty() {
                    // A directory: its own name, with the slash.
                    c.trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .map_or(c.clone(), |n| format!("{n}/"))
                } else {
                    name.to_string()
                };
                if ui.small_button(name).on_hover_text(c).clicked() {
                    picked = Some(c.clone());
                }
            }
            if self.completions.len() > SHOWN {
                ui.weak(format!("… {} more", self.completions.len() - SHOWN));
            }
        });
        if let Some(p) = picked {
            self.completions.clear();
            let dir = p.ends_with('/');
            self.path = p;
            if !dir {
                self.open();
            }
        }
    }

    /// Files dragged over the window are announced; dropped ones are opened.
    fn take_dropped_files(&mut self, ui: &Ui) {
        let (hovered, dropped) = ui.input(|i| {
            (
                i.raw.hovered_files.len(),
                i.raw
                    .dropped_files
                    .iter()
                    .map(|f| f.path().to_path_buf())
                    .collect::<Vec<_>>(),
            )
        });
        if !dropped.is_empty() {
            self.completions.clear();
            self.open_files(&dropped);
        }
        if hovered > 0 {
            let painter = ui.ctx().layer_painter(egui::LayerId::new(
                egui::Order::Foreground,
                ui.scope_id().with("drop"),
            ));
            let screen = ui.ctx().content_rect();
            painter.rect_filled(screen, 0.0, Color32::from_black_alpha(160));
            painter.text(
                screen.center(),
                egui::Align2::CENTER_CENTER,
                if hovered == 1 {
                    "Drop to open: a scenario, a sweep result, or a saved report or trace".into()
                } else {
                    format!("Drop {hovered} files: a saved run's report and trace go together")
                },
                egui::FontId::proportional(20.0),
                Color32::WHITE,
            );
        }
    }

    fn error_panel(&mut self, ui: &mut Ui) {
        let Some(err) = &self.error else { return };
        let dark = ui.visuals().dark_mode;
        let (fill, ink) = if dark {
            (
                Color32::from_rgb(70, 20, 22),
                Color32::from_rgb(255, 170, 170),
            )
        } else {
            (
                Color32::from_rgb(255, 228, 228),
                Color32::from_rgb(150, 0, 0),
            )
        };
        let mut dismiss = false;
        Frame::new()
            .fill(fill)
            .stroke((1.0, Color32::from_rgb(200, 60, 60)))
            .corner_radius(4)
            .inner_margin(Margin::same(8))
            .show(ui, |ui| {
                ui.set_width(ui.available_width());
                ui.horizontal(|ui| {
                    ui.label(
                        RichText::new(format!("Run failed: {}", err.position))
                            .color(ink)
                            .strong(),
                    );
                    if let Some(s) = &self.shown {
                        ui.label(
                            RichText::new(format!(
                                "(still showing the last good result, {})",
                                s.request.path.display()
                            ))
                            .color(ink),
                        );
                    }
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        dismiss = ui.small_button("Dismiss").clicked();
                    });
                });
                ui.label(RichText::new(&err.message).monospace().color(ink));
            });
        if dismiss {
            self.error = None;
        }
        ui.add_space(4.0);
    }
}

impl App {
    /// The whole window's contents (everything but the frame timing, which eframe measures).
    pub fn show(&mut self, ui: &mut Ui) {
        self.poll();
        self.take_dropped_files(ui);
        if ui.input(|i| i.key_pressed(Key::F5)) {
            self.rerun();
        }
        egui::Panel::top("controls").show(ui, |ui| self.controls(ui));
        egui::CentralPanel::default().show(ui, |ui| {
            if let Some(s) = &self.shown
                && self.tab != Tab::Sweep
            {
                ui.horizontal(|ui| {
                    ui.heading(
                        s.summary
                            .scenario
                            .clone()
                            .unwrap_or_else(|| "scenario".into()),
                    );
                    let sets = if s.request.sets.is_empty() {
                        String::new()
                    } else {
                        format!("  --set {}", s.request.sets.join(" --set "))
                    };
                    let also = s
                        .request
                        .also
                        .as_ref()
                        .map(|a| format!(" + {}", a.display()))
                        .unwrap_or_default();
                    ui.weak(format!("{}{also}{sets}", s.request.path.display()));
                });
            }
            self.error_panel(ui);
            if self.tab != Tab::Sweep
                && let Some(s) = &self.shown
            {
                cards::show(ui, &s.summary);
            }
            ui.horizontal(|ui| {
                for t in Tab::ALL {
                    ui.selectable_value(&mut self.tab, t, t.name());
                }
            });
            ui.separator();
            if self.tab == Tab::Sweep {
                sweep_view::show(ui, &mut self.sweep);
                return;
            }
            if self.shown.is_none() {
                if self.busy() {
                    ui.centered_and_justified(|ui| {
                        ui.add(egui::Spinner::new().size(32.0));
                    });
                } else {
                    ui.centered_and_justified(|ui| {
                        ui.weak(
                            "Type the path of a scenario file (Tab completes), a sweep result or a \
                             saved report or trace above and press Open, or drop one on the window.",
                        );
                    });
                }
                return;
            }
            match self.tab {
                Tab::Timeline => {
                    self.gpu_note_bar(ui);
                    let s = self.shown.as_ref().expect("checked above");
                    if s.loaded.tracks.ops == 0 {
                        ui.weak(
                            "No operations to show: this is a saved report without its trace. \
                             Drop the report and its trace (clustersim run --trace) together, \
                             or open the scenario.",
                        );
                    } else {
                        timeline::show(ui, &mut self.timeline, &s.loaded.tracks, &s.loaded.graph);
                    }
                }
                Tab::Topology => {
                    self.gpu_note_bar(ui);
                    let s = self.shown.as_ref().expect("checked above");
                    let clicked = match &s.loaded.topology.layout {
                        Ok(layout) => topology_view::show(
                            ui,
                            &mut self.topology,
                            layout,
                            s.loaded.topology.traffic.as_ref(),
                        ),
                        Err(e) => {
                            ui.label(format!("No topology to draw for this run: {e}"));
                            None
                        }
                    };
                    if let Some(rank) = clicked {
                        self.jump_to_gpu(rank);
                    }
                }
                Tab::Metrics => {
                    let s = self.shown.as_ref().expect("checked above");
                    plots::show(ui, &s.metrics, s.loaded.throughput.as_ref());
                }
                Tab::WhatIf => self.whatif_tab(ui),
                Tab::Sweep => {}
            }
        });
    }

    /// Shows GPU `rank`'s lanes on the Timeline tab (or its stand-in's), saying which they are;
    /// when the timeline has none for it, stays and says why.
    pub fn jump_to_gpu(&mut self, rank: u32) {
        let Some(s) = &self.shown else { return };
        let found = gpu_lanes::locate(rank, s.loaded.topology.stands, &s.loaded.tracks.tracks);
        match found {
            Ok(lanes) => {
                self.gpu_note = Some(lanes.note());
                self.timeline.scroll_to = Some(lanes.tracks.start);
                self.timeline.highlight = Some(lanes.tracks);
                self.tab = Tab::Timeline;
            }
            Err(why) => self.gpu_note = Some(why),
        }
    }

    /// The note left by a click on a GPU, with a button to clear it.
    fn gpu_note_bar(&mut self, ui: &mut Ui) {
        let Some(note) = &self.gpu_note else { return };
        let mut clear = false;
        ui.horizontal(|ui| {
            ui.label(RichText::new(note).strong());
            clear = ui.small_button("Clear").clicked();
        });
        if clear {
            self.gpu_note = None;
            self.timeline.highlight = None;
        }
    }

    /// Fields and save on the left, the compare table on the right.
    fn whatif_tab(&mut self, ui: &mut Ui) {
        let mut apply = false;
        let mut save = false;
        ui.columns(2, |cols| {
            let ui = &mut cols[0];
            ui.strong("What if");
            if let Some(w) = &mut self.whatif {
                apply = whatif::show(ui, w) == whatif::Action::Apply;
            }
            ui.add_space(10.0);
            ui.separator();
            ui.strong("Save the edited scenario");
            let sets = self.edited_sets();
            ui.label(
                RichText::new(format!(
                    "Writes the scenario with {} override{} applied. Comments and the original \
                     layout are not kept (keys are rewritten in order).",
                    sets.len(),
                    if sets.len() == 1 { "" } else { "s" }
                ))
                .small()
                .weak(),
            );
            ui.horizontal(|ui| {
                let l = ui.label("to");
                ui.add(TextEdit::singleline(&mut self.save_path).desired_width(300.0))
                    .labelled_by(l.id);
                save = ui.button("Save edited scenario").clicked();
            });
            match &self.save_status {
                Some(Ok(m)) => {
                    ui.label(RichText::new(m).color(compare::BETTER));
                }
                Some(Err(e)) => {
                    ui.label(RichText::new(e).color(compare::WORSE));
                }
                None => {}
            }

            let ui = &mut cols[1];
            ui.strong("Compare with the previous run");
            match (&self.previous, &self.shown) {
                (Some(p), Some(c)) => {
                    let rows = compare::rows(&p.loaded.report, &c.loaded.report);
                    compare::show(ui, &p.title(), &c.title(), &rows);
                }
                _ => {
                    ui.weak(
                        "Re-run with a change (Apply and re-run, or F5) to compare with this run.",
                    );
                }
            }
        });
        if apply {
            self.apply_whatif();
        }
        if save {
            self.save_edited();
        }
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut Ui, frame: &mut eframe::Frame) {
        self.last_frame_s = frame.info().cpu_usage;
        self.show(ui);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/training/gpt3-1.3b-8xh100.toml")
    }

    /// The whole window over `app`, headless, at the screenshots' size.
    fn window(app: App) -> egui_kittest::Harness<'static, App> {
        let mut h = egui_kittest::Harness::new_ui_state(|ui, app: &mut App| app.show(ui), app);
        h.set_size(egui::vec2(1400.0, 900.0));
        h
    }

    /// Waits for the run in flight (none: a frame's poll already took its result in).
    fn finish(app: &mut App) {
        assert!(app.finish(Duration::from_secs(120)), "the run finishes");
    }

    #[test]
    fn overrides_field_reads_one_per_line() {
        let text = "parallel.micro_batch=4\n\n  # a comment\n--set cluster.nodes=2\n --set=a=b \n";
        assert_eq!(
            parse_sets(text),
            ["parallel.micro_batch=4", "cluster.nodes=2", "a=b"]
        );
        assert!(parse_sets("").is_empty());
    }

    #[test]
    fn a_failed_rerun_keeps_the_last_good_result_on_screen() {
        let args = Args {
            scenario: Some(scenario()),
            view: Some((0.0, 2e-3)),
            ..Args::default()
        };
        let mut app = App::new(args, Worker::new(|| {}));
        assert!(app.busy());
        finish(&mut app);
        let first = app.shown.as_ref().expect("a result").summary.clone();
        assert!(app.error.is_none());
        // The command line's window is applied to the first result.
        assert_eq!(app.timeline.view, Some(View { t0: 0.0, t1: 2e-3 }));

        app.sets_text = "parallel.micro_batch=zero".into();
        app.rerun();
        finish(&mut app);
        let err = app.error.as_ref().expect("the override is refused");
        assert!(err.position.contains("--set"), "{}", err.position);
        assert_eq!(app.shown.as_ref().unwrap().summary, first);
        // Re-run keeps the view.
        assert_eq!(app.timeline.view, Some(View { t0: 0.0, t1: 2e-3 }));

        // A good override replaces the result and clears the error.
        app.sets_text = "parallel.micro_batch=4".into();
        app.rerun();
        finish(&mut app);
        assert!(app.error.is_none());
        let shown = app.shown.as_ref().unwrap();
        assert_eq!(shown.request.sets, ["parallel.micro_batch=4"]);
        assert_eq!(shown.loaded.report["parallel"]["micro_batch"], 4);
    }

    #[test]
    fn compare_on_the_command_line_runs_twice() {
        let args = Args {
            scenario: Some(scenario()),
            compare: vec!["parallel.micro_batch=4".into()],
            tab: Some("whatif".into()),
            ..Args::default()
        };
        let mut app = App::new(args, Worker::new(|| {}));
        assert_eq!(app.tab, Tab::WhatIf);
        finish(&mut app);
        assert!(app.busy(), "the second run started once the first was in");
        finish(&mut app);
        let (p, c) = (app.previous.as_ref().unwrap(), app.shown.as_ref().unwrap());
        assert!(p.request.sets.is_empty());
        assert_eq!(c.request.sets, ["parallel.micro_batch=4"]);
        assert_eq!(app.sets_text, "parallel.micro_batch=4");
    }

    #[test]
    fn open_fits_the_timeline_to_the_new_step() {
        let mut app = App::new(Args::default(), Worker::new(|| {}));
        assert!(!app.busy(), "nothing to run without a scenario");
        app.timeline.view = Some(View { t0: 0.1, t1: 0.2 });
        app.path = scenario().display().to_string();
        app.open();
        finish(&mut app);
        assert_eq!(app.timeline.view, None, "None shows the whole step");
    }

    /// The window as a person uses it, headless: metrics tab, a what-if that makes the step
    /// slower, the compare table marking it worse, saving, and a sweep opened from the path field.
    #[test]
    fn the_window_runs_a_whatif_and_compares() {
        use egui_kittest::kittest::{NodeT, Queryable};
        let args = Args {
            scenario: Some(scenario()),
            ..Args::default()
        };
        let mut app = App::new(args, Worker::new(|| {}));
        finish(&mut app);
        let mut h = window(app);
        h.run();
        // The timeline is the first tab; the metrics tab has the plots.
        h.get_by_label("Metrics").click();
        h.run();
        h.get_by_label("Step breakdown");
        h.get_by_label_contains("of 80.0 GiB capacity");

        h.get_by_label("What-if & compare").click();
        h.run();
        h.get_by_label_contains("Re-run with a change");
        h.state_mut()
            .whatif
            .as_mut()
            .unwrap()
            .set("parallel.recompute", "full");
        h.run();
        h.get_by_label("--set parallel.recompute=full");
        h.get_by_label("Apply and re-run").click();
        // The spinner repaints while the worker runs: step, don't wait for the ui to settle.
        h.run_steps(2);
        finish(h.state_mut());
        h.run();
        assert_eq!(h.state().sets_text, "parallel.recompute=full");
        assert_eq!(
            h.state().shown.as_ref().unwrap().loaded.report["parallel"]["recompute"],
            "full"
        );
        // Full recomputation is slower: the iteration time's change is marked worse.
        h.get_by_label("iteration time");
        let worse: Vec<String> = h
            .root()
            .children_recursive()
            .filter(|n| n.accesskit_node().role() == egui::accesskit::Role::Label)
            .filter_map(|n| n.accesskit_node().value())
            .filter(|v| v.ends_with("% worse"))
            .collect();
        // Slower step, fewer tokens/s, lower MFU.
        assert_eq!(worse.len(), 3, "{worse:?}");
        assert!(worse[0].starts_with('+'), "{worse:?}");

        // Save the edited scenario; it loads with recompute = full.
        let dir = std::env::temp_dir().join(format!("clustersim-gui-app-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let saved = dir.join("edited.toml");
        h.state_mut().save_path = saved.display().to_string();
        h.get_by_label("Save edited scenario").click();
        h.run();
        h.get_by_label(&format!("saved {}", saved.display()));
        let reloaded = clustersim::Scenario::load(&saved, &[]).unwrap();
        let report = clustersim::run(&reloaded).unwrap().report;
        assert_eq!(report["parallel"]["recompute"], "full");

        // A sweep result opens in the sweep tab from the path field.
        let csv = dir.join("grid.csv");
        std::fs::write(
            &csv,
            "point,points,parallel.tp,status,error,mfu\n0,2,1,ok,,0.5\n1,2,2,error,bad,\n",
        )
        .unwrap();
        h.state_mut().path = csv.display().to_string();
        h.state_mut().open();
        h.run();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(h.state().tab, Tab::Sweep);
        h.get_by_label("varied keys:");
        h.get_by_label("1 of 2 points failed (status error), not plotted");
    }

    /// A saved run dropped on the window: its report and trace together open as one run (the
    /// timeline from the trace, no topology); a broken file dropped next is located at its line
    /// and column while the saved run stays; a file of another kind is refused.
    #[test]
    fn dropped_files_open_a_saved_run_and_errors_keep_it() {
        use egui_kittest::Harness;
        use egui_kittest::kittest::Queryable;
        let dir = std::env::temp_dir().join(format!("clustersim-gui-drop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = clustersim::run(&clustersim::Scenario::load(&scenario(), &[]).unwrap()).unwrap();
        let (report, trace) = (dir.join("run.json"), dir.join("run.trace.json"));
        std::fs::write(&report, serde_json::to_string(&out.report).unwrap()).unwrap();
        let mut bytes = Vec::new();
        clustersim::report::write_chrome_trace(&out.graph, &out.timeline, &mut bytes).unwrap();
        std::fs::write(&trace, bytes).unwrap();
        let broken = dir.join("broken.json");
        std::fs::write(&broken, "{\n  \"kind\": \"training\",\n  oops\n}\n").unwrap();

        let app = App::new(Args::default(), Worker::new(|| {}));
        let mut h = window(app);
        #[derive(Debug)]
        struct Dropped(PathBuf);
        impl egui::DroppedFile for Dropped {
            fn path(&self) -> &std::path::Path {
                &self.0
            }
            fn bytes(&self) -> Result<Vec<u8>, String> {
                std::fs::read(&self.0).map_err(|e| e.to_string())
            }
        }
        let drop = |h: &mut Harness<'_, App>, files: &[&PathBuf]| {
            h.input_mut().dropped_files = files
                .iter()
                .map(|&p| std::sync::Arc::new(Dropped(p.clone())) as egui::DroppedFileHandle)
                .collect();
            h.run_steps(2);
            finish(h.state_mut());
            h.run();
        };
        // Trace first, report second: which is which is read from the contents.
        drop(&mut h, &[&trace, &report]);
        let shown = h.state().shown.as_ref().expect("the saved run is shown");
        assert_eq!(shown.request.also.as_ref(), Some(&report));
        assert_eq!(shown.loaded.tracks.ops, out.graph.len());
        assert_eq!(shown.loaded.report, out.report);
        assert!(h.state().error.is_none());
        h.get_by_label_contains(&format!("read back {} operations in", out.graph.len()));
        h.get_by_label("Topology").click();
        h.run();
        h.get_by_label_contains("a saved report does not hold the cluster's wiring");

        drop(&mut h, &[&broken]);
        let err = h
            .state()
            .error
            .as_ref()
            .expect("the broken file is refused");
        assert_eq!(err.position, format!("{}:3:3", broken.display()));
        h.get_by_label(&format!("Run failed: {}:3:3", broken.display()));
        h.get_by_label_contains("still showing the last good result");
        assert_eq!(
            h.state().shown.as_ref().unwrap().loaded.tracks.ops,
            out.graph.len()
        );

        let notes = dir.join("notes.txt");
        drop(&mut h, &[&notes]);
        let err = h.state().error.as_ref().unwrap();
        assert!(
            err.message.contains("not a file the viewer opens"),
            "{}",
            err.message
        );
        // A report alone: cards, and the timeline says the trace is missing.
        drop(&mut h, &[&report]);
        h.get_by_label("Timeline").click();
        h.run();
        h.get_by_label_contains("a saved report without its trace");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Tab in the path field completes the file name, Enter runs it.
    #[test]
    fn tab_completes_the_path_field() {
        use egui_kittest::kittest::Queryable;
        let app = App::new(Args::default(), Worker::new(|| {}));
        let mut h = window(app);
        h.run();
        // Tests run in the crate's directory.
        let field = h.get_by_role_and_label(egui::accesskit::Role::TextInput, "Scenario");
        field.focus();
        field.type_text("../scenarios/training/gpt3-1");
        h.run();
        h.key_press(Key::Tab);
        h.run();
        assert_eq!(h.state().path, "../scenarios/training/gpt3-1");
        assert!(
            h.state().completions.len() >= 3,
            "{:?}",
            h.state().completions
        );
        h.get_by_label("matches:");
        h.get_by_label("gpt3-1.3b-8xh100.toml").click();
        h.run_steps(2);
        assert_eq!(
            h.state().path,
            "../scenarios/training/gpt3-1.3b-8xh100.toml"
        );
        assert!(h.state().busy(), "a file picked from the matches runs");
        finish(h.state_mut());
        assert!(h.state().shown.is_some());
    }

    /// Clicking GPU 5 of the one-server GPT-3 1.3B run (no pipeline): GPU 0's lanes stand for it;
    /// the Topology tab draws the server.
    #[test]
    fn a_gpu_picked_on_the_topology_opens_its_lanes() {
        use egui_kittest::kittest::Queryable;
        let args = Args {
            scenario: Some(scenario()),
            tab: Some("topology".into()),
            ..Args::default()
        };
        let mut app = App::new(args, Worker::new(|| {}));
        finish(&mut app);
        let mut h = window(app);
        h.run();
        h.get_by_label("1 server · 8 GPUs (8 per server)");
        h.get_by_label("no network switches (one server)");
        h.state_mut().jump_to_gpu(5);
        h.run();
        let app = h.state();
        assert_eq!(app.tab, Tab::Timeline);
        let note = app.gpu_note.as_deref().unwrap();
        assert!(note.contains("GPU 0 stands for it"), "{note}");
        assert_eq!(
            app.timeline.highlight,
            Some(0..app.shown.as_ref().unwrap().loaded.tracks.tracks.len())
        );
        h.get_by_label(note);
    }
}
