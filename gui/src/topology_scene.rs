//! The Topology tab's cluster as one frame draws it: which servers are on screen and which in
//! detail, the lines of the links shown, the server boxes and devices, and what the pointer is
//! over.

use crate::link_traffic::{Load, Traffic};
use crate::topology_layout::Layout;
use crate::topology_links::Scope;
use crate::topology_view::{Camera, DETAIL_PX, UNUSED, busy_color, link_color};
use clustersim::net::topology::{DeviceKind, LinkKind};
use egui::{Align2, Color32, FontId, Painter, Pos2, Rect, Stroke, StrokeKind, Visuals, pos2, vec2};

/// What the pointer is over.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Hit {
    Device(usize),
    Server(u32),
    Link(usize),
    Uplink(usize),
}

/// A drawn link's colour: by utilisation when the run recorded it, else by kind.
fn color_of(kind: LinkKind, traffic: Option<&Traffic>, load: Option<Option<Load>>) -> Color32 {
    match (traffic, load.flatten()) {
        (Some(_), Some(l)) => busy_color(l.busy),
        (Some(_), None) => UNUSED,
        (None, _) => link_color(kind),
    }
}

/// Line width for a bandwidth: 1 pt at 1 GB/s and below, one more per decade, at most 4.
fn width_for(bandwidth: f64) -> f32 {
    (1.0 + (bandwidth / 1e9).max(1.0).log10() as f32).min(4.0)
}

fn device_fill(kind: &DeviceKind) -> Color32 {
    match kind {
        DeviceKind::Gpu { .. } => Color32::from_rgb(60, 110, 40),
        DeviceKind::NvSwitch => Color32::from_rgb(90, 90, 96),
        DeviceKind::PcieSwitch => Color32::from_rgb(140, 95, 40),
        DeviceKind::Host => Color32::from_rgb(110, 80, 60),
        DeviceKind::Nic => Color32::from_rgb(40, 80, 140),
        DeviceKind::Leaf => Color32::from_rgb(50, 100, 160),
        DeviceKind::Spine => Color32::from_rgb(70, 70, 150),
        DeviceKind::Core => Color32::from_rgb(100, 60, 140),
        DeviceKind::Router => Color32::from_rgb(130, 60, 130),
    }
}

/// Distance from `p` to the segment `a`-`b`.
fn to_segment(p: Pos2, a: Pos2, b: Pos2) -> f32 {
    let ab = b - a;
    let t = ((p - a).dot(ab) / ab.length_sq().max(1e-6)).clamp(0.0, 1.0);
    p.distance(a + ab * t)
}

/// A line to draw: a link, or a collapsed server's summed links to one switch (world ends).
struct Line {
    from: Pos2,
    to: Pos2,
    color: Color32,
    width: f32,
    hit: Hit,
    /// Drawn over the server boxes: inside a detailed server.
    over: bool,
}

/// The lines on screen: the links of the detailed servers and between shared switches, and the
/// summed uplinks of the others, in that order.
fn lines(
    layout: &Layout,
    detailed: &[bool],
    world_view: Rect,
    traffic: Option<&Traffic>,
) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let seg_visible = |a: Pos2, b: Pos2| world_view.intersects(Rect::from_two_pos(a, b));
    let devs = &layout.devices;
    for (i, l) in layout.links.iter().enumerate() {
        let show = match l.scope {
            Scope::Shared => true,
            Scope::Up(n) | Scope::Inside(n) => detailed[n as usize],
        };
        let (a, b) = (devs[l.a].pos, devs[l.b].pos);
        if show && seg_visible(a, b) {
            lines.push(Line {
                from: a,
                to: b,
                color: color_of(l.kind, traffic, traffic.map(|t| t.links[i])),
                width: width_for(l.bandwidth),
                hit: Hit::Link(i),
                over: l.scope != Scope::Shared,
            });
        }
    }
    for (i, u) in layout.uplinks.iter().enumerate() {
        if detailed[u.node as usize] {
            continue;
        }
        let r = layout.servers[u.node as usize].rect;
        let to = devs[u.to].pos;
        let from = if to.y < r.top() {
            r.center_top()
        } else {
            r.center()
        };
        if seg_visible(from, to) {
            lines.push(Line {
                from,
                to,
                color: color_of(u.kind, traffic, traffic.map(|t| t.uplinks[i])),
                width: width_for(u.bandwidth),
                hit: Hit::Uplink(i),
                over: false,
            });
        }
    }
    lines
}

