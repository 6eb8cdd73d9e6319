//! The what-if panel: the main knobs of the shown scenario's kind as fields, turned into `--set`
//! overrides.
//!
//! Knobs: training: GPU, nodes, tp/pp/dp/cp/ep, micro-batch, recompute, NIC bandwidth; serving:
//! GPU, replicas, tp, pp, arrival rate, scheduler, batch limits, prefill and decode replicas;
//! diffusion: ulysses, ring, pipefusion, cfg, resolution, frames, steps; collective: GPU, nodes,
//! operation, size, algorithm, NIC bandwidth. Each
//! field starts at the value the shown run used (the report's resolved value, else the scenario
//! file's with the run's overrides), and only fields that differ from it become `--set` lines
//! ([`WhatIf::sets`]). Those lines are merged into the overrides text ([`merge_sets`]: a line with
//! the same key is replaced), so a what-if run is exactly a run with the overrides field edited.
//! For training, "dp follows" keeps the GPU count: when nodes, tp, pp or cp change, dp becomes
//! GPUs / (tp × pp × cp) when that divides (otherwise dp is left alone and the simulator explains).
//! Deliberately left out: validation here (the simulator refuses bad values with located errors,
//! shown in the error panel), and knobs beyond the main ones (the overrides field takes any key).

use crate::edited;
use egui::{ComboBox, RichText, TextEdit, Ui};
use serde_json::Value;

/// How a knob is edited.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Input {
    /// A positive integer.
    Count,
    /// Free text (quantities with units).
    Text,
    /// One of a few words.
    Choice(&'static [&'static str]),
    /// A GPU of the catalog (or any name typed).
    Gpu,
}

/// One knob: the dotted key it sets, its label, where the report says its value.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Knob {
    pub key: &'static str,
    pub label: &'static str,
    /// JSON pointer of the resolved value in the report, if the report has it.
    pub report: Option<&'static str>,
    pub input: Input,
}

const fn k(
    key: &'static str,
    label: &'static str,
    report: Option<&'static str>,
    input: Input,
) -> Knob {
    Knob {
        key,
        label,
        report,
        input,
    }
}

const TRAINING: &[Knob] = &[
    k("cluster.gpu", "GPU", Some("/cluster/gpu"), Input::Gpu),
    k(
        "cluster.nodes",
        "nodes",
        Some("/cluster/nodes"),
        Input::Count,
    ),
    k(
        "parallel.tp",
        "tensor parallel (tp)",
        Some("/parallel/tp"),
        Input::Count,
    ),
    k(
        "parallel.pp",
        "pipeline parallel (pp)",
        Some("/parallel/pp"),
        Input::Count,
    ),
    k(
        "parallel.dp",
        "data parallel (dp)",
        Some("/parallel/dp"),
        Input::Count,
    ),
    k(
        "parallel.cp",
        "context parallel (cp)",
        Some("/parallel/cp"),
        Input::Count,
    ),
    k(
        "parallel.ep",
        "expert parallel (ep)",
        Some("/parallel/ep"),
        Input::Count,
    ),
    k(
        "parallel.micro_batch",
        "micro-batch",
        Some("/parallel/micro_batch"),
        Input::Count,
    ),
    k(
        "parallel.recompute",
        "recompute",
        Some("/parallel/recompute"),
        Input::Choice(&["none", "selective", "op", "full"]),
    ),
    k(
        "cluster.inter_node.nic_bandwidth",
        "NIC bandwidth",
        None,
        Input::Text,
    ),
];

