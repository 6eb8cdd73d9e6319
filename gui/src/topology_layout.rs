//! Where each device of a run's cluster goes on the Topology tab, worked out once per run on the
//! worker thread.
//!
//! [`from_scenario`] builds the run's `clustersim::net::Topology` again the way the workload does
//! (training's set-up, or `[cluster]` for serving, diffusion and collectives) and [`Layout::new`]
//! places it in world coordinates: servers as boxes in rows, in node order (NICs on top, then
//! NVSwitch / PCIe switches / host, then GPUs, 8 a row); shared switches in tiers above, bottom
//! up (leaves, spines, cores, WAN routers, in build order); torus routers just above their server.
//! Every physical link (two directed edges) becomes one [`Link`], classed as inside a server, an
//! uplink, or between switches; uplinks are also summed per (server, switch) pair ([`Uplink`],
//! `topology_links`). Per-link traffic is placed on this layout by `link_traffic`.
//!
//! Ignored: a link's direction (the shipped builders' two directions are alike; the first is
//! kept), and graph-drawing optimisation (crossings are not minimised).

use crate::topology_links::{self, Class, Link, Uplink};
use clustersim::net::Topology;
use clustersim::net::topology::DeviceKind;
use clustersim::scenario::{Kind, Scenario};
use egui::{Pos2, Rect, Vec2, pos2, vec2};
use std::collections::BTreeMap;

/// Side of a device's square inside a server, and the pitch between them.
pub const DEVICE: f32 = 18.0;
const PITCH: f32 = 22.0;
const PER_LINE: usize = 8;
const PAD: f32 = 8.0;
const HEADER: f32 = 16.0;
const SERVER_GAP_X: f32 = 30.0;
const SERVER_GAP_Y: f32 = 70.0;
const TIER_GAP: f32 = 90.0;
/// World units left of everything for the tiers' names.
const LABEL_ROOM: f32 = 110.0;
/// A shared switch's size.
pub const SWITCH: Vec2 = vec2(34.0, 16.0);

/// One device and where it is drawn.
#[derive(Clone, Debug)]
pub struct Placed {
    pub name: String,
    pub kind: DeviceKind,
    pub node: Option<u32>,
    /// Centre, world coordinates.
    pub pos: Pos2,
    pub size: Vec2,
}

impl Placed {
    pub fn rect(&self) -> Rect {
        Rect::from_center_size(self.pos, self.size)
    }
}

/// One server box.
#[derive(Clone, Debug)]
pub struct Server {
    pub node: u32,
    pub rect: Rect,
    pub gpus: u32,
    /// Indices of its devices.
    pub devices: Vec<usize>,
}

/// A row of shared switches of one kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Tier {
    pub label: &'static str,
    pub count: usize,
    /// World y of the row and x of its first switch's left edge (NaN: no row of its own).
    pub y: f32,
    pub x0: f32,
}

/// A placed topology.
#[derive(Clone, Debug)]
pub struct Layout {
    /// What was built, e.g. "NVSwitch + fat-tree".
    pub name: String,
    pub gpus: u32,
    pub gpus_per_node: u32,
    /// By graph vertex index.
    pub devices: Vec<Placed>,
    /// By node.
    pub servers: Vec<Server>,
    /// Bottom up; torus routers (beside their servers) are counted as a tier without a row.
    pub tiers: Vec<Tier>,
    pub links: Vec<Link>,
    pub uplinks: Vec<Uplink>,
    pub classes: Vec<Class>,
    /// Everything drawn, world coordinates.
    pub bounds: Rect,
}

/// The kind of a device, in words.
pub fn kind_name(kind: &DeviceKind) -> &'static str {
    match kind {
        DeviceKind::Gpu { .. } => "GPU",
        DeviceKind::NvSwitch => "NVSwitch",
        DeviceKind::PcieSwitch => "PCIe switch",
        DeviceKind::Host => "host (CPU)",
        DeviceKind::Nic => "NIC",
        DeviceKind::Leaf => "leaf switch",
        DeviceKind::Spine => "spine switch",
        DeviceKind::Core => "core switch",
        DeviceKind::Router => "router",
    }
}

