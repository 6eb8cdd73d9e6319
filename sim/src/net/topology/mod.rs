//! Topologies: the cluster as a directed graph (petgraph) of devices and links (each physical link
//! two directed edges, with bandwidth in bytes/s and latency in s), and routes through it. GPUs
//! are numbered by global rank, node-major: rank = node * gpus_per_node + local index.
//!
//! [`Topology::build`] turns a [`TopologySpec`] into an **intra-node** part per server
//! (`nvswitch`, `nvlink_mesh` or `pcie`) and an **inter-node** part: `nic` vertices hang off the
//! GPUs, wired by `fat_tree`, `rail_optimized`, `multi_pod`, `torus` or `wan`; a `graph` file
//! replaces both. [`Topology::route`] follows the structure: NVSwitch, mesh link or PCIe tree
//! inside a server; GPU -> NIC -> leaf -> [spine -> [core | WAN] -> spine ->] leaf -> NIC -> GPU
//! between servers, equal spines and cores picked by a fixed hash of the rank pair (ECMP);
//! dimension order on tori; BFS on explicit graphs (all deterministic). Hop latencies add up to
//! the configured figure (docs/NETWORK.md#topologies), as in [`Fabric`](crate::net::Fabric).
//!
//! Ignored: switch buffers, queueing, packets, adaptive routing, in-network reduction, PXN,
//! GPU-NIC PCIe switches, failures but a leaf-spine or spine-core cable's (`failure.rs`).

pub mod catalog;
pub(crate) mod clos;
pub(crate) mod failure;
pub(crate) mod fat_tree;
pub(crate) mod graph;
pub(crate) mod multi_pod;
pub(crate) mod nic;
pub(crate) mod nvlink_mesh;
pub(crate) mod nvswitch;
pub(crate) mod pcie;
pub(crate) mod rail_optimized;
pub mod refusal;
mod routing;
pub mod spec;
pub(crate) mod torus;
pub(crate) mod wan;

pub use catalog::{CatalogEntry, catalog};
pub use refusal::{Part, Refusal};
pub use spec::{GraphSource, InterKind, IntraKind, TopologySpec};

use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use routing::Routing;

/// What a vertex of the topology is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    Gpu { rank: u32 },
    NvSwitch,
    PcieSwitch,
    Host,
    Nic,
    Leaf,
    Spine,
    Core,
    Router,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub kind: DeviceKind,
    /// Unique, readable name: "node3/gpu5", "leaf12", "spine0", ...
    pub name: String,
    /// The server the device sits in (GPUs, NVSwitches, PCIe switches, hosts, NICs); `None` for
    /// network switches and routers shared by servers.
    pub node: Option<u32>,
}

/// Kinds of link, declared from the fastest to the slowest: the order compares them (the slowest
/// kind a route crosses is the largest).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkKind {
    NvLink,
    Pcie,
    Network,
    Wan,
}

impl LinkKind {
    /// The name reports use: `nvlink`, `pcie`, `network`, `wan`.
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::NvLink => "nvlink",
            LinkKind::Pcie => "pcie",
            LinkKind::Network => "network",
            LinkKind::Wan => "wan",
        }
    }
}

/// One direction of a physical link.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub kind: LinkKind,
    /// Bytes per second in this direction.
    pub bandwidth: f64,
    /// One-way latency, seconds.
    pub latency: f64,
}

/// A built topology.
#[derive(Clone, Debug)]
pub struct Topology {
    pub name: String,
    pub graph: DiGraph<Device, Link>,
    /// The vertex of each GPU, by global rank.
    pub gpus: Vec<NodeIndex>,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// What was built.
    pub spec: TopologySpec,
    routing: Routing,
}

impl Topology {
    /// Nodes along each dimension when the nodes form a torus (`torus-2d`, `torus-3d`).
    pub fn torus_dims(&self) -> Option<&[u32]> {
        match &self.routing {
            Routing::Structured {
                inter: routing::Inter::Torus(t),
                ..
            } => Some(&t.dims),
            _ => None,
        }
    }
}

/// A path from one GPU to another: the directed edges in order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Route {
    pub links: Vec<EdgeIndex>,
}

