//! Where everything goes on screen: a control bar on top (path, Open, Re-run, spinner, status;
//! the overrides under it), then the scenario's name, a red panel for a failed run, the report
//! cards, and tabs filling the rest: Timeline, Topology, Metrics (plots), What-if (fields, compare
//! table, save) and Sweep.

use crate::app::App;
use crate::{cards, compare, gpu_lanes, plots, sweep_view, timeline, topology_view, whatif};
use egui::{Color32, Frame, Key, Margin, RichText, TextEdit, Ui};

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