/// Row of a shared device (bottom up) and its tier's name.
fn tier_of(kind: &DeviceKind) -> (u8, &'static str) {
    match kind {
        DeviceKind::Leaf => (0, "leaf"),
        DeviceKind::Spine => (1, "spine"),
        DeviceKind::Core => (2, "core"),
        DeviceKind::Router => (3, "WAN router"),
        DeviceKind::Nic => (4, "NIC"),
        DeviceKind::Host => (5, "host"),
        DeviceKind::PcieSwitch => (6, "PCIe switch"),
        DeviceKind::NvSwitch => (7, "NVSwitch"),
        DeviceKind::Gpu { .. } => (8, "GPU"),
    }
}

/// Row inside a server: 0 NICs, 1 switches and host, 2 GPUs.
fn row_in_server(kind: &DeviceKind) -> usize {
    match kind {
        DeviceKind::Nic => 0,
        DeviceKind::Gpu { .. } => 2,
        _ => 1,
    }
}

/// Lines needed for `n` devices at `PER_LINE` a line.
fn lines(n: usize) -> usize {
    n.div_ceil(PER_LINE)
}

impl Layout {
    /// Places every device and link of `topology`.
    pub fn new(topology: &Topology) -> Layout {
        let g = &topology.graph;
        let nodes = topology.nodes as usize;
        let sorted = Sorted::of(topology);
        let size = ServerBox::of(&sorted.inside);
        // Servers a row: all of them up to 8, then about twice as many columns as rows, at most 16.
        let cols = if nodes <= 8 {
            nodes.max(1)
        } else {
            ((2.0 * nodes as f32).sqrt().ceil() as usize).clamp(8, 16)
        };
        let mut devices: Vec<Placed> = g
            .node_indices()
            .map(|v| Placed {
                name: g[v].name.clone(),
                kind: g[v].kind.clone(),
                node: g[v].node,
                pos: Pos2::ZERO,
                size: SWITCH,
            })
            .collect();
        let servers = place_servers(&sorted.inside, &size, cols, &mut devices);
        let tiers = place_shared(&sorted, &servers, &size, cols, &mut devices);
        let (links, uplinks) = topology_links::links(topology, &devices);
        let classes = topology_links::classes(&links);
        let bounds = bounds(&servers, &devices);
        Layout {
            name: topology.name.clone(),
            gpus: topology.gpu_count(),
            gpus_per_node: topology.gpus_per_node,
            devices,
            servers,
            tiers,
            links,
            uplinks,
            classes,
            bounds,
        }
    }

    /// "leaf 4 · spine 2", or a sentence when there is no switch between servers.
    pub fn tiers_text(&self) -> String {
        if self.tiers.is_empty() {
            return if self.servers.len() <= 1 {
                "no network switches (one server)".into()
            } else {
                "no switches between servers".into()
            };
        }
        let parts: Vec<String> = self
            .tiers
            .iter()
            .map(|t| format!("{} {}", t.label, t.count))
            .collect();
        format!("switch tiers: {}", parts.join(" · "))
    }

    /// "4 servers · 32 GPUs (8 per server)".
    pub fn servers_text(&self) -> String {
        let s = self.servers.len();
        format!(
            "{s} server{} · {} GPUs ({} per server)",
            if s == 1 { "" } else { "s" },
            self.gpus,
            self.gpus_per_node
        )
    }
}

