//! The application: what the window holds between frames.
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
//! Its parts: `layout` (where everything goes on screen), `controls` (the control bar),
//! `opening` (the path field, dropped files, the command line) and `shown` (the worker's results
//! taken in).
//!
//! Deliberately left out: a native file dialog (see `path_field` for why), watching the file for
//! changes, more than two results kept, and persistence between sessions.

use crate::args::Args;
use crate::edited;
use crate::layout::Tab;
use crate::shown::Shown;
use crate::sweep_view::SweepView;
use crate::timeline::{TimelineState, View};
use crate::topology_view::TopologyState;
use crate::whatif::{self, WhatIf};
use crate::worker::{Request, RunError, Worker};
use egui::Ui;
use std::path::PathBuf;

pub struct App {
    /// The scenario path field.
    pub path: String,
    /// The overrides field: one `KEY=VALUE` per line.
    pub sets_text: String,
    pub(crate) worker: Worker,
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
    pub(crate) fit_next: bool,
    /// The window asked for on the command line, for the first result.
    pub(crate) initial_view: Option<View>,
    /// CPU time of the previous frame, as eframe measured it.
    pub(crate) last_frame_s: Option<f32>,
    /// `--compare`: overrides to add for a second run once the first is in.
    pub(crate) pending_compare: Vec<String>,
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
    use egui::Key;
    use std::time::Duration;

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
        let out = clustersim::run(&clustersim::Scenario::load(&scenario(), &[]).unwrap())
            .unwrap()
            .expanded();
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
        // Started: still running, or (a fast build) already shown.
        assert!(
            h.state().busy() || h.state().shown.is_some(),
            "a file picked from the matches runs"
        );
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