impl Route {
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    pub fn len(&self) -> usize {
        self.links.len()
    }
}

impl Topology {
    /// Divides the bandwidth of every network link of server `node` (its NICs' cables, both
    /// directions) by `factor`: a degraded NIC or cable, which every route through the server
    /// then crosses at its pace.
    pub fn slow_node(&mut self, node: u32, factor: f64) {
        let edges: Vec<_> = self.graph.edge_indices().collect();
        for e in edges {
            let (a, b) = self.graph.edge_endpoints(e).expect("an edge of the graph");
            let here = |v: petgraph::graph::NodeIndex| self.graph[v].node == Some(node);
            let network = matches!(self.graph[e].kind, LinkKind::Network | LinkKind::Wan);
            if network && (here(a) || here(b)) {
                self.graph[e].bandwidth /= factor;
            }
        }
    }

    /// Fails the cable of `e` (either direction of a leaf-spine or spine-core link): the routes
    /// that crossed it move to surviving spines or cores (`failure.rs`). Errors, in words: the
    /// link is of another kind or fabric, or its failure cuts a leaf or a spine off.
    pub fn fail_link(&mut self, e: EdgeIndex) -> Result<(), String> {
        let Routing::Structured {
            inter: routing::Inter::Clos(clos),
            ..
        } = &mut self.routing
        else {
            return Err(format!(
                "a failed link reroutes traffic on a leaf/spine fabric (fat-tree, \
                 rail-optimized, multi-pod, wan), not on {}",
                self.name
            ));
        };
        let name = |v: NodeIndex| self.graph[v].name.clone();
        clos.fail(e).map_err(|why| match why {
            failure::FailError::NotLeafSpine => {
                "only a cable between a leaf and a spine, or a spine and a core, can fail here: \
                 a NIC's cable failing stops NCCL's communicator (a job restart, which \
                 [reliability] prices), and WAN links are not rerouted"
                    .to_string()
            }
            failure::FailError::Cut(a, None) => {
                format!(
                    "{} would have no uplink left",
                    name(clos.leaf_vertices[a as usize])
                )
            }
            failure::FailError::Cut(a, Some(b)) => format!(
                "no spine would join {} and {} any more",
                name(clos.leaf_vertices[a as usize]),
                name(clos.leaf_vertices[b as usize])
            ),
            failure::FailError::CoreCut(a, b) => format!(
                "no core would join {} and {} any more",
                name(clos.spine_vertices[a as usize]),
                name(clos.spine_vertices[b as usize])
            ),
        })
    }

    /// Builds the graph `spec` describes, or says why it cannot be built.
    pub fn build(spec: &TopologySpec) -> Result<Topology, Refusal> {
        spec.validate()?;
        let mut b = Builder::with_capacity(spec);
        let routing = if spec.inter == InterKind::Graph {
            Routing::Graph(graph::build(&mut b, spec)?)
        } else {
            let intra = match spec.intra {
                IntraKind::NvSwitch => nvswitch::build(&mut b, spec),
                IntraKind::NvLinkMesh => nvlink_mesh::build(&mut b, spec),
                IntraKind::NvLinkPairs => nvlink_mesh::build_pairs(&mut b, spec),
                IntraKind::Pcie => pcie::build(&mut b, spec),
            };
            let (nics, inter) = if spec.nodes > 1 {
                let nics = nic::build(&mut b, spec);
                let inter = match spec.inter {
                    InterKind::FatTree => {
                        routing::Inter::Clos(fat_tree::build(&mut b, spec, &nics))
                    }
                    InterKind::RailOptimized => {
                        routing::Inter::Clos(rail_optimized::build(&mut b, spec, &nics))
                    }
                    InterKind::Torus2d | InterKind::Torus3d => {
                        routing::Inter::Torus(torus::build(&mut b, spec, &nics)?)
                    }
                    InterKind::Wan => routing::Inter::Clos(wan::build(&mut b, spec, &nics)),
                    InterKind::Graph => unreachable!("handled above"),
                };
                (Some(nics), inter)
            } else {
                (None, routing::Inter::None)
            };
            Routing::Structured { intra, nics, inter }
        };
        let gpus = std::mem::take(&mut b.gpus);
        debug_assert!(gpus.iter().all(|g| *g != NodeIndex::end()));
        Ok(Topology {
            name: spec.name(),
            graph: b.graph,
            gpus,
            nodes: spec.nodes,
            gpus_per_node: spec.gpus_per_node,
            spec: spec.clone(),
            routing,
        })
    }