/// A topology's devices sorted by where they go.
struct Sorted {
    /// By node: its devices in rows (NICs, switches and host, GPUs).
    inside: Vec<[Vec<usize>; 3]>,
    /// By device: the server a torus router sits above.
    beside: Vec<Option<u32>>,
    /// By tier row, bottom up: the tier's name and its devices in build order.
    tiers: BTreeMap<u8, (&'static str, Vec<usize>)>,
}

impl Sorted {
    fn of(topology: &Topology) -> Sorted {
        let g = &topology.graph;
        let n_dev = g.node_count();
        let nodes = topology.nodes as usize;

        // Devices of each server, by row.
        let mut inside: Vec<[Vec<usize>; 3]> = vec![Default::default(); nodes];
        for v in g.node_indices() {
            if let Some(node) = g[v].node
                && (node as usize) < nodes
            {
                inside[node as usize][row_in_server(&g[v].kind)].push(v.index());
            }
        }
        // Shared devices: a router wired to one server only sits beside it (torus); the rest go
        // in tiers by kind.
        let mut beside: Vec<Option<u32>> = vec![None; n_dev];
        let mut tiers: BTreeMap<u8, (&'static str, Vec<usize>)> = BTreeMap::new();
        for v in g.node_indices() {
            let d = &g[v];
            if d.node.is_some_and(|n| (n as usize) < nodes) {
                continue;
            }
            if d.kind == DeviceKind::Router {
                let mut servers = g.neighbors_undirected(v).filter_map(|w| g[w].node);
                if let Some(first) = servers.next()
                    && servers.all(|n| n == first)
                {
                    beside[v.index()] = Some(first);
                    continue;
                }
            }
            let (row, label) = tier_of(&d.kind);
            tiers
                .entry(row)
                .or_insert((label, Vec::new()))
                .1
                .push(v.index());
        }
        Sorted {
            inside,
            beside,
            tiers,
        }
    }
}

/// The size of every server box: the largest server's rows.
struct ServerBox {
    w: f32,
    h: f32,
    /// Lines of each row in the server that needs most.
    row_lines: [usize; 3],
}

impl ServerBox {
    fn of(inside: &[[Vec<usize>; 3]]) -> ServerBox {
        let widest = inside
            .iter()
            .flat_map(|rows| rows.iter().map(|r| r.len().min(PER_LINE)))
            .max()
            .unwrap_or(1)
            .max(4);
        let row_lines: [usize; 3] = std::array::from_fn(|r| {
            inside
                .iter()
                .map(|rows| lines(rows[r].len()))
                .max()
                .unwrap_or(0)
        });
        let used_rows = row_lines.iter().filter(|&&l| l > 0).count();
        let w = 2.0 * PAD + widest as f32 * PITCH;
        let h = HEADER
            + PAD
            + row_lines.iter().sum::<usize>() as f32 * PITCH
            + used_rows.saturating_sub(1) as f32 * 6.0;
        ServerBox { w, h, row_lines }
    }
}

/// Lays the server boxes out `cols` a row in node order and places their devices inside.
fn place_servers(
    inside: &[[Vec<usize>; 3]],
    size: &ServerBox,
    cols: usize,
    devices: &mut [Placed],
) -> Vec<Server> {
    let mut servers = Vec::with_capacity(inside.len());
    for (node, rows) in inside.iter().enumerate() {
        let (c, r) = (node % cols, node / cols);
        let min = pos2(
            c as f32 * (size.w + SERVER_GAP_X),
            r as f32 * (size.h + SERVER_GAP_Y),
        );
        let rect = Rect::from_min_size(min, vec2(size.w, size.h));
        let mut y = min.y + HEADER;
        let mut list = Vec::new();
        for (k, row) in rows.iter().enumerate() {
            if size.row_lines[k] == 0 {
                continue;
            }
            let per = row.len().clamp(1, PER_LINE);
            let x0 = rect.center().x - per as f32 * PITCH / 2.0 + PITCH / 2.0;
            for (i, &d) in row.iter().enumerate() {
                let (line, col) = (i / PER_LINE, i % PER_LINE);
                devices[d].pos = pos2(
                    x0 + col as f32 * PITCH,
                    y + line as f32 * PITCH + PITCH / 2.0,
                );
                devices[d].size = match devices[d].kind {
                    DeviceKind::Nic => vec2(DEVICE, DEVICE * 0.6),
                    _ => vec2(DEVICE, DEVICE),
                };
                list.push(d);
            }
            y += size.row_lines[k] as f32 * PITCH + 6.0;
        }
        let gpus = rows[2]
            .iter()
            .filter(|&&d| matches!(devices[d].kind, DeviceKind::Gpu { .. }))
            .count() as u32;
        servers.push(Server {
            node: node as u32,
            rect,
            gpus,
            devices: list,
        });
    }
    servers
}

/// Places the torus routers above their servers and the shared switches in tiers above all
/// servers; returns the tiers, torus routers first.
fn place_shared(
    sorted: &Sorted,
    servers: &[Server],
    size: &ServerBox,
    cols: usize,
    devices: &mut [Placed],
) -> Vec<Tier> {
    let nodes = sorted.inside.len();
    let width = if nodes == 0 {
        size.w
    } else {
        cols as f32 * (size.w + SERVER_GAP_X) - SERVER_GAP_X
    };
    for (d, node) in sorted.beside.iter().enumerate() {
        if let Some(n) = node {
            let r = servers[*n as usize].rect;
            devices[d].pos = pos2(r.center().x, r.top() - SERVER_GAP_Y / 2.0);
        }
    }
    // Tiers further apart over many rows of servers, so that the lines fanning out of them
    // stay apart.
    let rows_of_servers = nodes.div_ceil(cols.max(1));
    let tier_gap = (0.2 * rows_of_servers as f32 * (size.h + SERVER_GAP_Y)).max(TIER_GAP);
    let mut tier_rows = Vec::new();
    for (i, (_, (label, list))) in sorted.tiers.iter().enumerate() {
        let y = -tier_gap * (i as f32 + 1.0) + if nodes == 0 { tier_gap } else { 0.0 };
        let step = width / list.len() as f32;
        for (k, &d) in list.iter().enumerate() {
            devices[d].pos = pos2((k as f32 + 0.5) * step, y);
            devices[d].size = vec2(SWITCH.x.min(step * 0.8).max(4.0), SWITCH.y);
        }
        tier_rows.push(Tier {
            label,
            count: list.len(),
            y,
            x0: list.first().map_or(0.0, |&d| devices[d].rect().left()),
        });
    }
    let attached = sorted.beside.iter().filter(|b| b.is_some()).count();
    if attached > 0 {
        tier_rows.insert(
            0,
            Tier {
                label: "torus router",
                count: attached,
                y: f32::NAN,
                x0: f32::NAN,
            },
        );
    }
    tier_rows
}

/// Everything drawn, with room on the left for the tiers' names.
fn bounds(servers: &[Server], devices: &[Placed]) -> Rect {
    let mut bounds = Rect::NOTHING;
    for s in servers {
        bounds = bounds.union(s.rect);
    }
    for d in devices {
        bounds = bounds.union(d.rect());
    }
    bounds.expand(20.0).expand2(vec2(0.0, 10.0))
        | Rect::from_min_size(bounds.min - vec2(LABEL_ROOM, 0.0), Vec2::ZERO)
}

/// Which simulated GPU's lanes stand for each GPU of the cluster.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stands {
    /// Training: one GPU per pipeline stage, the stage's first rank (`stage x stride`).
    Stages { pp: u32, stride: u32 },
    /// Lanes are grouped "GPU 0" for the one GPU simulated (diffusion, collectives).
    RankZero,
    /// Lanes are not per GPU (serving: per replica or server).
    NotPerGpu,
}

/// A run's topology placed, or why there is none; and which GPUs have lanes.
#[derive(Clone, Debug)]
pub struct Built {
    pub layout: Result<std::sync::Arc<Layout>, String>,
    pub stands: Stands,
    /// How busy each link was, when the run recorded it (`link_traffic`; set once the run is in).
    pub traffic: Option<crate::link_traffic::Traffic>,
}

/// Builds the scenario's topology as its workload does, and places it (worker thread).
pub fn from_scenario(scenario: &Scenario) -> Built {
    let located = |e: clustersim::scenario::error::ScenarioError| e.to_string();
    let (topology, stands) = match scenario.kind {
        Kind::Training => match clustersim::scenario::lower::training::resolve(scenario) {
            Ok(t) => (
                Ok(t.topology.clone()),
                Stands::Stages {
                    pp: t.pp,
                    stride: t.stride.pp,
                },
            ),
            Err(e) => (Err(located(e)), Stands::NotPerGpu),
        },
        kind => {
            let stands = match kind {
                Kind::Serving => Stands::NotPerGpu,
                _ => Stands::RankZero,
            };
            let topology = clustersim::scenario::lower::cluster_topology(scenario).map_err(located);
            (topology, stands)
        }
    };
    Built {
        layout: topology.map(|t| std::sync::Arc::new(Layout::new(&t))),
        stands,
        traffic: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology_links::Scope;
    use std::path::PathBuf;

    pub(crate) fn built(rel: &str) -> Built {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(rel);
        let s = Scenario::load(&path, &[]).expect("the scenario loads");
        from_scenario(&s)
    }

    /// Every device has a finite place; a server's devices sit inside its box, apart from each
    /// other; shared switches sit outside every server box.
    fn check_placed(l: &Layout) {
        for (i, d) in l.devices.iter().enumerate() {
            assert!(d.pos.x.is_finite() && d.pos.y.is_finite(), "{}", d.name);
            assert!(
                l.bounds.contains_rect(d.rect()),
                "{} outside the bounds",
                d.name
            );
            match d.node {
                Some(n) => {
                    let s = &l.servers[n as usize];
                    assert!(
                        s.rect.contains_rect(d.rect()),
                        "{} outside its server",
                        d.name
                    );
                    assert!(s.devices.contains(&i), "{} not listed", d.name);
                }
                None => {
                    assert!(
                        l.servers.iter().all(|s| !s.rect.contains(d.pos)),
                        "{} inside a server",
                        d.name
                    );
                }
            }
        }
        for s in &l.servers {
            let mut at: Vec<(i64, i64)> = s
                .devices
                .iter()
                .map(|&d| (l.devices[d].pos.x as i64, l.devices[d].pos.y as i64))
                .collect();
            at.sort();
            let n = at.len();
            at.dedup();
            assert_eq!(at.len(), n, "two devices of node {} overlap", s.node);
        }
        let gpus = l
            .devices
            .iter()
            .filter(|d| matches!(d.kind, DeviceKind::Gpu { .. }));
        assert_eq!(gpus.count() as u32, l.gpus);
        for w in l.servers.windows(2) {
            assert!(!w[0].rect.intersects(w[1].rect), "servers overlap");
        }
    }

    #[test]
    fn one_server_has_its_gpus_and_nvswitch_and_no_tiers() {
        let b = built("training/gpt3-1.3b-8xh100.toml");
        let l = b.layout.expect("a topology");
        check_placed(&l);
        assert_eq!(l.servers.len(), 1);
        assert_eq!(l.servers[0].gpus, 8);
        assert!(l.tiers.is_empty());
        assert_eq!(l.tiers_text(), "no network switches (one server)");
        assert!(l.devices.iter().any(|d| d.kind == DeviceKind::NvSwitch));
        assert!(l.links.iter().all(|x| x.scope == Scope::Inside(0)));
        assert!(matches!(b.stands, Stands::Stages { pp: 1, .. }));
    }

    #[test]
    fn layout_places_every_device_of_every_kind_of_network() {
        for rel in [
            "training/megatron-1.7b-32xa100.toml",
            "training/llama-2-7b-torus-flow.toml",
            "training/gpt3-1.3b-two-sites-wan.toml",
            "training/gpt3-175b-1024xa100-ptdp.toml",
            "serving/llama-3-70b-disaggregated-2p6d.toml",
            "diffusion/cogvideox-5b-8xh100-pipefusion-cfg.toml",
        ] {
            let l = built(rel).layout.unwrap_or_else(|e| panic!("{rel}: {e}"));
            check_placed(&l);
            // Every link's ends are placed devices; every uplink sums links that exist.
            let ups: u32 = l.uplinks.iter().map(|u| u.links).sum();
            let up_links = l.links.iter().filter(|x| matches!(x.scope, Scope::Up(_)));
            assert_eq!(ups as usize, up_links.count(), "{rel}");
        }
    }

    #[test]
    fn a_fat_tree_has_leaf_and_spine_tiers_and_a_torus_its_routers() {
        let l = built("training/megatron-1.7b-32xa100.toml").layout.unwrap();
        assert_eq!(l.servers.len(), 4);
        assert!(
            l.tiers_text().starts_with("switch tiers: leaf "),
            "{}",
            l.tiers_text()
        );
        let l = built("training/gpt3-175b-1024xa100-ptdp.toml")
            .layout
            .unwrap();
        assert_eq!(l.servers.len(), 128);
        assert_eq!(l.gpus, 1024);
        assert!(l.tiers_text().contains("spine"), "{}", l.tiers_text());
        let l = built("training/llama-2-7b-torus-flow.toml").layout.unwrap();
        assert!(
            l.tiers_text().contains("torus router"),
            "{}",
            l.tiers_text()
        );
    }
}
