//! Explicit graphs: a cluster described device by device and link by link in a TOML file, for
//! wirings the structured builders do not cover. The file replaces both the intra-node and the
//! inter-node parts; the scenario still says how many nodes and GPUs per node there are, and the
//! file must hold exactly that many GPUs. Each `[[device]]` has a unique `name` and a `kind`
//! (optional `rank`, `node`); each `[[link]]` joins `a` and `b` with a `bandwidth` per direction
//! and a one-way `latency`, both with units (optional `kind`), and becomes two directed edges.
//! Unknown keys are refused.
//!
//! Routing: fewest hops by breadth-first search from the source GPU, through any vertex (GPUs
//! included, for direct-connect wirings); ties go to the path reached first, neighbours visited in
//! file order, so routes are deterministic. One BFS tree per source GPU, cached on its first
//! route. Bandwidths and latencies play no part in the choice; every GPU must reach every other
//! (checked when building). Units: bytes/s per direction, seconds.
//!
//! The format with an example: docs/NETWORK.md#explicit-graphs.

use super::refusal::Refusal;
use super::spec::{GraphSource, TopologySpec};
use super::{Builder, DeviceKind, LinkKind};
use crate::quantity::{Bandwidth, Duration};
use crate::suggest::closest;
use petgraph::graph::{EdgeIndex, NodeIndex};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphFile {
    #[serde(default)]
    pub device: Vec<DeviceEntry>,
    #[serde(default)]
    pub link: Vec<LinkEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceEntry {
    pub name: String,
    pub kind: DeviceKindName,
    pub rank: Option<u32>,
    pub node: Option<u32>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
pub enum DeviceKindName {
    #[serde(rename = "gpu")]
    Gpu,
    #[serde(rename = "nvswitch")]
    NvSwitch,
    #[serde(rename = "pcie-switch")]
    PcieSwitch,
    #[serde(rename = "host")]
    Host,
    #[serde(rename = "nic")]
    Nic,
    #[serde(rename = "leaf")]
    Leaf,
    #[serde(rename = "spine")]
    Spine,
    #[serde(rename = "core")]
    Core,
    #[serde(rename = "router")]
    Router,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEntry {
    pub a: String,
    pub b: String,
    pub bandwidth: Bandwidth,
    pub latency: Duration,
    pub kind: Option<LinkKindName>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKindName {
    Nvlink,
    Pcie,
    Network,
    Wan,
}

/// Parses a graph file's text (no checks beyond its form).
fn parse(text: &str) -> Result<GraphFile, String> {
    toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())
}

/// BFS routing over an explicit graph.
#[derive(Clone, Debug)]
pub(crate) struct GraphRoutes {
    /// Out-neighbours of vertex `v`: `adj[adj_start[v]..adj_start[v + 1]]`, as (target, edge),
    /// sorted by target then edge.
    adj_start: Vec<u32>,
    adj: Vec<(u32, u32)>,
    /// Source vertex of each edge.
    edge_source: Vec<u32>,
    /// GPU vertex by rank.
    gpus: Vec<u32>,
    /// Per source rank, once routed from: the edge into each vertex on its BFS tree
    /// (`u32::MAX` where none).
    trees: Vec<OnceLock<Box<[u32]>>>,
}

const NONE: u32 = u32::MAX;

impl GraphRoutes {
    fn new(b: &Builder) -> GraphRoutes {
        let g = &b.graph;
        let n = g.node_count();
        let mut adj: Vec<(u32, u32, u32)> = g
            .edge_indices()
            .map(|e| {
                let (s, t) = g.edge_endpoints(e).expect("edge");
                (s.index() as u32, t.index() as u32, e.index() as u32)
            })
            .collect();
        adj.sort_unstable();
        let mut adj_start = vec![0u32; n + 1];
        for &(s, _, _) in &adj {
            adj_start[s as usize + 1] += 1;
        }
        for v in 0..n {
            adj_start[v + 1] += adj_start[v];
        }
        let mut edge_source = vec![0; g.edge_count()];
        for &(s, _, e) in &adj {
            edge_source[e as usize] = s;
        }
        GraphRoutes {
            adj_start,
            adj: adj.into_iter().map(|(_, t, e)| (t, e)).collect(),
            edge_source,
            gpus: b.gpus.iter().map(|v| v.index() as u32).collect(),
            trees: (0..b.gpus.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    /// BFS from `root`: the tree edge into every reached vertex.
    fn bfs(&self, root: u32) -> Box<[u32]> {
        let n = self.adj_start.len() - 1;
        let mut parent = vec![NONE; n].into_boxed_slice();
        let mut seen = vec![false; n];
        let mut queue = std::collections::VecDeque::with_capacity(n);
        seen[root as usize] = true;
        queue.push_back(root);
        while let Some(v) = queue.pop_front() {
            let range =
                self.adj_start[v as usize] as usize..self.adj_start[v as usize + 1] as usize;
            for &(t, e) in &self.adj[range] {
                if !seen[t as usize] {
                    seen[t as usize] = true;
                    parent[t as usize] = e;
                    queue.push_back(t);
                }
            }
        }
        parent
    }

    pub fn route(&self, src: u32, dst: u32, out: &mut Vec<EdgeIndex>) {
        let tree = self.trees[src as usize].get_or_init(|| self.bfs(self.gpus[src as usize]));
        let start = out.len();
        let root = self.gpus[src as usize];
        let mut v = self.gpus[dst as usize];
        while v != root {
            let e = tree[v as usize];
            assert!(e != NONE, "GPU {dst} is unreachable from GPU {src}");
            out.push(EdgeIndex::new(e as usize));
            v = self.edge_source[e as usize];
        }
        out[start..].reverse();
    }

    /// Vertices reachable from `root`, following edges forwards or backwards.
    fn reach(&self, root: u32, backwards: bool) -> Vec<bool> {
        let n = self.adj_start.len() - 1;
        let mut next: Vec<Vec<u32>> = vec![Vec::new(); n];
        for s in 0..n {
            for &(t, _) in &self.adj[self.adj_start[s] as usize..self.adj_start[s + 1] as usize] {
                if backwards {
                    next[t as usize].push(s as u32);
                } else {
                    next[s].push(t);
                }
            }
        }
        let mut seen = vec![false; n];
        let mut stack = vec![root];
        seen[root as usize] = true;
        while let Some(v) = stack.pop() {
            for &t in &next[v as usize] {
                if !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t);
                }
            }
        }
        seen
    }
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec) -> Result<GraphRoutes, Refusal> {
    let (text, what) = match &spec.graph {
        Some(GraphSource::File { path, text }) => {
            (text, format!("graph file `{}`", path.display()))
        }
        Some(GraphSource::Inline(text)) => (text, "graph".to_string()),
        None => return Err(Refusal::graph("a graph topology needs a graph file")),
    };
    let file = parse(text).map_err(|e| Refusal::graph(format!("{what}: {e}")))?;
    add(b, spec, &file).map_err(|e| Refusal::graph(format!("{what}: {e}")))
}

/// Checks `file` against `spec` and adds its devices and links to the graph.
pub(crate) fn add(
    b: &mut Builder,
    spec: &TopologySpec,
    file: &GraphFile,
) -> Result<GraphRoutes, String> {
    let want = spec.nodes * spec.gpus_per_node;
    let gpus: Vec<&DeviceEntry> = file
        .device
        .iter()
        .filter(|d| d.kind == DeviceKindName::Gpu)
        .collect();
    if gpus.is_empty() {
        return Err("no GPU: list GPUs as [[device]] with kind = \"gpu\"".to_string());
    }
    if gpus.len() as u32 != want {
        return Err(format!(
            "the graph has {} GPUs, the cluster has {} nodes x {} GPUs = {want}",
            gpus.len(),
            spec.nodes,
            spec.gpus_per_node
        ));
    }
    // Ranks: all given or none.
    let given = gpus.iter().filter(|d| d.rank.is_some()).count();
    let mut rank_of: BTreeMap<&str, u32> = BTreeMap::new();
    if given == 0 {
        for (r, d) in gpus.iter().enumerate() {
            rank_of.insert(&d.name, r as u32);
        }
    } else if given < gpus.len() {
        let without = gpus.iter().find(|d| d.rank.is_none()).expect("some");
        return Err(format!(
            "some GPUs have a rank and some do not (`{}` has none): give every GPU a rank, or none",
            without.name
        ));
    } else {
        let mut holder: Vec<Option<&str>> = vec![None; want as usize];
        for d in &gpus {
            let r = d.rank.expect("all given");
            if r >= want {
                return Err(format!(
                    "GPU `{}` has rank {r}, but there are {want} GPUs (ranks 0 to {})",
                    d.name,
                    want - 1
                ));
            }
            if let Some(other) = holder[r as usize] {
                return Err(format!(
                    "rank {r} is given to both `{other}` and `{}`",
                    d.name
                ));
            }
            holder[r as usize] = Some(&d.name);
            rank_of.insert(&d.name, r);
        }
    }
    // Devices.
    let mut index: BTreeMap<&str, NodeIndex> = BTreeMap::new();
    for (i, d) in file.device.iter().enumerate() {
        if d.name.is_empty() {
            return Err(format!("device {} has an empty name", i + 1));
        }
        if index.contains_key(d.name.as_str()) {
            return Err(format!("device `{}` is listed twice", d.name));
        }
        let kind = match d.kind {
            DeviceKindName::Gpu => DeviceKind::Gpu {
                rank: rank_of[d.name.as_str()],
            },
            DeviceKindName::NvSwitch => DeviceKind::NvSwitch,
            DeviceKindName::PcieSwitch => DeviceKind::PcieSwitch,
            DeviceKindName::Host => DeviceKind::Host,
            DeviceKindName::Nic => DeviceKind::Nic,
            DeviceKindName::Leaf => DeviceKind::Leaf,
            DeviceKindName::Spine => DeviceKind::Spine,
            DeviceKindName::Core => DeviceKind::Core,
            DeviceKindName::Router => DeviceKind::Router,
        };
        if d.rank.is_some() && d.kind != DeviceKindName::Gpu {
            return Err(format!("device `{}` has a rank but is not a GPU", d.name));
        }
        let node = match kind {
            DeviceKind::Gpu { rank } => {
                let node = rank / spec.gpus_per_node;
                if let Some(n) = d.node
                    && n != node
                {
                    return Err(format!(
                        "GPU `{}` (rank {rank}) says node = {n}, but rank {rank} is on node {node} \
                         with {} GPUs per node",
                        d.name, spec.gpus_per_node
                    ));
                }
                Some(node)
            }
            _ => d.node,
        };
        let v = b.device(kind.clone(), d.name.clone(), node);
        if let DeviceKind::Gpu { rank } = kind {
            b.gpus[rank as usize] = v;
        }
        index.insert(&d.name, v);
    }
    // Links.
    for (i, l) in file.link.iter().enumerate() {
        let end = |name: &str, key: &str| {
            index.get(name).copied().ok_or_else(|| {
                let hint = closest(name, index.keys().copied())
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                format!(
                    "link {} ({key} = \"{name}\"): no device is named `{name}`{hint}",
                    i + 1
                )
            })
        };
        let (a, c) = (end(&l.a, "a")?, end(&l.b, "b")?);
        if a == c {
            return Err(format!("link {} joins `{}` to itself", i + 1, l.a));
        }
        let kind = match l.kind.unwrap_or(LinkKindName::Network) {
            LinkKindName::Nvlink => LinkKind::NvLink,
            LinkKindName::Pcie => LinkKind::Pcie,
            LinkKindName::Network => LinkKind::Network,
            LinkKindName::Wan => LinkKind::Wan,
        };
        b.link(a, c, kind, l.bandwidth.0, l.latency.secs());
    }
    let routes = GraphRoutes::new(b);
    // Every GPU reaches GPU 0 and GPU 0 reaches every GPU, so every GPU reaches every other.
    let root = routes.gpus[0];
    for (backwards, verb) in [(false, "cannot be reached from"), (true, "cannot reach")] {
        let seen = routes.reach(root, backwards);
        if let Some(r) = (0..want).find(|&r| !seen[routes.gpus[r as usize] as usize]) {
            let name = |r: u32| b.graph[b.gpus[r as usize]].name.clone();
            return Err(format!(
                "GPU `{}` (rank {r}) {verb} GPU `{}` (rank 0): every GPU must reach every other",
                name(r),
                name(0)
            ));
        }
    }
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_all_routes, names};
    use super::super::*;

    const SQUARE: &str = r#"
        # Four GPUs in a ring of NVLinks, two "nodes".
        [[device]]
        name = "a"
        kind = "gpu"
        [[device]]
        name = "b"
        kind = "gpu"
        [[device]]
        name = "c"
        kind = "gpu"
        [[device]]
        name = "d"
        kind = "gpu"
        [[link]]
        a = "a"
        b = "b"
        bandwidth = "100 GB/s"
        latency = "1 us"
        kind = "nvlink"
        [[link]]
        a = "b"
        b = "c"
        bandwidth = "100 GB/s"
        latency = "1 us"
        [[link]]
        a = "c"
        b = "d"
        bandwidth = "100 GB/s"
        latency = "1 us"
        [[link]]
        a = "d"
        b = "a"
        bandwidth = "50 GB/s"
        latency = "2 us"
    "#;

    fn spec(text: &str) -> TopologySpec {
        TopologySpec {
            inter: InterKind::Graph,
            graph: Some(GraphSource::Inline(text.to_string())),
            ..TopologySpec::new(2, 2)
        }
    }

    #[test]
    fn a_ring_routes_by_fewest_hops() {
        let t = Topology::build(&spec(SQUARE)).unwrap();
        assert_eq!(t.graph.node_count(), 4);
        assert_eq!(t.graph.edge_count(), 8);
        assert_eq!(names(&t, &t.route(0, 1)), ["a", "b"]);
        assert_eq!(names(&t, &t.route(0, 3)), ["a", "d"]);
        // Two paths of two hops: the lower-numbered vertex (b) first.
        assert_eq!(names(&t, &t.route(0, 2)), ["a", "b", "c"]);
        assert_eq!(names(&t, &t.route(2, 0)), ["c", "b", "a"]);
        let r = t.route(3, 0);
        assert_eq!(t.route_latency(&r), 2e-6);
        assert_eq!(t.link(r.links[0]).kind, LinkKind::Network);
        assert_eq!(t.link(t.route(0, 1).links[0]).kind, LinkKind::NvLink);
        check_all_routes(&t);
    }

    #[test]
    fn errors_name_the_problem() {
        let err = |text: &str| {
            let e = Topology::build(&spec(text)).unwrap_err();
            assert_eq!(e.part, super::super::Part::Graph);
            e.message
        };
        let e = err(&SQUARE.replace("b = \"c\"", "b = \"cc\""));
        assert!(e.contains("link 2") && e.contains("`cc`"), "{e}");
        let e = err(&SQUARE.replace("\"50 GB/s\"", "50"));
        assert!(e.contains("unit"), "{e}");
        let e = err(&SQUARE.replace("kind = \"nvlink\"", "kind = \"infiniband\""));
        assert!(e.contains("infiniband"), "{e}");
        let e = err(&SQUARE.replace("name = \"d\"", "name = \"c\""));
        assert!(e.contains("`c` is listed twice"), "{e}");
        let e = err(&SQUARE.replace(
            "name = \"d\"\n        kind = \"gpu\"",
            "name = \"d\"\n        kind = \"leaf\"",
        ));
        assert!(e.contains("3 GPUs") && e.contains("= 4"), "{e}");
        let cut = SQUARE
            .split("[[link]]")
            .take(3)
            .collect::<Vec<_>>()
            .join("[[link]]");
        let e = err(&cut);
        assert!(e.contains("every GPU must reach every other"), "{e}");
        let e = err(&SQUARE.replace(
            "kind = \"gpu\"\n        [[device]]\n        name = \"b\"",
            "kind = \"gpu\"\n        rank = 0\n        [[device]]\n        name = \"b\"",
        ));
        assert!(e.contains("some GPUs have a rank"), "{e}");
        let e = err(&SQUARE.replace(
            "latency = \"2 us\"",
            "latency = \"2 us\"\n        colour = \"red\"",
        ));
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn ranks_can_be_given() {
        let text = SQUARE
            .replacen("kind = \"gpu\"", "kind = \"gpu\"\n rank = 3", 1)
            .replacen(
                "kind = \"gpu\"\n        [[device]]\n        name = \"c\"",
                "kind = \"gpu\"\n rank = 2\n        [[device]]\n        name = \"c\"",
                1,
            )
            .replacen(
                "name = \"c\"\n        kind = \"gpu\"",
                "name = \"c\"\n        kind = \"gpu\"\n rank = 1",
                1,
            )
            .replacen(
                "name = \"d\"\n        kind = \"gpu\"",
                "name = \"d\"\n        kind = \"gpu\"\n rank = 0",
                1,
            );
        let t = Topology::build(&spec(&text)).unwrap();
        assert_eq!(t.graph[t.gpus[3]].name, "a");
        assert_eq!(t.graph[t.gpus[0]].name, "d");
        assert_eq!(t.graph[t.gpus[3]].node, Some(1));
        check_all_routes(&t);
    }
}