const SERVING: &[Knob] = &[
    k("cluster.gpu", "GPU", Some("/cluster/gpu"), Input::Gpu),
    k(
        "serving.replicas",
        "replicas",
        Some("/cluster/replicas"),
        Input::Count,
    ),
    k(
        "serving.tp",
        "tensor parallel (tp)",
        Some("/cluster/tp"),
        Input::Count,
    ),
    k(
        "serving.pp",
        "pipeline parallel (pp)",
        Some("/cluster/pp"),
        Input::Count,
    ),
    k("workload.rate", "arrival rate", None, Input::Text),
    k(
        "serving.scheduler",
        "scheduler",
        Some("/serving/scheduler"),
        Input::Choice(&["vllm", "sarathi", "static"]),
    ),
    k(
        "serving.max_batch_size",
        "batch limit (requests)",
        Some("/serving/max_batch_size"),
        Input::Count,
    ),
    k(
        "serving.max_batch_tokens",
        "batch limit (tokens)",
        Some("/serving/max_batch_tokens"),
        Input::Count,
    ),
    k(
        "serving.disaggregation.prefill_replicas",
        "prefill replicas (disaggregated)",
        Some("/disaggregation/prefill_replicas"),
        Input::Count,
    ),
    k(
        "serving.disaggregation.decode_replicas",
        "decode replicas (disaggregated)",
        Some("/disaggregation/decode_replicas"),
        Input::Count,
    ),
];

const DIFFUSION: &[Knob] = &[
    k(
        "parallel.ulysses",
        "Ulysses",
        Some("/parallel/ulysses"),
        Input::Count,
    ),
    k(
        "parallel.ring",
        "Ring",
        Some("/parallel/ring"),
        Input::Count,
    ),
    k(
        "parallel.pipefusion",
        "PipeFusion",
        Some("/parallel/pipefusion"),
        Input::Count,
    ),
    k("parallel.cfg", "CFG", Some("/parallel/cfg"), Input::Count),
    k(
        "diffusion.width",
        "width",
        Some("/video/width"),
        Input::Count,
    ),
    k(
        "diffusion.height",
        "height",
        Some("/video/height"),
        Input::Count,
    ),
    k(
        "diffusion.frames",
        "frames",
        Some("/video/frames"),
        Input::Count,
    ),
    k(
        "diffusion.steps",
        "steps",
        Some("/video/steps"),
        Input::Count,
    ),
];

const COLLECTIVE: &[Knob] = &[
    k("cluster.gpu", "GPU", Some("/cluster/gpu"), Input::Gpu),
    k(
        "cluster.nodes",
        "nodes",
        Some("/cluster/nodes"),
        Input::Count,
    ),
    k("collective.op", "operation", Some("/op"), Input::Text),
    k("collective.size", "size", None, Input::Text),
    k(
        "collective.algorithm",
        "algorithm",
        Some("/algorithm"),
        Input::Choice(&[
            "auto",
            "ring",
            "tree",
            "halving-doubling",
            "hierarchical",
            "nvls",
            "nvls-tree",
            "direct",
            "torus-2d",
        ]),
    ),
    k(
        "cluster.inter_node.nic_bandwidth",
        "NIC bandwidth",
        None,
        Input::Text,
    ),
];

/// The knobs of a kind of scenario.
pub fn knobs(kind: &str) -> &'static [Knob] {
    match kind {
        "training" => TRAINING,
        "serving" => SERVING,
        "diffusion" => DIFFUSION,
        "collective" => COLLECTIVE,
        _ => &[],
    }
}

/// A knob with the value the shown run used and the value typed now.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub knob: Knob,
    /// What the shown run used ("" when neither the report nor the file says).
    pub base: String,
    pub value: String,
}

impl Field {
    pub fn changed(&self) -> bool {
        let v = self.value.trim();
        !v.is_empty() && v != self.base
    }
}

/// The panel's state for one shown run.
#[derive(Clone, Debug, PartialEq)]
pub struct WhatIf {
    pub kind: String,
    pub fields: Vec<Field>,
    /// Training: keep the GPU count by deriving dp from nodes, tp, pp and cp.
    pub dp_follows: bool,
    gpus_per_node: Option<u64>,
}

fn report_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

