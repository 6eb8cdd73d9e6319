//! The topology layer through its public API: every builder, routes that are connected and follow
//! the structure, graph files, determinism, and the size and speed of a 16,384-GPU cluster.
//!
//! Timings are printed, not asserted: run `cargo test --release --test topology -- --nocapture`
//! to see them.

use clustersim::net::topology::{
    DeviceKind, GraphSource, InterKind, IntraKind, LinkKind, Route, Topology, TopologySpec, catalog,
};
use clustersim::report::typed::TypedReport;
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use std::time::Instant;

/// The route starts at the source GPU, ends at the destination GPU, is connected and visits no
/// vertex twice; an intra-node route of a structured topology stays inside the node.
fn check(t: &Topology, s: u32, d: u32, r: &Route) {
    if s == d {
        assert!(r.links.is_empty(), "{s} -> {s} is not empty");
        return;
    }
    let mut at = t.gpus[s as usize];
    let mut seen = vec![at];
    for &e in &r.links {
        let (from, to) = t.graph.edge_endpoints(e).unwrap();
        assert_eq!(from, at, "{s} -> {d} is not connected");
        assert!(
            !seen.contains(&to),
            "{s} -> {d} passes {} twice",
            t.graph[to].name
        );
        seen.push(to);
        at = to;
    }
    assert_eq!(at, t.gpus[d as usize], "{s} -> {d} ends elsewhere");
    assert_eq!(t.graph[at].kind, DeviceKind::Gpu { rank: d });
    let g = t.gpus_per_node;
    if s / g == d / g && t.spec.inter != InterKind::Graph {
        for v in &seen {
            assert_eq!(t.graph[*v].node, Some(s / g), "{s} -> {d} leaves its node");
        }
    }
}

fn check_all(t: &Topology) {
    for s in 0..t.gpu_count() {
        for d in 0..t.gpu_count() {
            check(t, s, d, &t.route(s, d));
        }
    }
}

fn names(t: &Topology, r: &Route) -> Vec<String> {
    let mut v = vec![];
    for (i, &e) in r.links.iter().enumerate() {
        let (a, b) = t.graph.edge_endpoints(e).unwrap();
        if i == 0 {
            v.push(t.graph[a].name.clone());
        }
        v.push(t.graph[b].name.clone());
    }
    v
}

fn kinds(t: &Topology, kind: DeviceKind) -> usize {
    t.graph.node_weights().filter(|d| d.kind == kind).count()
}

fn through(t: &Topology, r: &Route, kind: DeviceKind) -> bool {
    r.links
        .iter()
        .any(|&e| t.graph[t.graph.edge_endpoints(e).unwrap().1].kind == kind)
}

fn spec(nodes: u32, gpus: u32, inter: InterKind) -> TopologySpec {
    TopologySpec {
        inter,
        leaf_downlinks: 8,
        ..TopologySpec::new(nodes, gpus)
    }
}

#[test]
fn sixteen_thousand_gpus_rail_optimized_ring_step() {
    let spec = TopologySpec {
        inter: InterKind::RailOptimized,
        ..TopologySpec::new(2048, 8)
    };
    let start = Instant::now();
    let t = Topology::build(&spec).unwrap();
    let build = start.elapsed();
    let n = t.gpu_count();
    assert_eq!(n, 16_384);
    // 8 rails x 64 leaves of 32 ports, 32 spines.
    assert_eq!(kinds(&t, DeviceKind::Leaf), 512);
    assert_eq!(kinds(&t, DeviceKind::Spine), 32);
    assert_eq!(kinds(&t, DeviceKind::Nic), 16_384);
    assert_eq!(
        t.graph.node_count(),
        16_384 + 2048 + 16_384 + 512 + 32,
        "GPUs, NVSwitches, NICs, leaves, spines"
    );
    assert_eq!(t.graph.edge_count(), 2 * (16_384 * 3 + 512 * 32));

    // One ring step: every rank sends to the next.
    let start = Instant::now();
    let routes: Vec<Route> = (0..n).map(|r| t.route(r, (r + 1) % n)).collect();
    let ring = start.elapsed();
    // The rail-aligned ring (rank r to the same GPU of the next node), reusing one buffer.
    let start = Instant::now();
    let mut buf = Vec::new();
    let mut hops = 0;
    for r in 0..n {
        buf.clear();
        t.route_into(r, (r + 8) % n, &mut buf);
        hops += buf.len();
    }
    let rail = start.elapsed();
    println!(
        "16,384 GPUs rail-optimized: {} vertices, {} edges; build {:.1} ms; ring step \
         (16,384 routes) {:.2} ms; rail-aligned step {:.2} ms",
        t.graph.node_count(),
        t.graph.edge_count(),
        build.as_secs_f64() * 1e3,
        ring.as_secs_f64() * 1e3,
        rail.as_secs_f64() * 1e3
    );

    for (r, route) in routes.iter().enumerate() {
        let r = r as u32;
        check(&t, r, (r + 1) % n, route);
        let len = if r % 8 == 7 { 6 } else { 2 };
        assert_eq!(route.links.len(), len, "{r}");
    }
    // GPU 7 to GPU 0 of the next node: rail 7 to rail 0, through a spine.
    assert!(through(&t, &routes[7], DeviceKind::Spine));
    // Rank r to r + 8 stays on its rail: 4 hops, except where the ring crosses a leaf boundary
    // (every 32 nodes) and the wrap-around.
    let crossings = 8 * 64; // 64 leaves per rail, each left once
    assert_eq!(hops, 4 * n as usize + 2 * crossings);
}

