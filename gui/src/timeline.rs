//! The timeline widget: one row per lane, one rectangle per operation, coloured by kind.
//!
//! Mouse wheel and pinch zoom around the pointer, dragging pans (sideways in time, up and down
//! through lanes when there are more than fit), a horizontal scroll pans in time, double-click
//! fits the whole step. Hovering an operation shows what it did. A strip above the ruler shows the
//! whole step with the window on screen outlined; clicking or dragging in it moves the window.
//!
//! It stays responsive with hundreds of thousands of operations because each frame only touches
//! what it draws: a lane's operations are kept in start order with the running maximum of their
//! end times, so the visible ones are found by two binary searches ([`Track::visible`]), and
//! operations narrower than a pixel are merged per pixel column ([`blocks`]), found by one more
//! binary search per column and summed by kind from prefix sums. That bounds both the rectangles
//! drawn per lane (about twice the plot's width in pixels) and the work per frame, whatever the
//! zoom and however many operations the run has.
//!
//! Deliberately left out: dependency arrows, selection and search, per-lane collapsing, and lanes
//! of other data-parallel replicas (the simulator runs one replica and says so in the report).

use crate::{ruler, units};
use clustersim::exec::{Graph, OpKind, Timeline};
use egui::{
    Align2, Color32, CornerRadius, CursorIcon, FontId, Rect, Sense, Stroke, StrokeKind, Ui, pos2,
    vec2,
};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// The narrowest view, in seconds (the engine counts picoseconds; nanoseconds are plenty to look at).
pub const MIN_SPAN: f64 = 1e-9;

/// One lane's operations in start order, in seconds, ready to draw.
#[derive(Clone, Debug, Default)]
pub struct Track {
    pub label: String,
    pub starts: Vec<f64>,
    pub ends: Vec<f64>,
    /// `ends[..=i]`'s maximum: never decreasing, so it can be binary searched even if a lane's
    /// operations overlapped (in-order lanes never do, but nothing here relies on it).
    reach: Vec<f64>,
    /// The graph's op id of each operation.
    pub ops: Vec<u32>,
    /// Seconds of each kind in `ops[..i]`, so a merged block's make-up costs O(1).
    busy_prefix: Vec<[f64; 3]>,
}

impl Track {
    /// A track from `(op id, start s, end s, kind)` in any order.
    pub fn new(label: impl Into<String>, mut ops: Vec<(u32, f64, f64, OpKind)>) -> Track {
        if !ops.is_sorted_by(|a, b| a.1 <= b.1) {
            ops.sort_by(|a, b| a.1.total_cmp(&b.1));
        }
        let mut reach = Vec::with_capacity(ops.len());
        let mut max = f64::NEG_INFINITY;
        for &(_, _, end, _) in &ops {
            max = max.max(end);
            reach.push(max);
        }
        let mut busy_prefix = Vec::with_capacity(ops.len() + 1);
        let mut acc = [0.0; 3];
        busy_prefix.push(acc);
        for &(_, start, end, kind) in &ops {
            acc[kind_index(kind)] += end - start;
            busy_prefix.push(acc);
        }
        Track {
            label: label.into(),
            busy_prefix,
            starts: ops.iter().map(|o| o.1).collect(),
            ends: ops.iter().map(|o| o.2).collect(),
            reach,
            ops: ops.iter().map(|o| o.0).collect(),
        }
    }

    /// Seconds of each kind (indexed by [`kind_index`]) in the operations `range`.
    pub fn busy(&self, range: Range<usize>) -> [f64; 3] {
        let (a, b) = (self.busy_prefix[range.start], self.busy_prefix[range.end]);
        [b[0] - a[0], b[1] - a[1], b[2] - a[2]]
    }

    /// Indices of the operations that may intersect `[t0, t1]`: every one that does, plus (only
    /// when operations overlap) some that end before `t0`.
    pub fn visible(&self, t0: f64, t1: f64) -> Range<usize> {
        let lo = self.reach.partition_point(|&r| r < t0);
        let hi = self.starts.partition_point(|&s| s <= t1);
        lo..hi.max(lo)
    }
}

