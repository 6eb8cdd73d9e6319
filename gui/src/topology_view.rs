//! The Topology tab: the run's cluster as a graph, placed by
//! [`topology_layout`](crate::topology_layout).
//!
//! Draws servers with their devices, the switch tiers and every link, coloured by kind and thicker
//! for more bandwidth, or by utilisation (grey unused, green to red at 100% of line rate over the
//! run) when the run recorded it (`link_traffic`); serving and diffusion runs do not, and the tab
//! says so rather than inventing numbers. Hovering shows a device's or link's name, kind,
//! bandwidth (GB/s, one direction) and latency; clicking a GPU asks the app for its lanes
//! ([`gpu_lanes`](crate::gpu_lanes)). A server narrower than [`DETAIL_PX`] on screen is one box
//! with one summed line per switch ([`Uplink`]); clicking it zooms onto it. Only what is on screen
//! is drawn, so the cost follows the view, not the cluster.
//!
//! Ignored: routes of a chosen collective, editing the topology, and per-direction bandwidths of
//! asymmetric links. What it shows, in full: docs/GUI.md#what-each-part-shows.

use crate::link_traffic::{Load, Traffic};
use crate::topology_layout::{Layout, kind_name};
use crate::topology_links::{Link, Uplink, link_name};
use crate::topology_scene::{Hit, Scene};
use crate::units;
use clustersim::net::topology::{DeviceKind, LinkKind};
use egui::{Align2, Color32, CursorIcon, FontId, Pos2, Rect, Response, Sense, Stroke, Ui, vec2};

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

    pub(crate) fn to_screen(self, canvas: Rect, p: Pos2) -> Pos2 {
        canvas.center() + (p - self.center) * self.scale
    }

    pub(crate) fn to_world(self, canvas: Rect, p: Pos2) -> Pos2 {
        self.center + (p - canvas.center()) / self.scale
    }

    pub(crate) fn rect(self, canvas: Rect, r: Rect) -> Rect {
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
pub(crate) const UNUSED: Color32 = Color32::from_rgb(110, 110, 110);

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
    let mut cam = steer(
        ui,
        &response,
        canvas,
        state.camera.unwrap_or(fitted),
        fitted,
    );

    let visuals = ui.visuals();
    let text = visuals.text_color();
    let painter = ui.painter_at(canvas);
    painter.rect_filled(canvas, 0.0, visuals.extreme_bg_color);
    let scene = Scene::new(layout, canvas, cam, traffic);
    let pointer = response.hover_pos().filter(|_| !response.dragged());
    let hovered = scene.paint(&painter, visuals, pointer);
    scene.outline(&painter, hovered.as_ref(), text);
    state.drawn = scene.lines_drawn();
    state.detailed = scene.servers_detailed();
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
        visuals.weak_text_color(),
    );

    let mut clicked = None;
    if response.clicked()
        && let Some(h) = &hovered
    {
        clicked = click(layout, h, canvas, &mut cam);
    }
    if let Some(h) = &hovered {
        let devs = &layout.devices;
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

/// Zooms `cam` around the pointer, pans it by dragging, fits it on a double-click.
fn steer(ui: &Ui, response: &Response, canvas: Rect, mut cam: Camera, fitted: Camera) -> Camera {
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
    cam
}

/// A click on `hit`: a GPU's rank is returned; a collapsed server is zoomed onto.
fn click(layout: &Layout, hit: &Hit, canvas: Rect, cam: &mut Camera) -> Option<u32> {
    match hit {
        Hit::Device(d) => {
            if let DeviceKind::Gpu { rank } = layout.devices[*d].kind {
                return Some(rank);
            }
        }
        Hit::Server(n) => {
            // Zoom so that the server fills about a third of the width.
            let r = layout.servers[*n as usize].rect;
            *cam = Camera {
                center: r.center(),
                scale: (canvas.width() / 3.0 / r.width()).clamp(DETAIL_PX / r.width(), MAX_SCALE),
            };
        }
        _ => {}
    }
    None
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