#[test]
fn counts_of_small_instances() {
    // NVSwitch + fat-tree, 4 nodes x 4 GPUs: 16 NICs on 2 leaves of 8 ports, 8 spines.
    let t = Topology::build(&spec(4, 4, InterKind::FatTree)).unwrap();
    assert_eq!(t.graph.node_count(), 16 + 4 + 16 + 2 + 8);
    assert_eq!(t.graph.edge_count(), 2 * (16 + 16 + 16 + 2 * 8));

    // PCIe, one node of 4: 4 GPUs, 2 switches, a host.
    let s = TopologySpec {
        intra: IntraKind::Pcie,
        ..TopologySpec::new(1, 4)
    };
    let t = Topology::build(&s).unwrap();
    assert_eq!(t.graph.node_count(), 7);
    assert_eq!(t.graph.edge_count(), 2 * 6);

    // Full mesh, one node of 8: 28 links.
    let s = TopologySpec {
        intra: IntraKind::NvLinkMesh,
        ..TopologySpec::new(1, 8)
    };
    let t = Topology::build(&s).unwrap();
    assert_eq!(t.graph.node_count(), 8);
    assert_eq!(t.graph.edge_count(), 2 * 28);

    // Torus 3 x 3 of one-GPU nodes (no NVSwitch): 9 routers, 18 router links, 9 NIC links, 9
    // GPU-NIC links.
    let s = TopologySpec {
        torus_dims: Some(vec![3, 3]),
        ..spec(9, 1, InterKind::Torus2d)
    };
    let t = Topology::build(&s).unwrap();
    assert_eq!(kinds(&t, DeviceKind::Router), 9);
    assert_eq!(t.graph.node_count(), 9 + 9 + 9);
    assert_eq!(t.graph.edge_count(), 2 * (9 + 9 + 18));
}

#[test]
fn every_kind_routes_every_pair() {
    let mut specs = vec![];
    for intra in [
        IntraKind::NvSwitch,
        IntraKind::NvLinkMesh,
        IntraKind::NvLinkPairs,
        IntraKind::Pcie,
    ] {
        for inter in [
            InterKind::FatTree,
            InterKind::RailOptimized,
            InterKind::Torus2d,
            InterKind::Torus3d,
            InterKind::Wan,
        ] {
            specs.push(TopologySpec {
                intra,
                ..spec(8, 4, inter)
            });
        }
    }
    specs.push(TopologySpec {
        pods: 2,
        ..spec(8, 4, InterKind::FatTree)
    });
    specs.push(TopologySpec {
        pods: 3,
        nics_per_node: 2,
        ..spec(8, 4, InterKind::RailOptimized)
    });
    specs.push(TopologySpec::new(1, 8));
    specs.push(spec(5, 1, InterKind::FatTree));
    for s in &specs {
        let t = Topology::build(s).unwrap_or_else(|e| panic!("{}: {e}", s.name()));
        check_all(&t);
    }
}

#[test]
fn intra_node_routes_follow_the_server() {
    let t = Topology::build(&spec(2, 8, InterKind::FatTree)).unwrap();
    assert_eq!(
        names(&t, &t.route(9, 14)),
        ["node1/gpu1", "node1/nvswitch", "node1/gpu6"]
    );
    let s = TopologySpec {
        intra: IntraKind::NvLinkMesh,
        ..spec(2, 8, InterKind::FatTree)
    };
    let t = Topology::build(&s).unwrap();
    assert_eq!(names(&t, &t.route(9, 14)), ["node1/gpu1", "node1/gpu6"]);
    let r = t.route(9, 14);
    assert_eq!(t.graph[r.links[0]].bandwidth, 450e9 / 7.0);
    assert_eq!(t.graph[r.links[0]].kind, LinkKind::NvLink);
}