    /// Number of GPUs.
    pub fn gpu_count(&self) -> u32 {
        self.gpus.len() as u32
    }

    /// The route from GPU `src_rank` to GPU `dst_rank` (its first lane between servers); empty
    /// when they are the same GPU.
    ///
    /// Panics when a rank is not a GPU of the topology.
    pub fn route(&self, src_rank: u32, dst_rank: u32) -> Route {
        let mut links = Vec::with_capacity(8);
        self.route_into(src_rank, dst_rank, &mut links);
        Route { links }
    }

    /// How many lanes the traffic from `src_rank` to `dst_rank` spreads over: the NICs of the
    /// source GPU (`nic::lanes`) between servers, 1 inside one.
    pub fn lanes(&self, src_rank: u32, dst_rank: u32) -> u32 {
        match &self.routing {
            Routing::Structured { nics: Some(n), .. }
                if src_rank / self.gpus_per_node != dst_rank / self.gpus_per_node =>
            {
                n.lanes
            }
            _ => 1,
        }
    }

    /// The route of lane `lane` (of [`Topology::lanes`]) from `src_rank` to `dst_rank`.
    pub fn route_lane(&self, src_rank: u32, dst_rank: u32, lane: u32) -> Route {
        let mut links = Vec::with_capacity(8);
        self.route_lane_into(src_rank, dst_rank, lane, &mut links);
        Route { links }
    }

    /// Like [`Topology::route`], appending the edges to `out` (which is not cleared), so that a
    /// caller routing many flows can reuse one buffer.
    pub fn route_into(&self, src_rank: u32, dst_rank: u32, out: &mut Vec<EdgeIndex>) {
        self.route_lane_into(src_rank, dst_rank, 0, out);
    }

    fn route_lane_into(&self, src_rank: u32, dst_rank: u32, lane: u32, out: &mut Vec<EdgeIndex>) {
        let n = self.gpu_count();
        assert!(
            src_rank < n && dst_rank < n,
            "route {src_rank} -> {dst_rank}: the topology has GPUs 0..{n}"
        );
        if src_rank == dst_rank {
            return;
        }
        self.routing
            .route(self.gpus_per_node, src_rank, dst_rank, lane, out);
    }

    /// Seconds to copy `bytes` between one GPU and host memory over the GPU's PCIe link, at
    /// the link's bulk-transfer efficiency.
    pub fn host_copy_seconds(&self, bytes: f64) -> f64 {
        bytes / (self.spec.pcie_bandwidth * crate::net::tier::Efficiency::DEFAULT.pcie)
    }

    /// One-way latency of a route: the sum of its links' latencies, seconds.
    pub fn route_latency(&self, route: &Route) -> f64 {
        route.links.iter().map(|&e| self.graph[e].latency).sum()
    }

    /// The smallest bandwidth along a route (bytes/s; infinite for an empty route).
    pub fn route_bandwidth(&self, route: &Route) -> f64 {
        route
            .links
            .iter()
            .map(|&e| self.graph[e].bandwidth)
            .fold(f64::INFINITY, f64::min)
    }

    /// The directed link `e`.
    pub fn link(&self, e: EdgeIndex) -> &Link {
        &self.graph[e]
    }

    /// The two ends (from, to) of the directed link `e`.
    pub fn ends(&self, e: EdgeIndex) -> (NodeIndex, NodeIndex) {
        self.graph
            .edge_endpoints(e)
            .expect("an edge of this topology")
    }

    /// The device named `name`, if any (linear search: for tests and tools, not hot paths).
    pub fn find(&self, name: &str) -> Option<NodeIndex> {
        self.graph
            .node_indices()
            .find(|&v| self.graph[v].name == name)
    }