/// Every lane of a run, and how long the run took.
#[derive(Clone, Debug, Default)]
pub struct Tracks {
    /// Unique per build, so drawings cached from one run are never shown for another.
    pub id: u64,
    pub tracks: Vec<Track>,
    /// End of the last operation, in seconds.
    pub makespan: f64,
    pub ops: usize,
}

impl Tracks {
    /// Sorts a run's operations into per-lane tracks (done on the worker thread).
    pub fn build(graph: &Graph, timeline: &Timeline) -> Tracks {
        let tracks = graph
            .lanes
            .iter()
            .zip(&graph.lane_ops)
            .map(|(lane, ops)| {
                let label = if lane.group.is_empty() {
                    lane.name.clone()
                } else {
                    format!("{} · {}", lane.group, lane.name)
                };
                let ops = ops
                    .iter()
                    .map(|&op| {
                        let i = op as usize;
                        (
                            op,
                            timeline.start[i].as_secs_f64(),
                            timeline.end[i].as_secs_f64(),
                            graph.ops[i].kind,
                        )
                    })
                    .collect();
                Track::new(label, ops)
            })
            .collect();
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Tracks {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            tracks,
            makespan: timeline.makespan().as_secs_f64(),
            ops: graph.len(),
        }
    }
}

/// What one rectangle on screen stands for: one operation, or several narrower than a pixel
/// that fall in the same pixel column.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Pixels from the plot's left edge (clamped to just outside it).
    pub x0: f32,
    pub x1: f32,
    /// The track indices `first..first + count`.
    pub first: usize,
    pub count: usize,
    /// Seconds of each kind inside, indexed by [`kind_index`].
    pub busy: [f64; 3],
}

impl Block {
    /// The kind that takes most of the block's time (the block's colour).
    pub fn kind(&self) -> OpKind {
        let mut best = 0;
        for k in 1..3 {
            if self.busy[k] > self.busy[best] {
                best = k;
            }
        }
        KINDS[best]
    }

    /// The drawn extent: at least one pixel wide.
    pub fn drawn(&self) -> (f32, f32) {
        (self.x0, self.x1.max(self.x0 + 1.0))
    }
}

pub const KINDS: [OpKind; 3] = [OpKind::Compute, OpKind::Communication, OpKind::Memory];

pub fn kind_index(kind: OpKind) -> usize {
    match kind {
        OpKind::Compute => 0,
        OpKind::Communication => 1,
        OpKind::Memory => 2,
    }
}

pub fn kind_color(kind: OpKind) -> Color32 {
    match kind {
        OpKind::Compute => Color32::from_rgb(66, 133, 244),
        OpKind::Communication => Color32::from_rgb(240, 150, 30),
        OpKind::Memory => Color32::from_rgb(60, 170, 90),
    }
}

/// The rectangles that draw `track` when `[t0, t1]` fills `width` pixels: operations at least a
/// pixel wide each get their own, narrower ones are merged with the others starting in the same
/// pixel column. Blocks come out in drawing order, left to right, and the work is proportional to
/// the number of blocks (times a logarithm), not to the number of operations in view.
pub fn blocks(track: &Track, t0: f64, t1: f64, width: f32) -> Vec<Block> {
    let span = t1 - t0;
    if span.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || width <= 0.0 {
        return Vec::new();
    }
    let px_per_s = f64::from(width) / span;
    let to_px = |t: f64| ((t - t0) * px_per_s).clamp(-2.0, f64::from(width) + 2.0) as f32;
    let visible = track.visible(t0, t1);
    let hi = visible.end;
    let mut out = Vec::new();
    let mut i = visible.start;
    while i < hi {
        let (s, e) = (track.starts[i], track.ends[i]);
        if e < t0 || s > t1 {
            i += 1;
            continue;
        }
        let (x0, x1) = (to_px(s), to_px(e));
        if x1 - x0 >= 1.0 {
            out.push(Block {
                x0,
                x1,
                first: i,
                count: 1,
                busy: track.busy(i..i + 1),
            });
            i += 1;
            continue;
        }
        // Narrow: take every operation that starts in the same pixel column at once (a binary
        // search, so a column costs the same whether it holds two operations or ten thousand),
        // except a last one that is itself wide, which gets its own block next.
        let column_end = t0 + f64::from(x0.floor() + 1.0) / px_per_s;
        let mut j = i + 1 + track.starts[i + 1..hi].partition_point(|&s| s < column_end);
        if j - 1 > i && to_px(track.ends[j - 1]) - to_px(track.starts[j - 1]) >= 1.0 {
            j -= 1;
        }
        out.push(Block {
            x0,
            x1: to_px(track.ends[j - 1].max(e)),
            first: i,
            count: j - i,
            busy: track.busy(i..j),
        });
        i = j;
    }
    out
}