/// The cluster seen by one camera on one canvas.
pub(crate) struct Scene<'a> {
    layout: &'a Layout,
    canvas: Rect,
    cam: Camera,
    /// By node: on screen, and shown with its devices.
    visible: Vec<bool>,
    detailed: Vec<bool>,
    /// Collected first so the pointer can be tested against the ones drawn.
    lines: Vec<Line>,
}

impl<'a> Scene<'a> {
    /// Works out which servers are on screen and in detail, and the lines to draw.
    pub(crate) fn new(
        layout: &'a Layout,
        canvas: Rect,
        cam: Camera,
        traffic: Option<&Traffic>,
    ) -> Scene<'a> {
        let world_view = Rect::from_min_max(
            cam.to_world(canvas, canvas.min),
            cam.to_world(canvas, canvas.max),
        );
        let mut detailed = vec![false; layout.servers.len()];
        let mut visible = vec![false; layout.servers.len()];
        for s in &layout.servers {
            let i = s.node as usize;
            visible[i] = world_view.intersects(s.rect);
            detailed[i] = visible[i] && s.rect.width() * cam.scale >= DETAIL_PX;
        }
        let lines = lines(layout, &detailed, world_view, traffic);
        Scene {
            layout,
            canvas,
            cam,
            visible,
            detailed,
            lines,
        }
    }

    /// Lines drawn.
    pub(crate) fn lines_drawn(&self) -> usize {
        self.lines.len()
    }

    /// Servers shown with their devices.
    pub(crate) fn servers_detailed(&self) -> usize {
        self.detailed.iter().filter(|&&d| d).count()
    }

    fn at(&self, p: Pos2) -> Pos2 {
        self.cam.to_screen(self.canvas, p)
    }

    /// Paints the lines below the server boxes, the tier labels, the boxes, the lines inside
    /// the detailed servers, then the devices; returns what `pointer` is over.
    pub(crate) fn paint(
        &self,
        painter: &Painter,
        visuals: &Visuals,
        pointer: Option<Pos2>,
    ) -> Option<Hit> {
        self.paint_lines(painter, false);
        self.paint_tier_labels(painter, visuals.weak_text_color());
        let mut hovered = self.paint_servers(painter, visuals, pointer);
        self.paint_lines(painter, true);
        hovered = self.paint_server_devices(painter, pointer).or(hovered);
        hovered = self.paint_shared_devices(painter, pointer).or(hovered);
        if hovered.is_none()
            && let Some(p) = pointer
        {
            hovered = self
                .lines
                .iter()
                .rev()
                .find(|l| to_segment(p, self.at(l.from), self.at(l.to)) <= l.width / 2.0 + 3.0)
                .map(|l| l.hit.clone());
        }
        hovered
    }

    /// The lines drawn over the server boxes (`over`) or under them.
    fn paint_lines(&self, painter: &Painter, over: bool) {
        // Many lines at once (a zoomed-out large cluster): fainter and thinner, so they read as
        // bundles.
        let (fade, thin) = if self.lines.len() > 300 {
            (0.45, 0.6)
        } else {
            (0.8, 1.0)
        };
        for l in &self.lines {
            if l.over == over {
                painter.line_segment(
                    [self.at(l.from), self.at(l.to)],
                    Stroke::new(l.width * thin, l.color.gamma_multiply(fade)),
                );
            }
        }
    }

    /// Tier labels, at the left of their rows.
    fn paint_tier_labels(&self, painter: &Painter, weak: Color32) {
        for t in self.layout.tiers.iter().filter(|t| t.y.is_finite()) {
            let left = self.at(pos2(t.x0, t.y));
            painter.text(
                pos2(left.x - 6.0, left.y),
                Align2::RIGHT_CENTER,
                format!("{} ({})", t.label, t.count),
                FontId::proportional(11.0),
                weak,
            );
        }
    }

    /// The boxes of the servers on screen; returns the collapsed one under `pointer`.
    fn paint_servers(
        &self,
        painter: &Painter,
        visuals: &Visuals,
        pointer: Option<Pos2>,
    ) -> Option<Hit> {
        let (text, weak) = (visuals.text_color(), visuals.weak_text_color());
        let box_stroke = Stroke::new(1.0, visuals.widgets.noninteractive.bg_stroke.color);
        let mut hovered = None;
        for s in &self.layout.servers {
            let i = s.node as usize;
            if !self.visible[i] {
                continue;
            }
            let r = self.cam.rect(self.canvas, s.rect);
            // Opaque, so that lines to other servers pass behind it.
            painter.rect(r, 4.0, visuals.panel_fill, box_stroke, StrokeKind::Inside);
            painter.rect_filled(r, 4.0, visuals.faint_bg_color);
            if r.width() >= 40.0 {
                painter.text(
                    r.left_top() + vec2(4.0, 2.0),
                    Align2::LEFT_TOP,
                    format!("node {}", s.node),
                    FontId::proportional((11.0 * self.cam.scale).clamp(8.0, 12.0)),
                    text,
                );
            }
            if !self.detailed[i] {
                if r.height() >= 30.0 {
                    painter.text(
                        r.center() + vec2(0.0, 4.0),
                        Align2::CENTER_CENTER,
                        format!("{} GPUs", s.gpus),
                        FontId::proportional(10.0),
                        weak,
                    );
                }
                if pointer.is_some_and(|p| r.contains(p)) {
                    hovered = Some(Hit::Server(s.node));
                }
            }
        }
        hovered
    }

    /// The devices of the detailed servers, GPUs with their rank; returns the one under
    /// `pointer`.
    fn paint_server_devices(&self, painter: &Painter, pointer: Option<Pos2>) -> Option<Hit> {
        let mut hovered = None;
        for s in self
            .layout
            .servers
            .iter()
            .filter(|s| self.detailed[s.node as usize])
        {
            for &d in &s.devices {
                let dev = &self.layout.devices[d];
                let dr = self.cam.rect(self.canvas, dev.rect());
                painter.rect_filled(dr, 2.0, device_fill(&dev.kind));
                if let DeviceKind::Gpu { rank } = dev.kind
                    && dr.width() >= 14.0
                {
                    painter.text(
                        dr.center(),
                        Align2::CENTER_CENTER,
                        rank.to_string(),
                        FontId::proportional((dr.width() * 0.45).min(13.0)),
                        Color32::WHITE,
                    );
                }
                if pointer.is_some_and(|p| dr.expand(1.0).contains(p)) {
                    hovered = Some(Hit::Device(d));
                }
            }
        }
        hovered
    }

    /// The shared switches and routers on screen, at least 4 points wide; returns the one
    /// under `pointer`.
    fn paint_shared_devices(&self, painter: &Painter, pointer: Option<Pos2>) -> Option<Hit> {
        let mut hovered = None;
        for (d, dev) in self.layout.devices.iter().enumerate() {
            if dev
                .node
                .is_some_and(|n| (n as usize) < self.layout.servers.len())
            {
                continue;
            }
            let dr = self.cam.rect(self.canvas, dev.rect());
            let dr = Rect::from_center_size(dr.center(), dr.size().max(vec2(4.0, 4.0)));
            if !self.canvas.intersects(dr) {
                continue;
            }
            painter.rect_filled(dr, 3.0, device_fill(&dev.kind));
            if pointer.is_some_and(|p| dr.expand(2.0).contains(p)) {
                hovered = Some(Hit::Device(d));
            }
        }
        hovered
    }

    /// Outlines the hovered device, server or line.
    pub(crate) fn outline(&self, painter: &Painter, hovered: Option<&Hit>, text: Color32) {
        match hovered {
            Some(Hit::Device(d)) => {
                let dr = self
                    .cam
                    .rect(self.canvas, self.layout.devices[*d].rect())
                    .expand(2.0);
                painter.rect_stroke(dr, 2.0, Stroke::new(1.5, text), StrokeKind::Outside);
            }
            Some(Hit::Server(n)) => {
                let r = self
                    .cam
                    .rect(self.canvas, self.layout.servers[*n as usize].rect);
                painter.rect_stroke(r, 4.0, Stroke::new(1.5, text), StrokeKind::Outside);
            }
            Some(Hit::Link(_) | Hit::Uplink(_)) => {
                if let Some(l) = self.lines.iter().find(|l| Some(&l.hit) == hovered) {
                    painter.line_segment(
                        [self.at(l.from), self.at(l.to)],
                        Stroke::new(l.width + 2.0, text),
                    );
                }
            }
            None => {}
        }
    }
}
