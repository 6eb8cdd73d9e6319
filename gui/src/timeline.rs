//! The timeline widget: one row per lane, one rectangle per operation, coloured by kind.
//!
//! Mouse wheel and pinch zoom around the pointer, dragging pans (sideways in time, up and down
//! through lanes when there are more than fit), a horizontal scroll pans in time, double-click
//! fits the whole step. Hovering an operation shows what it did. A strip above the ruler shows the
//! whole step with the window on screen outlined; clicking or dragging in it moves the window.
//!
//! Each frame only touches what it draws, however many operations the run has: the visible
//! operations of a lane are found by binary search and those narrower than a pixel are merged
//! per pixel column ([`tracks`](crate::tracks)).
//!
//! Deliberately left out: dependency arrows, selection and search, per-lane collapsing, and lanes
//! of other data-parallel replicas (the simulator runs one replica and says so in the report).

use crate::timeline_overview::{self, OverviewCache};
use crate::timeline_tooltip::tooltip;
use crate::tracks::{Block, KINDS, Track, Tracks, blocks, runs};
use crate::{ruler, units};
use clustersim::exec::{Graph, OpKind};
use egui::{
    Align2, Color32, CornerRadius, CursorIcon, FontId, Painter, Pos2, Rect, Response, Sense,
    Stroke, StrokeKind, Ui, Visuals, pos2, vec2,
};
use std::ops::Range;

/// The narrowest view, in seconds (the engine counts picoseconds; nanoseconds are plenty to look at).
pub const MIN_SPAN: f64 = 1e-9;

pub fn kind_color(kind: OpKind) -> Color32 {
    match kind {
        OpKind::Compute => Color32::from_rgb(66, 133, 244),
        OpKind::Communication => Color32::from_rgb(240, 150, 30),
        OpKind::Memory => Color32::from_rgb(60, 170, 90),
    }
}

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
    header(ui, &mut view, makespan);
    let Some(canvas) = Canvas::allocate(ui, tracks.tracks.len()) else {
        return;
    };
    let response = ui.interact(
        canvas.main,
        ui.make_persistent_id("clustersim-timeline"),
        Sense::click_and_drag(),
    );
    let overview_response = ui.interact(
        canvas.overview,
        ui.make_persistent_id("clustersim-timeline-overview"),
        Sense::click_and_drag(),
    );
    view = canvas.zoom_and_pan(ui, &response, view, makespan, &mut state.lane_offset);
    view = timeline_overview::jump(ui, &overview_response, canvas.overview, view, makespan);
    canvas.scroll_lanes(state);
    state.view = Some(view);

    let frame = Frame {
        painter: ui.painter_at(canvas.rect),
        canvas,
        visuals: ui.visuals(),
        view,
    };
    frame
        .painter
        .rect_filled(frame.canvas.main, 0.0, frame.visuals.extreme_bg_color);
    timeline_overview::paint(
        &frame.painter,
        frame.visuals,
        &mut state.overview,
        tracks,
        frame.canvas.overview,
        frame.canvas.rect.left(),
        view,
    );
    frame.paint_ruler(makespan);
    let (hovered, drawn) = frame.paint_rows(state, tracks, graph, response.hover_pos());
    frame.paint_status(tracks, drawn);

    if let Some((row, block)) = hovered
        && !response.dragged()
    {
        response.on_hover_ui_at_pointer(|ui| tooltip(ui, &tracks.tracks[row], &block, graph));
    }
}

/// The header: legend, the range on screen, how to move around; Fit sets `view` to the step.
fn header(ui: &mut Ui, view: &mut View, makespan: f64) {
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
            *view = View::fit(makespan);
        }
        ui.weak("wheel/pinch: zoom · drag: pan · hover: details · overview: click to jump");
    });
}

/// Where the timeline's parts sit on screen.
struct Canvas {
    /// Everything below the header.
    rect: Rect,
    /// The strip showing the whole step.
    overview: Rect,
    /// The ruler, gutter, rows and status line.
    main: Rect,
    /// The rows' operations, right of the gutter.
    plot: Rect,
    rows: usize,
    row_h: f32,
}

