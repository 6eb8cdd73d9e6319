//! The Topology tab: the run's cluster as a graph, placed by [`topology_layout`](crate::topology_layout).
//!
//! Shown: servers as boxes with their GPUs, NVSwitch / PCIe switches / host and NICs inside; leaf,
//! spine and core switches and WAN routers in tiers above; torus routers above their servers; and
//! every link, coloured by kind (NVLink, PCIe, network, WAN) and thicker for more bandwidth. The
//! header says how many servers and GPUs there are, the switch tiers, and each kind of link with
//! its bandwidths. Hovering a device or a link shows its name, kind, bandwidth (GB/s, one
//! direction) and latency; clicking a GPU asks the app to show its timeline lanes
//! ([`gpu_lanes`](crate::gpu_lanes)).
//!
//! Level of detail: the wheel zooms around the pointer and dragging pans (double-click fits). A
//! server whose box is narrower than [`DETAIL_PX`] on screen is drawn as one box, its links to
//! each switch summed into one line ([`Uplink`]); wider ones show their devices and links.
//! Clicking a collapsed server zooms onto it. Only what is on screen is drawn, so at 1,024 GPUs
//! the whole cluster is 128 boxes and a few hundred lines rather than ten thousand edges.
//!
//! **Link utilisation**, when the run recorded it (collective and training runs: `link_traffic`),
//! replaces the colour by kind: grey for a link that carried nothing, then green through yellow
//! to red at 100% of its line rate over the whole run, with the bytes and the percentage in the
//! tooltips and the busiest link in the header. Serving and diffusion runs price their
//! communication without recording the bytes each link carried, so for them the tab says there
//! is nothing measured to colour by instead of inventing numbers. Deliberately left out: routes of a
//! chosen collective, editing the topology, and per-direction bandwidths of asymmetric links.

use crate::link_traffic::{Load, Traffic};
use crate::topology_layout::{Layout, kind_name};
use crate::topology_links::{Link, Scope, Uplink, link_name};
use crate::units;
use clustersim::net::topology::{DeviceKind, LinkKind};
use egui::{
    Align2, Color32, CursorIcon, FontId, Pos2, Rect, Sense, Stroke, StrokeKind, Ui, pos2, vec2,
};

/// A server box at least this wide on screen (points) shows its devices.
pub const DETAIL_PX: f32 = 120.0;
const MAX_SCALE: f32 = 6.0;
const MIN_SCALE: f32 = 0.02;

/// Which part of the world is on screen: `center` (world) at the canvas centre, `scale` points
/// per world unit.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Camera {
    pub center: Pos2,
    pub scale: f32,
}

impl Camera {
    /// The whole layout in `canvas`.
    pub fn fit(bounds: Rect, canvas: Rect) -> Camera {
        let scale = (canvas.width() / bounds.width())
            .min(canvas.height() / bounds.height())
            .clamp(MIN_SCALE, MAX_SCALE.min(2.0));
        Camera {
            center: bounds.center(),
            scale,
        }
    }

    fn to_screen(self, canvas: Rect, p: Pos2) -> Pos2 {
        canvas.center() + (p - self.center) * self.scale
    }

    fn to_world(self, canvas: Rect, p: Pos2) -> Pos2 {
        self.center + (p - canvas.center()) / self.scale
    }

    fn rect(self, canvas: Rect, r: Rect) -> Rect {
        Rect::from_min_max(self.to_screen(canvas, r.min), self.to_screen(canvas, r.max))
    }
}

/// What the tab remembers between frames.
#[derive(Clone, Debug, Default)]
pub struct TopologyState {
    /// `None` fits the whole cluster.
    pub camera: Option<Camera>,
    /// Lines drawn in the last frame (for the status line and tests).
    pub drawn: usize,
    /// Servers shown in detail in the last frame.
    pub detailed: usize,
}

/// The colour of a kind of link.
pub fn link_color(kind: LinkKind) -> Color32 {
    match kind {
        LinkKind::NvLink => Color32::from_rgb(118, 185, 0),
        LinkKind::Pcie => Color32::from_rgb(230, 140, 30),
        LinkKind::Network => Color32::from_rgb(70, 140, 230),
        LinkKind::Wan => Color32::from_rgb(190, 90, 210),
    }
}

