//! The application: what the window holds between frames, and where everything goes on screen.
//!
//! State is the scenario path being edited, the `--set` overrides text, the last good result
//! (kept on screen when a later run fails), the last error, and the timeline's view. Runs go to
//! the [`Worker`]; "Open" runs the path in the field and fits the timeline to the new step,
//! "Re-run" (or F5) runs the shown scenario again with the overrides as they are now and keeps the
//! timeline where it was, so the effect of an override can be compared in place.
//!
//! Layout: a control bar on top (path, Open, Re-run, spinner, status; the overrides under it), then
//! the scenario's name, a red panel for a failed run, the report cards, and the timeline filling
//! the rest. Deliberately left out: file dialogs (no extra dependency for a text field's job),
//! watching the file for changes, several results side by side, and persistence between sessions.

use crate::args::Args;
use crate::cards::{self, Summary};
use crate::timeline::{self, TimelineState, View};
use crate::units;
use crate::worker::{Loaded, Outcome, Request, RunError, Worker};
use egui::{Color32, Frame, Key, Margin, RichText, TextEdit, Ui};
use std::path::PathBuf;
use std::time::Duration;

/// A result on screen.
pub struct Shown {
    pub request: Request,
    pub loaded: Loaded,
    pub summary: Summary,
    pub wall: Duration,
}

pub struct App {
    /// The scenario path field.
    pub path: String,
    /// The overrides field: one `KEY=VALUE` per line.
    pub sets_text: String,
    worker: Worker,
    pub shown: Option<Shown>,
    pub error: Option<RunError>,
    timeline: TimelineState,
    /// Whether the next result replaces the view (Open) or keeps it (Re-run).
    fit_next: bool,
    /// The window asked for on the command line, for the first result.
    initial_view: Option<View>,
    /// CPU time of the previous frame, as eframe measured it.
    last_frame_s: Option<f32>,
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
            error: None,
            timeline: TimelineState::default(),
            fit_next: true,
            initial_view: args.view.map(|(t0, t1)| View { t0, t1 }),
            last_frame_s: None,
        };
        if args.scenario.is_some() {
            app.open();
        }
        app
    }

    /// Runs the path in the field; the timeline will show the new step whole.
    pub fn open(&mut self) {
        let path = self.path.trim();
        if path.is_empty() {
            return;
        }
        self.fit_next = true;
        self.worker.start(Request {
            path: PathBuf::from(path),
            sets: parse_sets(&self.sets_text),
        });
    }

    /// Runs the scenario on screen again with the current overrides, keeping the timeline's view.
    pub fn rerun(&mut self) {
        let Some(path) = self.shown.as_ref().map(|s| s.request.path.clone()) else {
            return self.open();
        };
        self.fit_next = false;
        self.worker.start(Request {
            path,
            sets: parse_sets(&self.sets_text),
        });
    }

    pub fn busy(&self) -> bool {
        self.worker.busy()
    }

    /// Takes in a finished run: a result replaces the one shown, an error is shown above it.
    pub fn accept(&mut self, outcome: Outcome) {
        match outcome.result {
            Ok(loaded) => {
                let summary = Summary::from_report(&loaded.report);
                if self.fit_next {
                    self.timeline = TimelineState::showing(self.initial_view.take());
                }
                self.shown = Some(Shown {
                    request: outcome.request,
                    loaded,
                    summary,
                    wall: outcome.wall,
                });
                self.error = None;
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
            ui.label("Scenario");
            let field = ui.add(
                TextEdit::singleline(&mut self.path)
                    .hint_text("scenarios/training/gpt3-1.3b-8xh100.toml")
                    .desired_width(420.0),
            );
            let enter = field.lost_focus() && ui.input(|i| i.key_pressed(Key::Enter));
            if ui.button("Open").clicked() || enter {
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
                ui.weak(format!(
                    "simulated {} operations in {}",
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

impl eframe::App for App {
    fn ui(&mut self, ui: &mut Ui, frame: &mut eframe::Frame) {
        self.last_frame_s = frame.info().cpu_usage;
        self.poll();
        if ui.input(|i| i.key_pressed(Key::F5)) {
            self.rerun();
        }
        egui::Panel::top("controls").show(ui, |ui| self.controls(ui));
        egui::CentralPanel::default().show(ui, |ui| {
            if let Some(s) = &self.shown {
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
                    ui.weak(format!("{}{sets}", s.request.path.display()));
                });
            }
            self.error_panel(ui);
            match &self.shown {
                Some(s) => {
                    cards::show(ui, &s.summary);
                    ui.separator();
                    timeline::show(ui, &mut self.timeline, &s.loaded.tracks, &s.loaded.graph);
                }
                None if self.busy() => {
                    ui.centered_and_justified(|ui| {
                        ui.add(egui::Spinner::new().size(32.0));
                    });
                }
                None => {
                    ui.centered_and_justified(|ui| {
                        ui.weak("Type the path of a scenario file above and press Open.");
                    });
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/training/gpt3-1.3b-8xh100.toml")
    }

    fn finish(app: &mut App) {
        let outcome = app
            .worker
            .wait(Duration::from_secs(120))
            .expect("the run finishes");
        app.accept(outcome);
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
    fn open_fits_the_timeline_to_the_new_step() {
        let mut app = App::new(Args::default(), Worker::new(|| {}));
        assert!(!app.busy(), "nothing to run without a scenario");
        app.timeline.view = Some(View { t0: 0.1, t1: 0.2 });
        app.path = scenario().display().to_string();
        app.open();
        finish(&mut app);
        assert_eq!(app.timeline.view, None, "None shows the whole step");
    }
}