impl WhatIf {
    /// The fields of `report`'s kind, at the values the run used. `scenario` is the scenario file
    /// with the run's overrides applied (for knobs the report does not echo).
    pub fn new(report: &Value, scenario: Option<&toml::Table>) -> WhatIf {
        let kind = report
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let fields = knobs(&kind)
            .iter()
            .map(|&knob| {
                let base = knob
                    .report
                    .and_then(|p| report.pointer(p))
                    .and_then(report_text)
                    .or_else(|| scenario.and_then(|t| edited::lookup(t, knob.key)))
                    .unwrap_or_default();
                Field {
                    knob,
                    value: base.clone(),
                    base,
                }
            })
            .collect();
        WhatIf {
            kind,
            fields,
            dp_follows: true,
            gpus_per_node: report
                .pointer("/cluster/gpus_per_node")
                .and_then(Value::as_u64),
        }
    }

    fn get(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.knob.key == key)
    }

    /// Sets a field's value by key (what typing in it does).
    #[cfg(test)]
    pub fn set(&mut self, key: &str, value: &str) {
        if let Some(f) = self.fields.iter_mut().find(|f| f.knob.key == key) {
            f.value = value.to_string();
        }
        self.follow();
    }

    /// With `dp_follows`, sets dp to GPUs / (tp × pp × cp) when that is a whole number.
    pub fn follow(&mut self) {
        if self.kind != "training" || !self.dp_follows {
            return;
        }
        let n = |key: &str| -> Option<u64> { self.get(key)?.value.trim().parse().ok() };
        let (Some(nodes), Some(per), Some(tp), Some(pp), Some(cp)) = (
            n("cluster.nodes"),
            self.gpus_per_node,
            n("parallel.tp"),
            n("parallel.pp"),
            n("parallel.cp"),
        ) else {
            return;
        };
        let (gpus, group) = (nodes * per, tp * pp * cp);
        if group > 0 && gpus % group == 0 {
            let dp = (gpus / group).to_string();
            if let Some(f) = self.fields.iter_mut().find(|f| f.knob.key == "parallel.dp") {
                f.value = dp;
            }
        }
    }

    /// The `--set` lines of the fields that differ from the shown run.
    pub fn sets(&self) -> Vec<String> {
        self.fields
            .iter()
            .filter(|f| f.changed())
            .map(|f| format!("{}={}", f.knob.key, f.value.trim()))
            .collect()
    }

    /// Puts every field back to the shown run's value.
    pub fn reset(&mut self) {
        for f in &mut self.fields {
            f.value = f.base.clone();
        }
    }
}

/// The key of a `--set` line (`parallel.tp` of `parallel.tp=8`), trimmed.
fn key_of(line: &str) -> Option<&str> {
    let l = line.trim();
    let l = l.strip_prefix("--set").map_or(l, str::trim_start);
    let l = l.strip_prefix('=').unwrap_or(l).trim();
    if l.starts_with('#') {
        return None;
    }
    l.split_once('=').map(|(k, _)| k.trim())
}

/// The overrides `text` with `sets` merged in: a line setting the same key is replaced, the rest
/// are appended; other lines (and comments) stay as they are.
pub fn merge_sets(text: &str, sets: &[String]) -> String {
    let mut pending: Vec<&String> = sets.iter().collect();
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            let Some(key) = key_of(line) else {
                return line.to_string();
            };
            match pending.iter().position(|s| key_of(s) == Some(key)) {
                Some(i) => pending.remove(i).clone(),
                None => line.to_string(),
            }
        })
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines.extend(pending.into_iter().cloned());
    lines.join("\n")
}

/// What the user asked for this frame.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Action {
    None,
    Apply,
}