#[test]
fn inter_node_routes_go_through_nics_and_leaves() {
    let t = Topology::build(&spec(4, 4, InterKind::FatTree)).unwrap();
    // Nodes 0 and 1 share leaf 0; nodes 0 and 3 do not.
    assert_eq!(
        names(&t, &t.route(1, 5)),
        [
            "node0/gpu1",
            "node0/nic1",
            "leaf0",
            "node1/nic1",
            "node1/gpu1"
        ]
    );
    let n = names(&t, &t.route(1, 13));
    assert_eq!(n.len(), 7);
    assert_eq!(
        [&n[0], &n[1], &n[2], &n[4], &n[5], &n[6]],
        [
            "node0/gpu1",
            "node0/nic1",
            "leaf0",
            "leaf1",
            "node3/nic1",
            "node3/gpu1"
        ]
    );
    assert!(n[3].starts_with("spine"));
    let r = t.route(1, 5);
    assert!((t.route_latency(&r) - t.spec.inter_latency).abs() < 1e-15);
}

#[test]
fn fat_tree_oversubscription_halves_leaf_uplinks() {
    let s = TopologySpec {
        oversubscription: 2.0,
        ..spec(8, 4, InterKind::FatTree)
    };
    let t = Topology::build(&s).unwrap();
    for leaf in t
        .graph
        .node_indices()
        .filter(|&v| t.graph[v].kind == DeviceKind::Leaf)
    {
        let (mut down, mut up) = (0.0, 0.0);
        for e in t.graph.edges_directed(leaf, Direction::Outgoing) {
            match t.graph[e.target()].kind {
                DeviceKind::Nic => down += e.weight().bandwidth,
                DeviceKind::Spine => up += e.weight().bandwidth,
                ref k => panic!("a leaf links to {k:?}"),
            }
        }
        assert_eq!(down, 8.0 * s.nic_bandwidth);
        assert_eq!(up, down / 2.0);
    }
}

#[test]
fn rail_optimized_keeps_same_rail_traffic_off_the_spines() {
    let t = Topology::build(&spec(8, 4, InterKind::RailOptimized)).unwrap();
    for s in 0..32 {
        for d in 0..32 {
            if s / 4 == d / 4 {
                continue;
            }
            let r = t.route(s, d);
            assert_eq!(
                through(&t, &r, DeviceKind::Spine),
                s % 4 != d % 4,
                "{s} -> {d}: {:?}",
                names(&t, &r)
            );
        }
    }
}

#[test]
fn torus_routes_have_manhattan_hop_counts() {
    for (inter, dims) in [
        (InterKind::Torus2d, vec![4u32, 6]),
        (InterKind::Torus2d, vec![2, 5]),
        (InterKind::Torus3d, vec![3, 2, 4]),
    ] {
        let nodes: u32 = dims.iter().product();
        let s = TopologySpec {
            torus_dims: Some(dims.clone()),
            ..spec(nodes, 2, inter)
        };
        let t = Topology::build(&s).unwrap();
        let coords = |mut n: u32| {
            dims.iter()
                .map(|&k| {
                    let x = n % k;
                    n /= k;
                    x
                })
                .collect::<Vec<_>>()
        };
        for a in 0..nodes {
            for b in 0..nodes {
                if a == b {
                    continue;
                }
                let (ca, cb) = (coords(a), coords(b));
                let want: usize = (0..dims.len())
                    .map(|i| {
                        let k = dims[i];
                        let f = (cb[i] + k - ca[i]) % k;
                        f.min(k - f) as usize
                    })
                    .sum();
                let r = t.route(a * 2 + 1, b * 2);
                check(&t, a * 2 + 1, b * 2, &r);
                // GPU -> NIC -> router ... router -> NIC -> GPU.
                assert_eq!(r.links.len(), want + 4, "{dims:?}: node {a} -> {b}");
            }
        }
    }
}

#[test]
fn torus_dims_must_fit_the_cluster() {
    let s = TopologySpec {
        torus_dims: Some(vec![4, 4]),
        ..spec(12, 8, InterKind::Torus2d)
    };
    assert_eq!(
        Topology::build(&s).unwrap_err().message,
        "a 2-D torus of 4 x 4 needs 16 nodes, the cluster has 12"
    );
}