/// A link that carried nothing, when utilisation is shown.
const UNUSED: Color32 = Color32::from_rgb(110, 110, 110);

/// The colour of a utilisation (0 to 1, clamped): green, yellow at one half, red when full.
pub fn busy_color(busy: f64) -> Color32 {
    let stops = [
        (60.0, 170.0, 90.0),
        (230.0, 200.0, 40.0),
        (220.0, 50.0, 50.0),
    ];
    let x = busy.clamp(0.0, 1.0) * 2.0;
    let i = (x.floor() as usize).min(1);
    let f = x - i as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * f).round() as u8;
    let (a, b) = (stops[i], stops[i + 1]);
    Color32::from_rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
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

/// Bytes/s as GB/s, three significant digits: `450 GB/s`, `25.0 GB/s`, `0.125 GB/s`.
pub fn gbps(bandwidth: f64) -> String {
    let g = bandwidth / 1e9;
    let digits = if g >= 100.0 {
        0
    } else if g >= 10.0 {
        1
    } else if g >= 1.0 {
        2
    } else {
        3
    };
    format!("{g:.digits$} GB/s")
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

/// What the pointer is over.
#[derive(Clone, Debug, PartialEq)]
enum Hit {
    Device(usize),
    Server(u32),
    Link(usize),
    Uplink(usize),
}

/// Distance from `p` to the segment `a`-`b`.
fn to_segment(p: Pos2, a: Pos2, b: Pos2) -> f32 {
    let ab = b - a;
    let t = ((p - a).dot(ab) / ab.length_sq().max(1e-6)).clamp(0.0, 1.0);
    p.distance(a + ab * t)
}

/// The header: sizes, tiers, link classes and the note on utilisation.
fn header(ui: &mut Ui, layout: &Layout, state: &mut TopologyState, traffic: Option<&Traffic>) {
    ui.horizontal(|ui| {
        ui.strong("Topology");
        ui.label(layout.servers_text());
        ui.separator();
        ui.label(layout.tiers_text());
        ui.separator();
        ui.weak(&layout.name);
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if ui
                .button("Fit")
                .on_hover_text("Show the whole cluster (or double-click)")
                .clicked()
            {
                state.camera = None;
            }
        });
    });
    ui.horizontal_wrapped(|ui| {
        ui.weak("links:");
        for c in &layout.classes {
            let (r, _) = ui.allocate_exact_size(vec2(18.0, 12.0), Sense::hover());
            ui.painter().line_segment(
                [r.left_center(), r.right_center()],
                Stroke::new(3.0, link_color(c.kind)),
            );
            let bws: Vec<String> = c.bandwidths.iter().map(|&b| gbps(b)).collect();
            ui.label(format!(
                "{} {} ({} link{})",
                link_name(c.kind),
                bws.join(", "),
                c.links,
                if c.links == 1 { "" } else { "s" }
            ));
        }
    });
    match traffic {
        Some(t) => {
            ui.horizontal_wrapped(|ui| {
                ui.weak("utilisation over the run:");
                for (busy, text) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
                    let (r, _) = ui.allocate_exact_size(vec2(18.0, 12.0), Sense::hover());
                    ui.painter().line_segment(
                        [r.left_center(), r.right_center()],
                        Stroke::new(3.0, busy_color(busy)),
                    );
                    ui.label(text);
                }
                let (r, _) = ui.allocate_exact_size(vec2(18.0, 12.0), Sense::hover());
                ui.painter().line_segment(
                    [r.left_center(), r.right_center()],
                    Stroke::new(3.0, UNUSED),
                );
                ui.label("unused");
                if let Some((i, peak)) = t.peak {
                    let l = &layout.links[i];
                    ui.separator();
                    ui.label(format!(
                        "busiest: {} — {}, {} busy",
                        layout.devices[l.a].name,
                        layout.devices[l.b].name,
                        units::percent(peak.busy)
                    ));
                }
            });
            ui.label(
                egui::RichText::new(format!(
                    "Colour is each link's average utilisation over the run's {}: the bytes it \
                     carried on the wire in its busier direction ÷ (line rate × time). Width \
                     is its bandwidth.",
                    units::duration(t.seconds)
                ))
                .small()
                .weak(),
            );
        }
        None => {
            ui.label(
                egui::RichText::new(
                    "Colour is the kind of link and width its bandwidth, not utilisation: \
                     collective and training runs record the bytes each link carried; serving \
                     and diffusion runs do not yet, so there is nothing measured to show.",
                )
                .small()
                .weak(),
            );
        }
    }
    ui.weak(
        "wheel: zoom · drag: pan · double-click: fit · click a server: expand it · \
         click a GPU: its timeline lanes",
    );
}