/// Draws the fields; returns [`Action::Apply`] when "Apply and re-run" is pressed.
pub fn show(ui: &mut Ui, w: &mut WhatIf) -> Action {
    if w.fields.is_empty() {
        ui.weak("No what-if knobs for this kind of scenario.");
        return Action::None;
    }
    let mut edited = false;
    egui::Grid::new("whatif")
        .num_columns(3)
        .spacing([10.0, 4.0])
        .show(ui, |ui| {
            for f in &mut w.fields {
                let label = ui.label(f.knob.label).on_hover_text(f.knob.key);
                let before = f.value.clone();
                match f.knob.input {
                    Input::Count | Input::Text => {
                        ui.add(
                            TextEdit::singleline(&mut f.value)
                                .desired_width(160.0)
                                .hint_text(if f.base.is_empty() { "not set" } else { "" })
                                .id_salt(f.knob.key),
                        )
                        .labelled_by(label.id);
                    }
                    Input::Choice(options) => {
                        ComboBox::from_id_salt(f.knob.key)
                            .selected_text(f.value.clone())
                            .width(160.0)
                            .show_ui(ui, |ui| {
                                for &o in options {
                                    ui.selectable_value(&mut f.value, o.to_string(), o);
                                }
                            })
                            .response
                            .labelled_by(label.id);
                    }
                    Input::Gpu => {
                        ui.horizontal(|ui| {
                            ui.add(
                                TextEdit::singleline(&mut f.value)
                                    .desired_width(130.0)
                                    .id_salt(f.knob.key),
                            )
                            .labelled_by(label.id);
                            ComboBox::from_id_salt(("gpu-catalog", f.knob.key))
                                .selected_text("")
                                .width(20.0)
                                .show_ui(ui, |ui| {
                                    for g in clustersim::hw::gpu::catalog() {
                                        ui.selectable_value(
                                            &mut f.value,
                                            g.name.to_string(),
                                            &*g.name,
                                        );
                                    }
                                })
                                .response
                                .on_hover_text("GPU catalog");
                        });
                    }
                }
                edited |= f.value != before;
                if f.changed() {
                    ui.label(RichText::new(format!("was {}", f.base)).small().strong());
                } else {
                    ui.label("");
                }
                ui.end_row();
            }
        });
    if w.kind == "training" {
        let r = ui
            .checkbox(&mut w.dp_follows, "dp follows (keep the GPU count)")
            .on_hover_text("dp = nodes × GPUs per node / (tp × pp × cp) when that divides");
        edited |= r.changed();
    }
    if edited {
        w.follow();
    }
    let sets = w.sets();
    ui.add_space(4.0);
    let mut action = Action::None;
    ui.horizontal(|ui| {
        if ui
            .add_enabled(!sets.is_empty(), egui::Button::new("Apply and re-run"))
            .on_hover_text("Adds these --set lines to the overrides and runs again")
            .clicked()
        {
            action = Action::Apply;
        }
        if ui
            .add_enabled(!sets.is_empty(), egui::Button::new("Reset"))
            .clicked()
        {
            w.reset();
        }
    });
    if sets.is_empty() {
        ui.weak("Change a field to try a what-if.");
    } else {
        for s in &sets {
            ui.label(RichText::new(format!("--set {s}")).monospace());
        }
    }
    action
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use serde_json::json;

    fn training() -> Value {
        json!({"kind": "training",
               "cluster": {"gpu": "A100-SXM4-80GB", "nodes": 128, "gpus_per_node": 8},
               "parallel": {"tp": 8, "pp": 16, "dp": 8, "cp": 1, "ep": 1, "micro_batch": 1,
                            "recompute": "full"}})
    }

    #[test]
    fn unchanged_fields_make_no_overrides() {
        let w = WhatIf::new(&training(), None);
        assert!(w.sets().is_empty());
        assert_eq!(w.get("parallel.recompute").unwrap().base, "full");
        assert_eq!(w.get("cluster.inter_node.nic_bandwidth").unwrap().base, "");
    }

    #[test]
    fn halving_pp_doubles_dp_and_gives_two_sets() {
        let mut w = WhatIf::new(&training(), None);
        w.set("parallel.pp", "8");
        assert_eq!(w.sets(), ["parallel.pp=8", "parallel.dp=16"]);
        w.dp_follows = false;
        w.reset();
        w.set("parallel.pp", "8");
        assert_eq!(w.sets(), ["parallel.pp=8"]);
    }

    #[test]
    fn knobs_the_report_lacks_come_from_the_file() {
        let table: toml::Table = "[cluster.inter_node]\nnic_bandwidth = \"200 Gb/s\"\n"
            .parse()
            .unwrap();
        let mut w = WhatIf::new(&training(), Some(&table));
        assert_eq!(
            w.get("cluster.inter_node.nic_bandwidth").unwrap().base,
            "200 Gb/s"
        );
        w.set("cluster.inter_node.nic_bandwidth", "400 Gb/s");
        w.set("cluster.gpu", "H100");
        assert_eq!(
            w.sets(),
            [
                "cluster.gpu=H100",
                "cluster.inter_node.nic_bandwidth=400 Gb/s"
            ]
        );
    }

    #[test]
    fn serving_and_diffusion_have_their_own_knobs() {
        let s = WhatIf::new(
            &json!({"kind": "serving", "cluster": {"replicas": 4, "tp": 4},
                    "serving": {"scheduler": "sarathi"}}),
            None,
        );
        let keys: Vec<_> = s.fields.iter().map(|f| f.knob.key).collect();
        assert_eq!(
            keys,
            [
                "cluster.gpu",
                "serving.replicas",
                "serving.tp",
                "serving.pp",
                "workload.rate",
                "serving.scheduler",
                "serving.max_batch_size",
                "serving.max_batch_tokens",
                "serving.disaggregation.prefill_replicas",
                "serving.disaggregation.decode_replicas"
            ]
        );
        let mut d = WhatIf::new(
            &json!({"kind": "diffusion", "parallel": {"ulysses": 2}}),
            None,
        );
        d.set("parallel.ulysses", "4");
        assert_eq!(d.sets(), ["parallel.ulysses=4"]);
        let mut d = WhatIf::new(
            &json!({"kind": "diffusion", "video": {"frames": 33, "steps": 50}}),
            None,
        );
        d.set("diffusion.frames", "33");
        d.set("diffusion.steps", "30");
        assert_eq!(d.sets(), ["diffusion.steps=30"], "only what differs");
        let mut c = WhatIf::new(
            &json!({"kind": "collective", "op": "all-reduce", "algorithm": "ring"}),
            None,
        );
        c.set("collective.algorithm", "tree");
        assert_eq!(c.sets(), ["collective.algorithm=tree"]);
    }

    #[test]
    fn merging_replaces_the_same_key_and_appends_the_rest() {
        let text = "# mine\nparallel.pp=4\n--set sim.seed=3\n";
        let merged = merge_sets(text, &["parallel.pp=8".into(), "parallel.dp=16".into()]);
        assert_eq!(
            merged,
            "# mine\nparallel.pp=8\n--set sim.seed=3\nparallel.dp=16"
        );
        assert_eq!(merge_sets("", &["a=1".into()]), "a=1");
    }

    #[test]
    fn typing_in_the_panel_produces_the_set_lines() {
        let mut h = Harness::new_ui_state(
            |ui, w: &mut WhatIf| {
                show(ui, w);
            },
            WhatIf::new(&training(), None),
        );
        h.set_size(egui::vec2(700.0, 600.0));
        h.run();
        h.get_by_label("Change a field to try a what-if.");
        // Type 8 over pp's 16, as a person would: click, select all, type.
        let pp = || egui::accesskit::Role::TextInput;
        h.get_by_role_and_label(pp(), "pipeline parallel (pp)")
            .click();
        h.run();
        h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
        h.run();
        h.get_by_role_and_label(pp(), "pipeline parallel (pp)")
            .type_text("8");
        h.run();
        assert_eq!(h.state().get("parallel.pp").unwrap().value, "8");
        h.get_by_label("--set parallel.pp=8");
        h.get_by_label("--set parallel.dp=16");
        h.get_by_label("was 16");
    }
}
