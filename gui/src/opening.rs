//! Opening files: the path in the field, files dropped on the window (`egui`'s `dropped_files`: a
//! scenario, a sweep result, or a saved run's report and trace together), or the command line.
//! A saved run (.json) is read back instead of simulated; a sweep result opens in the Sweep tab.

use crate::app::{App, parse_sets};
use crate::layout::Tab;
use crate::worker::{Request, RunError};
use crate::{saved, sweep_view};
use egui::{Color32, Ui};
use std::path::PathBuf;

impl App {
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

    /// Files dragged over the window are announced; dropped ones are opened.
    pub(crate) fn take_dropped_files(&mut self, ui: &Ui) {
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
}