    /// How many devices of each kind the graph holds, e.g. to print a summary.
    pub fn count(&self, kind: fn(&DeviceKind) -> bool) -> usize {
        self.graph.node_weights().filter(|d| kind(&d.kind)).count()
    }
}

/// Accumulates the graph while the parts are built.
pub(crate) struct Builder {
    pub graph: DiGraph<Device, Link>,
    /// GPU vertices by rank, filled by the intra-node part (or the graph file).
    pub gpus: Vec<NodeIndex>,
}

impl Builder {
    fn with_capacity(spec: &TopologySpec) -> Builder {
        let gpus = spec.nodes as usize * spec.gpus_per_node as usize;
        // GPUs, a switch or two and NICs per node, and a few switches: a guess, not a bound.
        let vertices = gpus * 2 + spec.nodes as usize * (2 + spec.nics_per_node as usize);
        Builder {
            graph: DiGraph::with_capacity(vertices, vertices * 4),
            gpus: vec![NodeIndex::end(); gpus],
        }
    }

    pub fn device(&mut self, kind: DeviceKind, name: String, node: Option<u32>) -> NodeIndex {
        self.graph.add_node(Device { kind, name, node })
    }

    /// Adds a GPU vertex of `rank` on `node` and records it.
    pub fn gpu(&mut self, rank: u32, node: u32, local: u32) -> NodeIndex {
        let v = self.device(
            DeviceKind::Gpu { rank },
            format!("node{node}/gpu{local}"),
            Some(node),
        );
        self.gpus[rank as usize] = v;
        v
    }

    /// Adds a physical link as two directed edges with the same bandwidth and latency: returns
    /// (a -> b, b -> a).
    pub fn link(
        &mut self,
        a: NodeIndex,
        b: NodeIndex,
        kind: LinkKind,
        bandwidth: f64,
        latency: f64,
    ) -> (EdgeIndex, EdgeIndex) {
        let link = Link {
            kind,
            bandwidth,
            latency,
        };
        let ab = self.graph.add_edge(a, b, link.clone());
        let ba = self.graph.add_edge(b, a, link);
        (ab, ba)
    }
}

/// Shared checks for the unit tests of every builder.
#[cfg(test)]
pub mod testing {
    use super::*;

    /// Every route between every pair of GPUs starts at the source, ends at the destination and
    /// is connected; intra-node routes stay inside the node. Returns the routes' total length.
    pub fn check_all_routes(t: &Topology) -> usize {
        let mut total = 0;
        for s in 0..t.gpu_count() {
            for d in 0..t.gpu_count() {
                let r = t.route(s, d);
                check_route(t, s, d, &r);
                total += r.len();
            }
        }
        total
    }

    pub fn check_route(t: &Topology, s: u32, d: u32, r: &Route) {
        if s == d {
            assert!(r.is_empty());
            return;
        }
        assert!(!r.is_empty(), "{s} -> {d}: empty route");
        let mut at = t.gpus[s as usize];
        for &e in &r.links {
            let (from, to) = t.ends(e);
            assert_eq!(
                from, at,
                "{s} -> {d}: route is not connected at {}",
                t.graph[at].name
            );
            at = to;
        }
        assert_eq!(at, t.gpus[d as usize], "{s} -> {d}: ends elsewhere");
        let g = t.gpus_per_node;
        if s / g == d / g && t.spec.inter != InterKind::Graph {
            for &e in &r.links {
                let (_, to) = t.ends(e);
                assert_eq!(
                    t.graph[to].node,
                    Some(s / g),
                    "{s} -> {d}: intra-node route leaves the node"
                );
            }
        }
        // No vertex twice.
        let mut seen: Vec<NodeIndex> = r.links.iter().map(|&e| t.ends(e).1).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), r.len(), "{s} -> {d}: route revisits a vertex");
    }

    pub fn names(t: &Topology, r: &Route) -> Vec<String> {
        let mut v = vec![];
        if let Some(&first) = r.links.first() {
            v.push(t.graph[t.ends(first).0].name.clone());
        }
        for &e in &r.links {
            v.push(t.graph[t.ends(e).1].name.clone());
        }
        v
    }
}
