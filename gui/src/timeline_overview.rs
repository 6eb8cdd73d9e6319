//! The timeline's overview strip: the whole step, lane by lane, with the window on screen
//! outlined; clicking or dragging in it centres the window there.

use crate::timeline::{MIN_SPAN, View, kind_color};
use crate::tracks::{Run, Tracks, blocks, runs};
use egui::{
    Align2, CursorIcon, FontId, Painter, Rect, Response, Stroke, StrokeKind, Ui, Visuals, pos2,
};

/// The overview strip's blocks, for the tracks with id `key.0` at width `key.1`.
#[derive(Clone, Debug)]
pub(crate) struct OverviewCache {
    key: (u64, u32),
    rows: Vec<Vec<Run>>,
}

/// Click or drag in `strip` centres the view on that time, keeping the zoom.
pub(crate) fn jump(
    ui: &Ui,
    response: &Response,
    strip: Rect,
    mut view: View,
    makespan: f64,
) -> View {
    if let Some(p) = response.interact_pointer_pos()
        && (response.clicked() || response.dragged())
    {
        let whole = View::fit(makespan);
        let t = whole.t0 + f64::from((p.x - strip.left()) / strip.width()) * whole.span();
        view = view.pan(t - (view.t0 + view.t1) / 2.0, makespan);
    }
    if response.hovered() {
        ui.ctx().set_cursor_icon(CursorIcon::PointingHand);
    }
    view
}

/// Paints the whole step into `strip` with `view` outlined, and its name at `label_x`; the
/// blocks are cached in `cache`, as they only change with the run or the width.
pub(crate) fn paint(
    painter: &Painter,
    visuals: &Visuals,
    cache: &mut Option<OverviewCache>,
    tracks: &Tracks,
    strip: Rect,
    label_x: f32,
    view: View,
) {
    let makespan = tracks.makespan;
    let key = (tracks.id, strip.width().round() as u32);
    if cache.as_ref().is_none_or(|c| c.key != key) {
        let whole = View::fit(makespan);
        let rows = tracks
            .tracks
            .iter()
            .map(|t| runs(&blocks(t, whole.t0, whole.t1, strip.width())))
            .collect();
        *cache = Some(OverviewCache { key, rows });
    }
    let Some(OverviewCache { rows, .. }) = cache.as_ref() else {
        return;
    };
    let text_color = visuals.text_color();
    painter.rect_filled(strip, 2.0, visuals.extreme_bg_color);
    let lane_h = strip.height() / tracks.tracks.len().max(1) as f32;
    for (i, row) in rows.iter().enumerate() {
        let top = strip.top() + i as f32 * lane_h;
        for run in row {
            let r = Rect::from_min_max(
                pos2(strip.left() + run.x0, top),
                pos2(strip.left() + run.x1, top + lane_h),
            );
            painter.rect_filled(r, 0.0, kind_color(run.kind).gamma_multiply(0.8));
        }
    }
    // The window on screen.
    let whole = makespan.max(MIN_SPAN);
    let wx = |t: f64| strip.left() + (t / whole) as f32 * strip.width();
    let (a, b) = (
        wx(view.t0).max(strip.left()),
        wx(view.t1).min(strip.right()),
    );
    let window = Rect::from_min_max(pos2(a, strip.top()), pos2(b.max(a + 2.0), strip.bottom()));
    painter.rect_filled(window, 0.0, text_color.gamma_multiply(0.15));
    painter.rect_stroke(
        window,
        0.0,
        Stroke::new(1.5, text_color),
        StrokeKind::Inside,
    );
    painter.text(
        pos2(label_x + 6.0, strip.center().y),
        Align2::LEFT_CENTER,
        "whole step",
        FontId::proportional(11.0),
        visuals.weak_text_color(),
    );
}
