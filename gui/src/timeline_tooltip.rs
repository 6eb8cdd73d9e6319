//! The timeline's tooltip: what an operation did, or what a block of operations merged into one
//! pixel column holds.

use crate::tracks::{Block, KINDS, Track, kind_index};
use crate::units;
use clustersim::exec::Graph;
use egui::Ui;

/// What the pointer is over: one operation's details, or a summary of a merged block.
pub(crate) fn tooltip(ui: &mut Ui, track: &Track, block: &Block, graph: &Graph) {
    if block.count == 1 {
        let i = block.first;
        let op = &graph.ops[track.ops[i] as usize];
        let (start, end) = (track.starts[i], track.ends[i]);
        let duration = end - start;
        ui.strong(op.name.as_ref());
        ui.label(format!("{} on {}", op.kind.name(), track.label));
        egui::Grid::new("op-tooltip").num_columns(2).show(ui, |ui| {
            let mut row = |k: &str, v: String| {
                ui.weak(k);
                ui.label(v);
                ui.end_row();
            };
            if let Some(layer) = op.layer {
                row("layer", layer.to_string());
            }
            if let Some(mb) = op.micro_batch {
                row("micro-batch", mb.to_string());
            }
            row("start", units::duration(start));
            row("duration", units::duration(duration));
            row("end", units::duration(end));
            if op.flops > 0.0 {
                let rate = if duration > 0.0 {
                    format!(" ({}/s)", units::si(op.flops / duration, "FLOP"))
                } else {
                    String::new()
                };
                row("FLOPs", format!("{}{rate}", units::si(op.flops, "FLOP")));
            }
            if op.bytes > 0.0 {
                let rate = if duration > 0.0 {
                    format!(" ({}/s)", units::si(op.bytes / duration, "B"))
                } else {
                    String::new()
                };
                row("bytes", format!("{}{rate}", units::bytes(op.bytes)));
            }
            row("cost tier", op.tier.to_string());
            if !op.model_flops {
                row("note", "recomputation (not model FLOPs)".into());
            }
        });
    } else {
        let range = block.first..block.first + block.count;
        let start = track.starts[block.first];
        let end = track.ends[range].iter().copied().fold(start, f64::max);
        ui.strong(format!("{} operations in one pixel", block.count));
        ui.label(format!(
            "{} – {} on {}",
            units::duration(start),
            units::duration(end),
            track.label
        ));
        for kind in KINDS {
            let busy = block.busy[kind_index(kind)];
            if busy > 0.0 {
                ui.label(format!("{}: {}", kind.name(), units::duration(busy)));
            }
        }
        ui.weak("zoom in to tell them apart");
    }
}