impl Canvas {
    /// The overview strip, ruler, then `rows` rows, only as tall as they need, allocated in the
    /// rest of `ui`; `None` when the plot would be too small to draw.
    fn allocate(ui: &mut Ui, rows: usize) -> Option<Canvas> {
        let avail = ui.available_size();
        let fixed = OVERVIEW_H + GAP + RULER_H + STATUS_H;
        let row_h = ((avail.y - fixed) / rows.max(1) as f32).clamp(ROW_MIN, ROW_MAX);
        let canvas_h = (fixed + rows as f32 * row_h).min(avail.y);
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
            return None;
        }
        Some(Canvas {
            rect,
            overview,
            main,
            plot,
            rows,
            row_h,
        })
    }

    /// The time at `x` on screen.
    fn x_to_t(&self, x: f32, v: &View) -> f64 {
        v.t0 + f64::from((x - self.plot.left()) / self.plot.width()) * v.span()
    }

    /// Zooms around the pointer, pans by dragging (down through the lanes too) or scrolling
    /// sideways, fits on a double-click.
    fn zoom_and_pan(
        &self,
        ui: &Ui,
        response: &Response,
        mut view: View,
        makespan: f64,
        lane_offset: &mut f32,
    ) -> View {
        let width = self.plot.width();
        if let Some(pointer) = response.hover_pos() {
            let (scroll, zoom) = ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta()));
            let factor = f64::from(zoom) * (f64::from(scroll.y) / 200.0).exp();
            if factor != 1.0 {
                let x = pointer.x.clamp(self.plot.left(), self.plot.right());
                let anchor = self.x_to_t(x, &view);
                view = view.zoom(anchor, factor, makespan);
            }
            if scroll.x != 0.0 {
                view = view.pan(-f64::from(scroll.x / width) * view.span(), makespan);
            }
        }
        if response.dragged() {
            let d = response.drag_delta();
            view = view.pan(-f64::from(d.x / width) * view.span(), makespan);
            *lane_offset -= d.y;
            ui.ctx().set_cursor_icon(CursorIcon::Grabbing);
        } else if response.hovered() {
            ui.ctx().set_cursor_icon(CursorIcon::Grab);
        }
        if response.double_clicked() {
            view = View::fit(makespan);
        }
        view
    }

    /// Scrolls to the track asked for, and keeps the lanes within reach.
    fn scroll_lanes(&self, state: &mut TimelineState) {
        let max_offset = (self.rows as f32 * self.row_h - self.plot.height()).max(0.0);
        if let Some(track) = state.scroll_to.take() {
            state.lane_offset = track as f32 * self.row_h;
        }
        state.lane_offset = state.lane_offset.clamp(0.0, max_offset);
    }
}

/// One frame's painting: where things go, the window on screen and the colours.
struct Frame<'a> {
    canvas: Canvas,
    painter: Painter,
    visuals: &'a Visuals,
    view: View,
}

impl Frame<'_> {
    /// The ruler's ticks and labels, the grid and the end of the step.
    fn paint_ruler(&self, makespan: f64) {
        let (painter, main, plot, view) =
            (&self.painter, self.canvas.main, self.canvas.plot, self.view);
        let width = plot.width();
        let weak = self.visuals.weak_text_color();
        let grid = self.visuals.widgets.noninteractive.bg_stroke.color;
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
    }

    /// The rows on screen; returns the block under `pointer` (with its row) and how many
    /// rectangles were painted.
    fn paint_rows(
        &self,
        state: &TimelineState,
        tracks: &Tracks,
        graph: &Graph,
        pointer: Option<Pos2>,
    ) -> (Option<(usize, Block)>, usize) {
        let (main, plot) = (self.canvas.main, self.canvas.plot);
        let first_row = (state.lane_offset / self.canvas.row_h).floor() as usize;
        let rows_on_screen = (plot.height() / self.canvas.row_h).ceil() as usize + 1;
        let mut rows = Rows {
            frame: self,
            plot_painter: self.painter.with_clip_rect(plot),
            gutter_painter: self.painter.with_clip_rect(Rect::from_min_max(
                pos2(main.left(), plot.top()),
                pos2(plot.left(), plot.bottom()),
            )),
            label_font: FontId::proportional(12.0),
            op_font: FontId::proportional(10.5),
            graph,
            pointer,
            hovered: None,
            drawn: 0,
        };
        for row in first_row..(first_row + rows_on_screen).min(tracks.tracks.len()) {
            let highlighted = state.highlight.as_ref().is_some_and(|h| h.contains(&row));
            rows.paint(row, &tracks.tracks[row], state.lane_offset, highlighted);
        }
        (rows.hovered, rows.drawn)
    }

    /// The gutter's edge and the status line.
    fn paint_status(&self, tracks: &Tracks, drawn: usize) {
        let (main, plot) = (self.canvas.main, self.canvas.plot);
        self.painter.vline(
            plot.left(),
            main.top()..=plot.bottom(),
            Stroke::new(1.0, self.visuals.widgets.noninteractive.bg_stroke.color),
        );
        self.painter.text(
            pos2(main.right() - 4.0, main.bottom() - 2.0),
            Align2::RIGHT_BOTTOM,
            format!(
                "{} lanes · {} ops · {drawn} rectangles drawn",
                tracks.tracks.len(),
                tracks.ops
            ),
            FontId::proportional(10.0),
            self.visuals.weak_text_color(),
        );
    }
}