#[test]
fn wan_sites_meet_through_their_routers() {
    let s = TopologySpec {
        sites: 2,
        ..spec(4, 4, InterKind::Wan)
    };
    let t = Topology::build(&s).unwrap();
    let r = t.route(0, 15);
    let n = names(&t, &r);
    assert!(n.contains(&"site0/router".to_string()) && n.contains(&"site1/router".to_string()));
    let wan: Vec<_> = r
        .links
        .iter()
        .filter(|&&e| t.graph[e].kind == LinkKind::Wan)
        .collect();
    assert_eq!(wan.len(), 1);
    assert!(t.route_latency(&r) > s.wan_latency);
    assert!(!through(&t, &t.route(0, 4), DeviceKind::Router));
}

const GOOD_GRAPH: &str = r#"
# Two servers of two GPUs: an NVSwitch in each, one NIC per server, one switch between.
[[device]]
name = "s0/gpu0"
kind = "gpu"
[[device]]
name = "s0/gpu1"
kind = "gpu"
[[device]]
name = "s1/gpu0"
kind = "gpu"
[[device]]
name = "s1/gpu1"
kind = "gpu"
[[device]]
name = "s0/nvswitch"
kind = "nvswitch"
node = 0
[[device]]
name = "s1/nvswitch"
kind = "nvswitch"
node = 1
[[device]]
name = "s0/nic"
kind = "nic"
[[device]]
name = "s1/nic"
kind = "nic"
[[device]]
name = "tor"
kind = "leaf"

[[link]]
a = "s0/gpu0"
b = "s0/nvswitch"
bandwidth = "450 GB/s"
latency = "0.75 us"
kind = "nvlink"
[[link]]
a = "s0/gpu1"
b = "s0/nvswitch"
bandwidth = "450 GB/s"
latency = "0.75 us"
kind = "nvlink"
[[link]]
a = "s1/gpu0"
b = "s1/nvswitch"
bandwidth = "450 GB/s"
latency = "0.75 us"
kind = "nvlink"
[[link]]
a = "s1/gpu1"
b = "s1/nvswitch"
bandwidth = "450 GB/s"
latency = "0.75 us"
kind = "nvlink"
[[link]]
a = "s0/nvswitch"
b = "s0/nic"
bandwidth = "64 GB/s"
latency = "0 us"
kind = "pcie"
[[link]]
a = "s1/nvswitch"
b = "s1/nic"
bandwidth = "64 GB/s"
latency = "0 us"
kind = "pcie"
[[link]]
a = "s0/nic"
b = "tor"
bandwidth = "400 Gb/s"
latency = "2.5 us"
[[link]]
a = "s1/nic"
b = "tor"
bandwidth = "400 Gb/s"
latency = "2.5 us"
"#;