/// A rectangle to paint: pixels from the plot's left edge and the kind that colours it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Run {
    pub x0: f32,
    pub x1: f32,
    pub kind: OpKind,
}

/// Blocks narrower than [`RUN_MAX_PX`] that touch and share a colour, painted as one rectangle
/// (the second level of detail: a lane of thousands of sub-pixel operations of one kind becomes
/// a handful of rectangles instead of one per pixel column). Wider blocks keep their own, so the
/// gaps between operations one can read stay visible.
pub fn runs(blocks: &[Block]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    let mut last_narrow = false;
    for b in blocks {
        let (x0, x1) = b.drawn();
        let kind = b.kind();
        let narrow = x1 - x0 < RUN_MAX_PX;
        if narrow
            && last_narrow
            && let Some(r) = out.last_mut()
            && r.kind == kind
            && x0 <= r.x1 + 0.5
        {
            r.x1 = r.x1.max(x1);
            continue;
        }
        out.push(Run { x0, x1, kind });
        last_narrow = narrow;
    }
    out
}

/// Blocks at least this wide are painted on their own (see [`runs`]).
pub const RUN_MAX_PX: f32 = 3.0;

/// The part of the step on screen, in seconds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct View {
    pub t0: f64,
    pub t1: f64,
}

impl View {
    /// The whole step.
    pub fn fit(makespan: f64) -> View {
        View {
            t0: 0.0,
            t1: makespan.max(MIN_SPAN),
        }
    }

    pub fn span(&self) -> f64 {
        self.t1 - self.t0
    }

    /// Zooms by `factor` (above 1 zooms in) keeping time `anchor` where it is on screen.
    pub fn zoom(self, anchor: f64, factor: f64, makespan: f64) -> View {
        if !factor.is_finite() || factor <= 0.0 {
            return self;
        }
        let span = (self.span() / factor).max(MIN_SPAN);
        let k = if self.span() > 0.0 {
            (anchor - self.t0) / self.span()
        } else {
            0.5
        };
        let t0 = anchor - k * span;
        View { t0, t1: t0 + span }.clamped(makespan)
    }

    /// Moves the view by `dt` seconds (positive shows later times).
    pub fn pan(self, dt: f64, makespan: f64) -> View {
        View {
            t0: self.t0 + dt,
            t1: self.t1 + dt,
        }
        .clamped(makespan)
    }

    /// Keeps the view within the step plus a 5% margin either side, and at least [`MIN_SPAN`].
    pub fn clamped(self, makespan: f64) -> View {
        let whole = makespan.max(MIN_SPAN);
        let (lo, hi) = (-0.05 * whole, 1.05 * whole);
        let span = if self.span().is_finite() {
            self.span().clamp(MIN_SPAN, hi - lo)
        } else {
            hi - lo
        };
        let mut t0 = if self.t0.is_finite() { self.t0 } else { lo };
        // Not clamp(): rounding can put hi - span a hair below lo.
        t0 = t0.max(lo).min(hi - span);
        View { t0, t1: t0 + span }
    }
}

/// What the widget remembers between frames.
#[derive(Clone, Debug, Default)]
pub struct TimelineState {
    /// `None` shows the whole step.
    pub view: Option<View>,
    /// Pixels scrolled down through the lanes.
    pub lane_offset: f32,
    /// Scroll so that this track is the first row, on the next frame (a GPU picked elsewhere).
    pub scroll_to: Option<usize>,
    /// Tracks marked in the gutter (the GPU picked on the Topology tab).
    pub highlight: Option<Range<usize>>,
    overview: Option<OverviewCache>,
}

impl TimelineState {
    /// A fresh state showing `view` (`None`: the whole step).
    pub fn showing(view: Option<View>) -> TimelineState {
        TimelineState {
            view,
            ..TimelineState::default()
        }
    }
}

