//! The control bar on top of the window: the path field (Tab completes file names with
//! `path_field`, its matches listed under it), Open, Re-run, the run's status and the overrides.

use crate::app::App;
use crate::{path_field, units};
use egui::{Key, TextEdit, Ui};

impl App {
    pub(crate) fn controls(&mut self, ui: &mut Ui) {
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
}