fn graph_spec(path: &std::path::Path) -> TopologySpec {
    TopologySpec {
        inter: InterKind::Graph,
        graph: Some(GraphSource::File {
            path: path.to_path_buf(),
            text: std::fs::read_to_string(path).unwrap(),
        }),
        ..TopologySpec::new(2, 2)
    }
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("clustersim-topology-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn graph_files_good_and_bad() {
    let good = temp_file("good.toml", GOOD_GRAPH);
    let t = Topology::build(&graph_spec(&good)).unwrap();
    assert_eq!(t.graph.node_count(), 9);
    assert_eq!(t.graph.edge_count(), 16);
    check_all(&t);
    assert_eq!(
        names(&t, &t.route(1, 2)),
        [
            "s0/gpu1",
            "s0/nvswitch",
            "s0/nic",
            "tor",
            "s1/nic",
            "s1/nvswitch",
            "s1/gpu0"
        ]
    );
    let r = t.route(1, 2);
    assert!((t.route_latency(&r) - 6.5e-6).abs() < 1e-15);
    assert_eq!(t.graph[r.links[3]].bandwidth, 50e9);
    assert_eq!(t.graph[t.gpus[2]].node, Some(1));

    // A typo in a link's end.
    let bad = temp_file(
        "bad.toml",
        &GOOD_GRAPH.replace("b = \"tor\"", "b = \"torr\""),
    );
    let e = Topology::build(&graph_spec(&bad)).unwrap_err().message;
    assert!(e.contains("bad.toml"), "{e}");
    assert!(
        e.contains("link 7") && e.contains("no device is named `torr`") && e.contains("`tor`"),
        "{e}"
    );
    // A bandwidth without its unit.
    let bad = temp_file("unit.toml", &GOOD_GRAPH.replacen("\"450 GB/s\"", "450", 1));
    let e = Topology::build(&graph_spec(&bad)).unwrap_err().message;
    assert!(e.contains("line") && e.contains("unit"), "{e}");
    // A kind that does not exist.
    let bad = temp_file(
        "kind.toml",
        &GOOD_GRAPH.replace("\"leaf\"", "\"tor-switch\""),
    );
    let e = Topology::build(&graph_spec(&bad)).unwrap_err().message;
    assert!(e.contains("tor-switch") && e.contains("leaf"), "{e}");
    // The wrong number of GPUs for the cluster.
    let e = Topology::build(&TopologySpec {
        nodes: 3,
        ..graph_spec(&good)
    })
    .unwrap_err()
    .message;
    assert!(
        e.contains("4 GPUs") && e.contains("3 nodes x 2 GPUs = 6"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(good.parent().unwrap());
}

#[test]
fn routes_are_deterministic() {
    let s = TopologySpec {
        pods: 2,
        ..spec(16, 8, InterKind::RailOptimized)
    };
    let (a, b) = (Topology::build(&s).unwrap(), Topology::build(&s).unwrap());
    for src in (0..128).step_by(3) {
        for dst in (0..128).step_by(5) {
            let r = a.route(src, dst);
            assert_eq!(r, a.route(src, dst));
            assert_eq!(r, b.route(src, dst));
        }
    }
    // The ECMP hash is fixed: this route must be the same in every version and on every machine.
    let t = Topology::build(&spec(8, 8, InterKind::FatTree)).unwrap();
    assert_eq!(
        names(&t, &t.route(3, 60)),
        [
            "node0/gpu3",
            "node0/nic3",
            "leaf0",
            "spine6",
            "leaf7",
            "node7/nic4",
            "node7/gpu4"
        ]
    );
}

#[test]
fn catalog_lists_every_topology() {
    let c = catalog();
    for name in [
        "nvswitch",
        "nvlink-mesh",
        "nvlink-pairs",
        "pcie",
        "fat-tree",
        "rail-optimized",
        "multi-pod",
        "torus-2d",
        "torus-3d",
        "wan",
        "graph",
    ] {
        assert!(c.iter().any(|e| e.name == name), "{name} is missing");
    }
}

#[test]
fn impossible_specs_say_why() {
    let e = Topology::build(&TopologySpec {
        pods: 5,
        ..spec(4, 8, InterKind::FatTree)
    })
    .unwrap_err()
    .message;
    assert!(e.contains("5 pods") && e.contains("4"), "{e}");
    let e = Topology::build(&TopologySpec::new(0, 8))
        .unwrap_err()
        .message;
    assert!(e.contains("at least one node"), "{e}");
    let e = Topology::build(&TopologySpec {
        oversubscription: 0.5,
        ..spec(4, 8, InterKind::FatTree)
    })
    .unwrap_err()
    .message;
    assert!(e.contains("oversubscription"), "{e}");
    let _: NodeIndex = Topology::build(&spec(2, 2, InterKind::FatTree))
        .unwrap()
        .gpus[0];
}

/// `routing` in `[cluster.inter_node]`: read for leaf/spine networks (the report names it),
/// refused with a reason for a torus, and an unknown value lists the valid ones.
#[test]
fn scenario_routing_key() {
    let text = |topology: &str, routing: &str| {
        format!(
            r#"
kind = "training"
[cluster]
gpu = "A100-SXM4-80GB"
nodes = 8
gpus_per_node = 8
[cluster.inter_node]
topology = "{topology}"
nic_bandwidth = "200 Gb/s"
routing = "{routing}"
[model]
preset = "gpt3-1.3b"
[parallel]
micro_batch = 1
global_batch = 64
"#
        )
    };
    let parse = |t: String| clustersim::Scenario::parse(std::path::Path::new("r.toml"), t, &[]);
    let report = clustersim::report::training::TrainingReport::of_run(
        &clustersim::run(&parse(text("fat-tree", "destination")).unwrap())
            .unwrap()
            .report,
    );
    let named = &report.fidelity.topology;
    assert!(named.ends_with("routed by destination"), "{named}");
    let Err(torus) = clustersim::run(&parse(text("torus-2d", "destination")).unwrap()) else {
        panic!("routing on a torus must be refused");
    };
    assert!(
        torus
            .message
            .contains("routing applies to leaf/spine networks"),
        "{torus}"
    );
    let bad = parse(text("fat-tree", "adaptive")).unwrap_err().to_string();
    assert!(
        bad.contains("ecmp") && bad.contains("destination") && bad.contains("r.toml"),
        "{bad}"
    );
}