/// The overview strip's blocks, for the tracks with id `key.0` at width `key.1`.
#[derive(Clone, Debug)]
struct OverviewCache {
    key: (u64, u32),
    rows: Vec<Vec<Run>>,
}

const OVERVIEW_H: f32 = 24.0;
const GAP: f32 = 6.0;
const RULER_H: f32 = 22.0;
const STATUS_H: f32 = 16.0;
const ROW_MIN: f32 = 18.0;
const ROW_MAX: f32 = 48.0;
const GUTTER_W: f32 = 170.0;
const TICK_MIN_PX: f32 = 90.0;

/// Draws the timeline of a run into the rest of `ui` and handles its input.
pub fn show(ui: &mut Ui, state: &mut TimelineState, tracks: &Tracks, graph: &Graph) {
    let makespan = tracks.makespan;
    let mut view = state
        .view
        .unwrap_or_else(|| View::fit(makespan))
        .clamped(makespan);

    // Header: legend, the range on screen, how to move around.
    ui.horizontal(|ui| {
        ui.strong("Timeline");
        for kind in KINDS {
            let (r, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
            ui.painter().rect_filled(r, 2.0, kind_color(kind));
            ui.label(kind.name());
        }
        ui.separator();
        ui.label(format!(
            "{} – {} of {}",
            units::duration(view.t0.max(0.0)),
            units::duration(view.t1.min(makespan)),
            units::duration(makespan)
        ));
        if ui
            .button("Fit")
            .on_hover_text("Show the whole step (or double-click the timeline)")
            .clicked()
        {
            view = View::fit(makespan);
        }
        ui.weak("wheel/pinch: zoom · drag: pan · hover: details · overview: click to jump");
    });

    // The canvas: overview strip, ruler, then the rows, only as tall as they need.
    let n = tracks.tracks.len();
    let avail = ui.available_size();
    let fixed = OVERVIEW_H + GAP + RULER_H + STATUS_H;
    let row_h = ((avail.y - fixed) / n.max(1) as f32).clamp(ROW_MIN, ROW_MAX);
    let canvas_h = (fixed + n as f32 * row_h).min(avail.y);
    let (rect, _) = ui.allocate_exact_size(vec2(avail.x, canvas_h), Sense::hover());
    let overview = Rect::from_min_max(
        pos2(rect.left() + GUTTER_W, rect.top()),
        pos2(rect.right(), rect.top() + OVERVIEW_H),
    );
    let main = Rect::from_min_max(pos2(rect.left(), overview.bottom() + GAP), rect.max);
    let plot = Rect::from_min_max(
        pos2(main.left() + GUTTER_W, main.top() + RULER_H),
        pos2(main.right(), main.bottom() - STATUS_H),
    );
    if plot.width() < 10.0 || plot.height() < 4.0 {
        return;
    }
    let width = plot.width();
    let max_offset = (n as f32 * row_h - plot.height()).max(0.0);
    let response = ui.interact(
        main,
        ui.make_persistent_id("clustersim-timeline"),
        Sense::click_and_drag(),
    );
    let overview_response = ui.interact(
        overview,
        ui.make_persistent_id("clustersim-timeline-overview"),
        Sense::click_and_drag(),
    );

    // Input: zoom around the pointer, pan by dragging or scrolling sideways.
    let x_to_t = |x: f32, v: &View| v.t0 + f64::from((x - plot.left()) / width) * v.span();
    if let Some(pointer) = response.hover_pos() {
        let (scroll, zoom) = ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta()));
        let factor = f64::from(zoom) * (f64::from(scroll.y) / 200.0).exp();
        if factor != 1.0 {
            let anchor = x_to_t(pointer.x.clamp(plot.left(), plot.right()), &view);
            view = view.zoom(anchor, factor, makespan);
        }
        if scroll.x != 0.0 {
            view = view.pan(-f64::from(scroll.x / width) * view.span(), makespan);
        }
    }
    if response.dragged() {
        let d = response.drag_delta();
        view = view.pan(-f64::from(d.x / width) * view.span(), makespan);
        state.lane_offset -= d.y;
        ui.ctx().set_cursor_icon(CursorIcon::Grabbing);
    } else if response.hovered() {
        ui.ctx().set_cursor_icon(CursorIcon::Grab);
    }
    if response.double_clicked() {
        view = View::fit(makespan);
    }
    // The overview: click or drag centres the view on that time, keeping the zoom.
    if let Some(p) = overview_response.interact_pointer_pos()
        && (overview_response.clicked() || overview_response.dragged())
    {
        let whole = View::fit(makespan);
        let t = whole.t0 + f64::from((p.x - overview.left()) / overview.width()) * whole.span();
        view = view.pan(t - (view.t0 + view.t1) / 2.0, makespan);
    }
    if overview_response.hovered() {
        ui.ctx().set_cursor_icon(CursorIcon::PointingHand);
    }
    if let Some(track) = state.scroll_to.take() {
        state.lane_offset = track as f32 * row_h;
    }
    state.lane_offset = state.lane_offset.clamp(0.0, max_offset);
    state.view = Some(view);

    let visuals = ui.visuals();
    let text_color = visuals.text_color();
    let weak = visuals.weak_text_color();
    let grid = visuals.widgets.noninteractive.bg_stroke.color;
    let stripe = visuals.faint_bg_color;
    let painter = ui.painter_at(rect);
    painter.rect_filled(main, 0.0, visuals.extreme_bg_color);

    // Overview of the whole step, cached: it only changes with the run or the width.
    let key = (tracks.id, overview.width().round() as u32);
    if state.overview.as_ref().is_none_or(|c| c.key != key) {
        let whole = View::fit(makespan);
        let rows = tracks
            .tracks
            .iter()
            .map(|t| runs(&blocks(t, whole.t0, whole.t1, overview.width())))
            .collect();
        state.overview = Some(OverviewCache { key, rows });
    }
    if let Some(OverviewCache { rows, .. }) = &state.overview {
        painter.rect_filled(overview, 2.0, visuals.extreme_bg_color);
        let lane_h = overview.height() / n.max(1) as f32;
        for (i, row) in rows.iter().enumerate() {
            let top = overview.top() + i as f32 * lane_h;
            for run in row {
                let r = Rect::from_min_max(
                    pos2(overview.left() + run.x0, top),
                    pos2(overview.left() + run.x1, top + lane_h),
                );
                painter.rect_filled(r, 0.0, kind_color(run.kind).gamma_multiply(0.8));
            }
        }
        // The window on screen.
        let whole = makespan.max(MIN_SPAN);
        let wx = |t: f64| overview.left() + (t / whole) as f32 * overview.width();
        let (a, b) = (
            wx(view.t0).max(overview.left()),
            wx(view.t1).min(overview.right()),
        );
        let window = Rect::from_min_max(
            pos2(a, overview.top()),
            pos2(b.max(a + 2.0), overview.bottom()),
        );
        painter.rect_filled(window, 0.0, text_color.gamma_multiply(0.15));
        painter.rect_stroke(
            window,
            0.0,
            Stroke::new(1.5, text_color),
            StrokeKind::Inside,
        );
        painter.text(
            pos2(rect.left() + 6.0, overview.center().y),
            Align2::LEFT_CENTER,
            "whole step",
            FontId::proportional(11.0),
            weak,
        );
    }

    // Ruler and grid.
    let t_to_x = |t: f64| plot.left() + ((t - view.t0) / view.span()) as f32 * width;
    let ruler_font = FontId::proportional(11.0);
    for tick in ruler::ticks(view.t0, view.t1, width, TICK_MIN_PX) {
        let x = t_to_x(tick.t);
        painter.vline(x, plot.top()..=plot.bottom(), Stroke::new(1.0, grid));
        painter.vline(x, (plot.top() - 6.0)..=plot.top(), Stroke::new(1.0, weak));
        // Labels sit right of their tick, except where that would run off the plot.
        let (at, anchor) = if x + 60.0 < plot.right() {
            (x + 3.0, Align2::LEFT_TOP)
        } else {
            (x - 3.0, Align2::RIGHT_TOP)
        };
        painter.text(
            pos2(at, main.top() + 3.0),
            anchor,
            tick.label,
            ruler_font.clone(),
            weak,
        );
    }
    // The end of the step.
    let end_x = t_to_x(makespan);
    if (plot.left()..=plot.right()).contains(&end_x) {
        painter.vline(end_x, plot.top()..=plot.bottom(), Stroke::new(1.0, weak));
    }
    painter.hline(
        main.left()..=main.right(),
        plot.top(),
        Stroke::new(1.0, grid),
    );

    // Rows.
    let first_row = (state.lane_offset / row_h).floor() as usize;
    let rows_on_screen = (plot.height() / row_h).ceil() as usize + 1;
    let plot_painter = painter.with_clip_rect(plot);
    let gutter_painter = painter.with_clip_rect(Rect::from_min_max(
        pos2(main.left(), plot.top()),
        pos2(plot.left(), plot.bottom()),
    ));
    let label_font = FontId::proportional(12.0);
    let op_font = FontId::proportional(10.5);
    let pointer = response.hover_pos();
    let mut hovered: Option<(usize, Block)> = None;
    let mut drawn = 0usize;
    for row in first_row..(first_row + rows_on_screen).min(n) {
        let track = &tracks.tracks[row];
        let top = plot.top() + row as f32 * row_h - state.lane_offset;
        let row_rect = Rect::from_min_max(pos2(plot.left(), top), pos2(plot.right(), top + row_h));
        if row % 2 == 1 {
            plot_painter.rect_filled(row_rect, 0.0, stripe);
        }
        if state.highlight.as_ref().is_some_and(|h| h.contains(&row)) {
            let gutter_row =
                Rect::from_min_max(pos2(main.left(), top), pos2(plot.left(), top + row_h));
            gutter_painter.rect_filled(gutter_row, 0.0, visuals.selection.bg_fill);
        }
        gutter_painter.text(
            pos2(main.left() + 6.0, top + row_h / 2.0),
            Align2::LEFT_CENTER,
            &track.label,
            label_font.clone(),
            text_color,
        );
        let bar = row_rect.shrink2(vec2(0.0, (row_h * 0.15).min(5.0)));
        let row_blocks = blocks(track, view.t0, view.t1, width);
        let to_rect = |x0: f32, x1: f32| {
            let r = Rect::from_min_max(
                pos2(plot.left() + x0, bar.top()),
                pos2(plot.left() + x1, bar.bottom()),
            );
            // A hairline gap between wide neighbours so operations stay countable.
            if r.width() > 3.0 {
                r.shrink2(vec2(0.5, 0.0))
            } else {
                r
            }
        };
        for run in runs(&row_blocks) {
            plot_painter.rect_filled(
                to_rect(run.x0, run.x1),
                CornerRadius::ZERO,
                kind_color(run.kind),
            );
            drawn += 1;
        }
        let pointer_in_row = pointer.filter(|p| {
            hovered.is_none() && plot.contains(*p) && (bar.top()..=bar.bottom()).contains(&p.y)
        });
        for block in &row_blocks {
            let (x0, x1) = block.drawn();
            if block.count == 1 && x1 - x0 > 40.0 {
                let r = to_rect(x0, x1);
                let op = &graph.ops[track.ops[block.first] as usize];
                painter
                    .with_clip_rect(r.shrink2(vec2(3.0, 0.0)).intersect(plot))
                    .text(
                        pos2(r.left() + 4.0, r.center().y),
                        Align2::LEFT_CENTER,
                        &op.name,
                        op_font.clone(),
                        Color32::WHITE,
                    );
            }
            if let Some(p) = pointer_in_row
                && hovered.is_none()
            {
                let r = to_rect(x0, x1);
                if (r.left() - 0.5..=r.right() + 0.5).contains(&p.x) {
                    plot_painter.rect_stroke(
                        r.expand(1.0),
                        1.0,
                        Stroke::new(1.5, text_color),
                        StrokeKind::Outside,
                    );
                    hovered = Some((row, block.clone()));
                }
            }
        }
    }
    painter.vline(
        plot.left(),
        main.top()..=plot.bottom(),
        Stroke::new(1.0, grid),
    );
    painter.text(
        pos2(main.right() - 4.0, main.bottom() - 2.0),
        Align2::RIGHT_BOTTOM,
        format!(
            "{} lanes · {} ops · {drawn} rectangles drawn",
            n, tracks.ops
        ),
        FontId::proportional(10.0),
        weak,
    );

    if let Some((row, block)) = hovered
        && !response.dragged()
    {
        response.on_hover_ui_at_pointer(|ui| tooltip(ui, &tracks.tracks[row], &block, graph));
    }
}