/// The rows being painted in a frame, and what the pointer was found over so far.
struct Rows<'a> {
    frame: &'a Frame<'a>,
    plot_painter: Painter,
    gutter_painter: Painter,
    label_font: FontId,
    op_font: FontId,
    graph: &'a Graph,
    pointer: Option<Pos2>,
    hovered: Option<(usize, Block)>,
    /// Rectangles painted.
    drawn: usize,
}

impl Rows<'_> {
    /// One row: its stripe, its label in the gutter, its operations (named when wide enough)
    /// and the outline of the one under the pointer.
    fn paint(&mut self, row: usize, track: &Track, lane_offset: f32, highlighted: bool) {
        let Frame {
            canvas,
            painter,
            visuals,
            view,
        } = self.frame;
        let (main, plot, row_h) = (canvas.main, canvas.plot, canvas.row_h);
        let text_color = visuals.text_color();
        let top = plot.top() + row as f32 * row_h - lane_offset;
        let row_rect = Rect::from_min_max(pos2(plot.left(), top), pos2(plot.right(), top + row_h));
        if row % 2 == 1 {
            self.plot_painter
                .rect_filled(row_rect, 0.0, visuals.faint_bg_color);
        }
        if highlighted {
            let gutter_row =
                Rect::from_min_max(pos2(main.left(), top), pos2(plot.left(), top + row_h));
            self.gutter_painter
                .rect_filled(gutter_row, 0.0, visuals.selection.bg_fill);
        }
        self.gutter_painter.text(
            pos2(main.left() + 6.0, top + row_h / 2.0),
            Align2::LEFT_CENTER,
            &track.label,
            self.label_font.clone(),
            text_color,
        );
        let bar = row_rect.shrink2(vec2(0.0, (row_h * 0.15).min(5.0)));
        let row_blocks = blocks(track, view.t0, view.t1, plot.width());
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
            self.plot_painter.rect_filled(
                to_rect(run.x0, run.x1),
                CornerRadius::ZERO,
                kind_color(run.kind),
            );
            self.drawn += 1;
        }
        let pointer_in_row = self.pointer.filter(|p| {
            self.hovered.is_none() && plot.contains(*p) && (bar.top()..=bar.bottom()).contains(&p.y)
        });
        for block in &row_blocks {
            let (x0, x1) = block.drawn();
            if block.count == 1 && x1 - x0 > 40.0 {
                let r = to_rect(x0, x1);
                let op = &self.graph.ops[track.ops[block.first] as usize];
                painter
                    .with_clip_rect(r.shrink2(vec2(3.0, 0.0)).intersect(plot))
                    .text(
                        pos2(r.left() + 4.0, r.center().y),
                        Align2::LEFT_CENTER,
                        &op.name,
                        self.op_font.clone(),
                        Color32::WHITE,
                    );
            }
            if let Some(p) = pointer_in_row
                && self.hovered.is_none()
            {
                let r = to_rect(x0, x1);
                if (r.left() - 0.5..=r.right() + 0.5).contains(&p.x) {
                    self.plot_painter.rect_stroke(
                        r.expand(1.0),
                        1.0,
                        Stroke::new(1.5, text_color),
                        StrokeKind::Outside,
                    );
                    self.hovered = Some((row, block.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