/// Draws the cluster into the rest of `ui`; returns the rank of a GPU clicked.
pub fn show(
    ui: &mut Ui,
    state: &mut TopologyState,
    layout: &Layout,
    traffic: Option<&Traffic>,
) -> Option<u32> {
    header(ui, layout, state, traffic);
    let avail = ui.available_size();
    let (canvas, response) = ui.allocate_exact_size(avail, Sense::click_and_drag());
    if canvas.width() < 20.0 || canvas.height() < 20.0 {
        return None;
    }
    let fitted = Camera::fit(layout.bounds, canvas);
    let mut cam = state.camera.unwrap_or(fitted);

    // Input: zoom around the pointer, drag pans, double-click fits.
    if let Some(p) = response.hover_pos() {
        let (scroll, zoom) = ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta()));
        let factor = zoom * (scroll.y / 200.0).exp();
        if factor != 1.0 {
            let anchor = cam.to_world(canvas, p);
            let scale = (cam.scale * factor).clamp(MIN_SCALE.min(fitted.scale), MAX_SCALE);
            cam.center = anchor - (p - canvas.center()) / scale;
            cam.scale = scale;
        }
    }
    if response.dragged() {
        cam.center -= response.drag_delta() / cam.scale;
        ui.ctx().set_cursor_icon(CursorIcon::Grabbing);
    }
    if response.double_clicked() {
        cam = fitted;
    }

    let visuals = ui.visuals();
    let text = visuals.text_color();
    let weak = visuals.weak_text_color();
    let painter = ui.painter_at(canvas);
    painter.rect_filled(canvas, 0.0, visuals.extreme_bg_color);
    let world_view = Rect::from_min_max(
        cam.to_world(canvas, canvas.min),
        cam.to_world(canvas, canvas.max),
    );
    let at = |p: Pos2| cam.to_screen(canvas, p);

    // Which servers are on screen, and which in detail.
    let mut detailed = vec![false; layout.servers.len()];
    let mut visible = vec![false; layout.servers.len()];
    for s in &layout.servers {
        let i = s.node as usize;
        visible[i] = world_view.intersects(s.rect);
        detailed[i] = visible[i] && s.rect.width() * cam.scale >= DETAIL_PX;
    }

    // Lines: collected first so the pointer can be tested against the ones drawn.
    // (from, to, colour, width, what, drawn over the server boxes: inside a detailed server).
    let mut lines: Vec<(Pos2, Pos2, Color32, f32, Hit, bool)> = Vec::new();
    let seg_visible = |a: Pos2, b: Pos2| world_view.intersects(Rect::from_two_pos(a, b));
    let devs = &layout.devices;
    for (i, l) in layout.links.iter().enumerate() {
        let show = match l.scope {
            Scope::Shared => true,
            Scope::Up(n) | Scope::Inside(n) => detailed[n as usize],
        };
        let (a, b) = (devs[l.a].pos, devs[l.b].pos);
        if show && seg_visible(a, b) {
            lines.push((
                a,
                b,
                color_of(l.kind, traffic, traffic.map(|t| t.links[i])),
                width_for(l.bandwidth),
                Hit::Link(i),
                l.scope != Scope::Shared,
            ));
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
            lines.push((
                from,
                to,
                color_of(u.kind, traffic, traffic.map(|t| t.uplinks[i])),
                width_for(u.bandwidth),
                Hit::Uplink(i),
                false,
            ));
        }
    }
    // Many lines at once (a zoomed-out large cluster): fainter and thinner, so they read as
    // bundles.
    let (fade, thin) = if lines.len() > 300 {
        (0.45, 0.6)
    } else {
        (0.8, 1.0)
    };
    let paint_lines = |over: bool| {
        for (a, b, color, w, _, o) in &lines {
            if *o == over {
                painter.line_segment(
                    [at(*a), at(*b)],
                    Stroke::new(w * thin, color.gamma_multiply(fade)),
                );
            }
        }
    };
    paint_lines(false);

    // Tier labels, at the left of their rows.
    for t in layout.tiers.iter().filter(|t| t.y.is_finite()) {
        let left = at(pos2(t.x0, t.y));
        painter.text(
            pos2(left.x - 6.0, left.y),
            Align2::RIGHT_CENTER,
            format!("{} ({})", t.label, t.count),
            FontId::proportional(11.0),
            weak,
        );
    }

    // Server boxes, the links inside the detailed ones, then their devices.
    let mut hovered: Option<Hit> = None;
    let pointer = response.hover_pos().filter(|_| !response.dragged());
    let box_stroke = Stroke::new(1.0, visuals.widgets.noninteractive.bg_stroke.color);
    for s in &layout.servers {
        let i = s.node as usize;
        if !visible[i] {
            continue;
        }
        let r = cam.rect(canvas, s.rect);
        // Opaque, so that lines to other servers pass behind it.
        painter.rect(r, 4.0, visuals.panel_fill, box_stroke, StrokeKind::Inside);
        painter.rect_filled(r, 4.0, visuals.faint_bg_color);
        if r.width() >= 40.0 {
            painter.text(
                r.left_top() + vec2(4.0, 2.0),
                Align2::LEFT_TOP,
                format!("node {}", s.node),
                FontId::proportional((11.0 * cam.scale).clamp(8.0, 12.0)),
                text,
            );
        }
        if !detailed[i] {
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
    paint_lines(true);
    for s in layout.servers.iter().filter(|s| detailed[s.node as usize]) {
        for &d in &s.devices {
            let dev = &devs[d];
            let dr = cam.rect(canvas, dev.rect());
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
    for (d, dev) in devs.iter().enumerate() {
        if dev
            .node
            .is_some_and(|n| (n as usize) < layout.servers.len())
        {
            continue;
        }
        let dr = cam.rect(canvas, dev.rect());
        let dr = Rect::from_center_size(dr.center(), dr.size().max(vec2(4.0, 4.0)));
        if !canvas.intersects(dr) {
            continue;
        }
        painter.rect_filled(dr, 3.0, device_fill(&dev.kind));
        if pointer.is_some_and(|p| dr.expand(2.0).contains(p)) {
            hovered = Some(Hit::Device(d));
        }
    }
    if hovered.is_none()
        && let Some(p) = pointer
    {
        hovered = lines
            .iter()
            .rev()
            .find(|(a, b, _, w, _, _)| to_segment(p, at(*a), at(*b)) <= w / 2.0 + 3.0)
            .map(|l| l.4.clone());
    }
    // The hovered thing outlined.
    match &hovered {
        Some(Hit::Device(d)) => {
            let dr = cam.rect(canvas, devs[*d].rect()).expand(2.0);
            painter.rect_stroke(dr, 2.0, Stroke::new(1.5, text), StrokeKind::Outside);
        }
        Some(Hit::Server(n)) => {
            let r = cam.rect(canvas, layout.servers[*n as usize].rect);
            painter.rect_stroke(r, 4.0, Stroke::new(1.5, text), StrokeKind::Outside);
        }
        Some(Hit::Link(_) | Hit::Uplink(_)) => {
            if let Some((a, b, _, w, _, _)) = lines.iter().find(|l| Some(&l.4) == hovered.as_ref())
            {
                painter.line_segment([at(*a), at(*b)], Stroke::new(w + 2.0, text));
            }
        }
        None => {}
    }
    state.drawn = lines.len();
    state.detailed = detailed.iter().filter(|&&d| d).count();
    painter.text(
        canvas.right_bottom() - vec2(4.0, 2.0),
        Align2::RIGHT_BOTTOM,
        format!(
            "{} of {} servers in detail · {} lines drawn",
            state.detailed,
            layout.servers.len(),
            state.drawn
        ),
        FontId::proportional(10.0),
        weak,
    );

    let mut clicked = None;
    if response.clicked() {
        match &hovered {
            Some(Hit::Device(d)) => {
                if let DeviceKind::Gpu { rank } = devs[*d].kind {
                    clicked = Some(rank);
                }
            }
            Some(Hit::Server(n)) => {
                // Zoom so that the server fills about a third of the width.
                let r = layout.servers[*n as usize].rect;
                cam = Camera {
                    center: r.center(),
                    scale: (canvas.width() / 3.0 / r.width())
                        .clamp(DETAIL_PX / r.width(), MAX_SCALE),
                };
            }
            _ => {}
        }
    }
    if let Some(h) = &hovered {
        if matches!(h, Hit::Server(_))
            || matches!(h, Hit::Device(d) if matches!(devs[*d].kind, DeviceKind::Gpu { .. }))
        {
            ui.ctx().set_cursor_icon(CursorIcon::PointingHand);
        }
        if !response.dragged() {
            let h = h.clone();
            response.on_hover_ui_at_pointer(|ui| tooltip(ui, layout, &h, traffic));
        }
    }
    state.camera = Some(cam);
    clicked
}

/// The links of device `d`, grouped by (kind, bandwidth, latency): "8 × NVLink 450 GB/s each
/// way, latency 250.0 ns", or "NVLink to node0/nvswitch, ..." for a link of its own.
fn device_links(layout: &Layout, d: usize) -> Vec<String> {
    let mut groups: Vec<(LinkKind, f64, f64, u32, usize)> = Vec::new();
    for l in layout.links.iter().filter(|l| l.a == d || l.b == d) {
        let peer = if l.a == d { l.b } else { l.a };
        match groups
            .iter_mut()
            .find(|g| g.0 == l.kind && g.1 == l.bandwidth && g.2 == l.latency)
        {
            Some(g) => g.3 += 1,
            None => groups.push((l.kind, l.bandwidth, l.latency, 1, peer)),
        }
    }
    groups
        .iter()
        .map(|&(k, bw, lat, n, peer)| {
            let what = if n == 1 {
                format!("{} to {}", link_name(k), layout.devices[peer].name)
            } else {
                format!("{n} × {}", link_name(k))
            };
            format!(
                "{what}: {} each way, latency {}",
                gbps(bw),
                units::duration(lat)
            )
        })
        .collect()
}

fn link_rows(ui: &mut Ui, l: &Link) {
    ui.label(format!("kind: {}", link_name(l.kind)));
    ui.label(format!("bandwidth: {} each way", gbps(l.bandwidth)));
    ui.label(format!("latency: {}", units::duration(l.latency)));
}

fn uplink_rows(ui: &mut Ui, u: &Uplink) {
    ui.label(format!(
        "{} {} link{}, {} in all each way",
        u.links,
        link_name(u.kind),
        if u.links == 1 { "" } else { "s" },
        gbps(u.bandwidth)
    ));
    ui.label(format!("latency: {}", units::duration(u.latency)));
}

/// "carried 1.2 GB, 37.0% busy" for a link's load (in its busier direction).
fn load_text(load: Option<Load>) -> String {
    match load {
        Some(l) => format!(
            "carried {} (busier direction), {} busy on average",
            units::bytes(l.bytes),
            units::percent(l.busy)
        ),
        None => "carried nothing in this run".into(),
    }
}

fn tooltip(ui: &mut Ui, layout: &Layout, hit: &Hit, traffic: Option<&Traffic>) {
    let devs = &layout.devices;
    match hit {
        Hit::Device(d) => {
            let dev = &devs[*d];
            ui.strong(&dev.name);
            let mut kind = kind_name(&dev.kind).to_string();
            if let DeviceKind::Gpu { rank } = dev.kind {
                kind = format!("GPU, rank {rank}");
            }
            match dev.node {
                Some(n) => ui.label(format!("{kind} in node {n}")),
                None => ui.label(kind),
            };
            for line in device_links(layout, *d) {
                ui.label(line);
            }
            if matches!(dev.kind, DeviceKind::Gpu { .. }) {
                ui.weak("click: show its timeline lanes");
            }
        }
        Hit::Server(n) => {
            let s = &layout.servers[*n as usize];
            ui.strong(format!("node {n}"));
            let first = n * layout.gpus_per_node;
            ui.label(format!(
                "{} GPUs (ranks {}–{}), {} devices",
                s.gpus,
                first,
                first + s.gpus.saturating_sub(1),
                s.devices.len()
            ));
            ui.weak("click or zoom in to see inside");
        }
        Hit::Link(i) => {
            let l = &layout.links[*i];
            ui.strong(format!("{} — {}", devs[l.a].name, devs[l.b].name));
            link_rows(ui, l);
            if let Some(t) = traffic {
                ui.label(load_text(t.links[*i]));
            }
        }
        Hit::Uplink(i) => {
            let u = &layout.uplinks[*i];
            ui.strong(format!("node {} — {}", u.node, devs[u.to].name));
            uplink_rows(ui, u);
            if let Some(t) = traffic {
                ui.label(load_text(t.uplinks[*i]));
            }
        }
    }
    if traffic.is_none() {
        ui.weak("utilisation: not recorded for this kind of run");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology_layout::from_scenario;
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use std::sync::Arc;

    fn layout(rel: &str) -> Arc<Layout> {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(rel);
        let s = clustersim::Scenario::load(&path, &[]).unwrap();
        from_scenario(&s).layout.unwrap()
    }

    fn harness(l: Arc<Layout>) -> Harness<'static, TopologyState> {
        harness_with(l, None)
    }

    fn harness_with(l: Arc<Layout>, traffic: Option<Traffic>) -> Harness<'static, TopologyState> {
        let mut h = Harness::new_ui_state(
            move |ui, state: &mut TopologyState| {
                show(ui, state, &l, traffic.as_ref());
            },
            TopologyState::default(),
        );
        h.set_size(egui::vec2(1200.0, 700.0));
        h.run();
        h
    }

    #[test]
    fn one_server_shows_its_gpus_in_detail() {
        let h = harness(layout("training/gpt3-1.3b-8xh100.toml"));
        h.get_by_label("1 server · 8 GPUs (8 per server)");
        h.get_by_label("no network switches (one server)");
        h.get_by_label_contains("NVLink");
        h.get_by_label_contains("not utilisation");
        assert_eq!(h.state().detailed, 1);
        // Eight GPU-NVSwitch links.
        assert_eq!(h.state().drawn, 8);
    }

    #[test]
    fn a_multi_node_cluster_shows_its_switch_tiers() {
        let h = harness(layout("training/megatron-1.7b-32xa100.toml"));
        h.get_by_label("4 servers · 32 GPUs (8 per server)");
        h.get_by_label_contains("switch tiers: leaf");
        h.get_by_label_contains("network");
        assert_eq!(h.state().detailed, 4);
    }

    #[test]
    fn at_1024_gpus_servers_are_boxes_with_summed_uplinks() {
        let l = layout("training/gpt3-175b-1024xa100-ptdp.toml");
        let edges = l.links.len();
        let h = harness(l);
        h.get_by_label("128 servers · 1024 GPUs (8 per server)");
        h.get_by_label_contains("spine");
        assert_eq!(h.state().detailed, 0);
        assert!(
            h.state().drawn * 3 < edges,
            "{} lines drawn of {edges} links",
            h.state().drawn
        );
    }

    /// A collective run: the header shows the utilisation scale and the busiest link instead of
    /// the note that utilisation is not recorded.
    #[test]
    fn a_collective_run_colours_links_by_utilisation() {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/papers/zccl-all-reduce-16x4xa100-slow.toml");
        let s = clustersim::Scenario::load(&path, &[]).unwrap();
        let report = clustersim::run(&s).unwrap().report;
        let l = from_scenario(&s).layout.unwrap();
        let t = crate::link_traffic::from_report(&report, &l).unwrap();
        let h = harness_with(l, Some(t));
        h.get_by_label("utilisation over the run:");
        h.get_by_label_contains("busiest: ");
        h.get_by_label_contains("average utilisation over the run's");
        assert!(h.query_by_label_contains("not utilisation").is_none());
        assert!(h.state().drawn > 0);
    }

    #[test]
    fn utilisation_colours_run_from_green_to_red() {
        assert_eq!(busy_color(0.0), Color32::from_rgb(60, 170, 90));
        assert_eq!(busy_color(0.5), Color32::from_rgb(230, 200, 40));
        assert_eq!(busy_color(1.0), Color32::from_rgb(220, 50, 50));
        assert_eq!(busy_color(3.0), busy_color(1.0));
    }

    #[test]
    fn gbps_reads_well() {
        assert_eq!(gbps(450e9), "450 GB/s");
        assert_eq!(gbps(25e9), "25.0 GB/s");
        assert_eq!(gbps(0.125e9), "0.125 GB/s");
    }
}