/// What the pointer is over: one operation's details, or a summary of a merged block.
fn tooltip(ui: &mut Ui, track: &Track, block: &Block, graph: &Graph) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A lane of back-to-back operations of the given durations, kinds cycling.
    fn lane(durations: &[f64]) -> Track {
        let mut t = 0.0;
        let ops = durations
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                let op = (i as u32, t, t + d, KINDS[i % 3]);
                t += d;
                op
            })
            .collect();
        Track::new("GPU 0 · compute", ops)
    }

    #[test]
    fn visible_range_finds_exactly_the_operations_that_intersect() {
        let track = lane(&[1.0; 10]); // ops i spans [i, i+1]
        assert_eq!(track.visible(2.5, 4.5), 2..5);
        assert_eq!(track.visible(-5.0, -1.0), 0..0);
        assert_eq!(track.visible(20.0, 30.0), 10..10);
        assert_eq!(track.visible(0.0, 10.0), 0..10);
        // An op ending exactly at t0 touches the range; one starting exactly at t1 does too.
        assert_eq!(track.visible(3.0, 3.0), 2..4);
    }

    #[test]
    fn visible_range_handles_overlapping_operations() {
        // A long op [0, 10] and short ones after it: all intersect [5, 6] only through the long one.
        let track = Track::new(
            "x",
            vec![
                (0, 0.0, 10.0, OpKind::Compute),
                (1, 1.0, 2.0, OpKind::Memory),
                (2, 7.0, 8.0, OpKind::Memory),
            ],
        );
        let r = track.visible(5.0, 6.0);
        assert!(r.contains(&0));
        let b = blocks(&track, 5.0, 6.0, 100.0);
        // Only the long op is drawn; the short op ending at 2 is skipped.
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].first, 0);
    }

    #[test]
    fn tracks_sort_out_of_order_input() {
        let track = Track::new(
            "x",
            vec![
                (7, 2.0, 3.0, OpKind::Compute),
                (3, 0.0, 1.0, OpKind::Memory),
            ],
        );
        assert_eq!(track.ops, [3, 7]);
        assert_eq!(track.starts, [0.0, 2.0]);
    }

    #[test]
    fn wide_operations_get_one_block_each() {
        let track = lane(&[1.0; 4]);
        let b = blocks(&track, 0.0, 4.0, 400.0);
        assert_eq!(b.len(), 4);
        assert_eq!((b[1].x0, b[1].x1, b[1].count), (100.0, 200.0, 1));
        assert_eq!(b[1].kind(), OpKind::Communication);
    }

    #[test]
    fn narrow_operations_merge_per_pixel_column() {
        // 1000 ops of 1 ms in 1 s over 100 px: 10 ops per pixel.
        let track = lane(&[1e-3; 1000]);
        let b = blocks(&track, 0.0, 1.0, 100.0);
        assert!((99..=102).contains(&b.len()), "{} blocks", b.len());
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), 1000);
        // Blocks cover consecutive op ranges, in order.
        let mut next = 0;
        for block in &b {
            assert_eq!(block.first, next);
            next += block.count;
            // Merged blocks stay within about a pixel (one column plus the last op's width).
            assert!(block.x1 - block.x0 < 2.0);
        }
        // The merged block's colour is its dominant kind.
        let total: f64 = b[0].busy.iter().sum();
        assert!((total - b[0].count as f64 * 1e-3).abs() < 1e-12);
    }

    #[test]
    fn a_wide_operation_between_narrow_ones_stays_separate() {
        let track = lane(&[0.001, 0.001, 0.5, 0.001]);
        let b = blocks(&track, 0.0, 0.503, 503.0 / 10.0);
        let counts: Vec<_> = b.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 1, 1]);
        assert_eq!(b[1].kind(), OpKind::Memory);
    }

    #[test]
    fn a_million_ops_cost_about_as_much_as_the_pixels() {
        // Mixed widths: mostly tiny, some long enough to be drawn on their own.
        let durations: Vec<f64> = (0..1_000_000)
            .map(|i| if i % 997 == 0 { 20e-3 } else { 5e-6 })
            .collect();
        let track = lane(&durations);
        let end = *track.ends.last().unwrap();
        let width = 1200.0;
        let started = std::time::Instant::now();
        let b = blocks(&track, 0.0, end, width);
        let elapsed = started.elapsed();
        assert!(b.len() <= 2 * width as usize + 4, "{} blocks", b.len());
        // Every operation is accounted for exactly once, with its time.
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), 1_000_000);
        let busy: f64 = b.iter().flat_map(|b| b.busy).sum();
        assert!((busy - end).abs() < 1e-9 * end, "{busy} vs {end}");
        // Zoomed in, only the visible handful are visited.
        let b = blocks(&track, end / 2.0, end / 2.0 + 1e-4, width);
        assert!(b.len() < 30, "{} blocks", b.len());
        // Far under a frame even unoptimised: the work follows the blocks, not the million ops.
        assert!(elapsed.as_millis() < 20, "{elapsed:?}");
    }

    #[test]
    fn touching_narrow_blocks_of_one_kind_paint_as_one_run() {
        // 10,000 compute operations of 1 µs back to back over 10 ms on 100 px: one run.
        let ops = (0..10_000u32)
            .map(|i| {
                (
                    i,
                    f64::from(i) * 1e-6,
                    f64::from(i + 1) * 1e-6,
                    OpKind::Compute,
                )
            })
            .collect();
        let t = Track::new("GPU 0 · compute", ops);
        let b = blocks(&t, 0.0, 10e-3, 100.0);
        assert!(b.len() >= 99, "{}", b.len());
        let r = runs(&b);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].kind, OpKind::Compute);
        assert!(r[0].x0 <= 0.0 && r[0].x1 >= 99.0, "{r:?}");
        // Wide operations keep their own rectangles.
        let t = lane(&[1.0, 1.0, 1.0]);
        assert_eq!(runs(&blocks(&t, 0.0, 3.0, 300.0)).len(), 3);
    }

    #[test]
    fn a_merged_block_knows_its_make_up() {
        // Ten 1 ms ops per pixel, kinds cycling compute, communication, memory.
        let track = lane(&[1e-3; 30]);
        let b = blocks(&track, 0.0, 0.03, 3.0);
        assert_eq!(b.len(), 3);
        // Ops 0..10: compute 0,3,6,9 (4 ms), communication 1,4,7 (3 ms), memory 2,5,8 (3 ms).
        let [c, n, m] = b[0].busy;
        assert!((c - 4e-3).abs() < 1e-12 && (n - 3e-3).abs() < 1e-12 && (m - 3e-3).abs() < 1e-12);
        assert_eq!(b[0].kind(), OpKind::Compute);
    }

    #[test]
    fn zoom_keeps_the_anchor_in_place_and_respects_limits() {
        let v = View::fit(1.0);
        let z = v.zoom(0.25, 2.0, 1.0);
        assert!((z.span() - 0.5).abs() < 1e-12);
        // The anchor stays at the same fraction of the view.
        assert!(((0.25 - z.t0) / z.span() - 0.25).abs() < 1e-12);
        // Zooming far in stops at MIN_SPAN; zooming far out at the step plus margins.
        assert!((v.zoom(0.5, 1e30, 1.0).span() - MIN_SPAN).abs() < 1e-15);
        let out = v.zoom(0.5, 1e-9, 1.0);
        assert!((out.t0 + 0.05).abs() < 1e-12 && (out.t1 - 1.05).abs() < 1e-12);
        // Nonsense factors change nothing.
        assert_eq!(v.zoom(0.5, f64::NAN, 1.0), v);
    }

    #[test]
    fn pan_stops_at_the_margins() {
        let v = View { t0: 0.2, t1: 0.4 };
        let p = v.pan(10.0, 1.0);
        assert!((p.t1 - 1.05).abs() < 1e-12 && (p.span() - 0.2).abs() < 1e-12);
        let p = v.pan(-10.0, 1.0);
        assert!((p.t0 + 0.05).abs() < 1e-12);
    }
}
