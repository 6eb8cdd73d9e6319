//! Tori (TPU-style direct networks), 2-D and 3-D: each **node** (server) is a Router vertex on a
//! `k1 x k2 (x k3)` wrap-around grid, linked to its neighbours along every dimension. The node's
//! NICs link to its router; GPUs reach their NIC as everywhere else ([`nic`](super::nic)).
//!
//! Node `n` sits at coordinates `(x1, x2, x3)` with `n = x1 + k1 * (x2 + k2 * x3)` (first dimension
//! fastest). Dimensions come from `torus_dims`, or default to the most square (2-D) or cubic (3-D)
//! factorisation of the node count (a prime count gives a ring: `1 x n`).
//!
//! Modelled: one physical link from every router to its `+1` neighbour along each dimension of size
//! 2 or more (wrap-around included; a dimension of size 2 therefore has two parallel links between
//! its two routers, as real tori wire both ports), each at `torus_link_bandwidth` per direction
//! (default: the node's NIC bandwidth spread over its `2 x dimensions` ports) with `switch_latency`;
//! NIC <-> router links at `nic_bandwidth` with `inter_latency / 2`.
//!
//! Routing is dimension-order (first dimension first), each dimension the shorter way round, ties
//! (exactly half-way) going `+`. The hop count between routers is the wrap-around Manhattan
//! distance. Deliberately ignored: virtual channels and deadlock avoidance, adaptive and
//! non-minimal routing, optical circuit switches re-wiring the torus. Units: bytes/s per direction,
//! seconds.

use super::nic::Nics;
use super::refusal::Refusal;
use super::spec::{InterKind, TopologySpec};
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::{EdgeIndex, NodeIndex};

#[derive(Clone, Debug)]
pub(crate) struct Torus {
    pub dims: Vec<u32>,
    /// NIC -> its router and back, by global NIC index.
    pub nic_up: Vec<EdgeIndex>,
    pub nic_down: Vec<EdgeIndex>,
    /// Router of `node` -> its `+1` / `-1` neighbour along `d`, by `node * dims + d`
    /// (`EdgeIndex::end()` along a dimension of size 1).
    pub plus: Vec<EdgeIndex>,
    pub minus: Vec<EdgeIndex>,
    pub routers: Vec<NodeIndex>,
}

impl Torus {
    /// Appends NIC `a` of node `ns` -> NIC `b` of node `nd`.
    pub fn route(&self, a: u32, b: u32, ns: u32, nd: u32, out: &mut Vec<EdgeIndex>) {
        out.push(self.nic_up[a as usize]);
        let nd_ = self.dims.len() as u32;
        let mut cur = ns;
        let mut stride = 1;
        for (d, &k) in self.dims.iter().enumerate() {
            let xs = cur / stride % k;
            let xd = nd / stride % k;
            let fwd = (xd + k - xs) % k;
            if fwd != 0 {
                let back = k - fwd;
                let idx = |node: u32| (node * nd_ + d as u32) as usize;
                if fwd <= back {
                    for _ in 0..fwd {
                        out.push(self.plus[idx(cur)]);
                        let x = cur / stride % k;
                        cur = if x + 1 == k {
                            cur - x * stride
                        } else {
                            cur + stride
                        };
                    }
                } else {
                    for _ in 0..back {
                        out.push(self.minus[idx(cur)]);
                        let x = cur / stride % k;
                        cur = if x == 0 {
                            cur + (k - 1) * stride
                        } else {
                            cur - stride
                        };
                    }
                }
            }
            stride *= k;
        }
        debug_assert_eq!(cur, nd);
        out.push(self.nic_down[b as usize]);
    }

    /// Coordinates of `node`.
    pub fn coords(&self, node: u32) -> Vec<u32> {
        let mut stride = 1;
        self.dims
            .iter()
            .map(|&k| {
                let x = node / stride % k;
                stride *= k;
                x
            })
            .collect()
    }
}

/// The most square factorisation of `n` into `parts` (2 or 3) factors, smallest first.
pub fn default_dims(n: u32, parts: u32) -> Vec<u32> {
    fn largest_divisor_at_most(n: u32, bound: f64) -> u32 {
        let bound = (bound + 1e-9).floor() as u32;
        (1..=bound.max(1))
            .rev()
            .find(|&d| n.is_multiple_of(d))
            .unwrap_or(1)
    }
    match parts {
        2 => {
            let a = largest_divisor_at_most(n, (n as f64).sqrt());
            vec![a, n / a]
        }
        _ => {
            let a = largest_divisor_at_most(n, (n as f64).cbrt());
            let mut rest = default_dims(n / a, 2);
            rest.insert(0, a);
            rest.sort_unstable();
            rest
        }
    }
}

/// The torus dimensions of `spec`, checked against its node count.
pub fn dims(spec: &TopologySpec) -> Result<Vec<u32>, Refusal> {
    let parts = if spec.inter == InterKind::Torus3d {
        3
    } else {
        2
    };
    let Some(dims) = &spec.torus_dims else {
        return Ok(default_dims(spec.nodes, parts));
    };
    let shown = dims
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" x ");
    if dims.len() != parts as usize {
        return Err(Refusal::torus(format!(
            "a {parts}-D torus needs {parts} dimensions, torus_dims has {} ({shown})",
            dims.len()
        )));
    }
    if dims.contains(&0) {
        return Err(Refusal::torus(format!(
            "torus dimensions must be at least 1, not {shown}"
        )));
    }
    let product: u64 = dims.iter().map(|&d| d as u64).product();
    if product != spec.nodes as u64 {
        return Err(Refusal::torus(format!(
            "a {parts}-D torus of {shown} needs {product} nodes, the cluster has {}",
            spec.nodes
        )));
    }
    Ok(dims.clone())
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec, nics: &Nics) -> Result<Torus, Refusal> {
    let dims = dims(spec)?;
    let nd = dims.len() as u32;
    let link_bw = spec
        .torus_link_bandwidth
        .unwrap_or(spec.nics_per_node as f64 * spec.nic_bandwidth / (2 * nd) as f64);
    let mut t = Torus {
        dims: dims.clone(),
        nic_up: Vec::with_capacity(nics.vertices.len()),
        nic_down: Vec::with_capacity(nics.vertices.len()),
        plus: vec![EdgeIndex::end(); (spec.nodes * nd) as usize],
        minus: vec![EdgeIndex::end(); (spec.nodes * nd) as usize],
        routers: Vec::with_capacity(spec.nodes as usize),
    };
    for node in 0..spec.nodes {
        let name = t
            .coords(node)
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(".");
        let r = b.device(DeviceKind::Router, format!("router{name}"), None);
        t.routers.push(r);
        for k in 0..nics.per_node {
            let (u, d) = b.link(
                nics.vertices[(node * nics.per_node + k) as usize],
                r,
                LinkKind::Network,
                spec.nic_bandwidth,
                spec.inter_latency / 2.0,
            );
            t.nic_up.push(u);
            t.nic_down.push(d);
        }
    }
    let mut stride = 1;
    for (d, &k) in dims.iter().enumerate() {
        if k >= 2 {
            for node in 0..spec.nodes {
                let x = node / stride % k;
                let next = if x + 1 == k {
                    node - x * stride
                } else {
                    node + stride
                };
                let (f, back) = b.link(
                    t.routers[node as usize],
                    t.routers[next as usize],
                    LinkKind::Network,
                    link_bw,
                    spec.switch_latency,
                );
                t.plus[(node * nd) as usize + d] = f;
                t.minus[(next * nd) as usize + d] = back;
            }
        }
        stride *= k;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::super::testing::check_all_routes;
    use super::super::*;
    use super::*;

    fn spec(nodes: u32, inter: InterKind, dims: Option<Vec<u32>>) -> TopologySpec {
        TopologySpec {
            inter,
            torus_dims: dims,
            ..TopologySpec::new(nodes, 2)
        }
    }

    fn router_hops(t: &Topology, r: &Route) -> usize {
        r.links
            .iter()
            .filter(|&&e| {
                let (a, b) = t.ends(e);
                t.graph[a].kind == DeviceKind::Router && t.graph[b].kind == DeviceKind::Router
            })
            .count()
    }

    #[test]
    fn default_dims_are_square() {
        assert_eq!(default_dims(16, 2), [4, 4]);
        assert_eq!(default_dims(12, 2), [3, 4]);
        assert_eq!(default_dims(7, 2), [1, 7]);
        assert_eq!(default_dims(64, 3), [4, 4, 4]);
        assert_eq!(default_dims(24, 3), [2, 3, 4]);
    }

    #[test]
    fn wrong_dims_are_refused() {
        let e = Topology::build(&spec(12, InterKind::Torus2d, Some(vec![4, 4]))).unwrap_err();
        assert_eq!(e.part, super::super::Part::Torus);
        assert_eq!(
            e.message,
            "a 2-D torus of 4 x 4 needs 16 nodes, the cluster has 12"
        );
        let e = Topology::build(&spec(12, InterKind::Torus3d, Some(vec![3, 4]))).unwrap_err();
        assert!(e.message.contains("3 dimensions"), "{e}");
    }

    #[test]
    fn manhattan_hops_2d() {
        let t = Topology::build(&spec(20, InterKind::Torus2d, Some(vec![4, 5]))).unwrap();
        assert_eq!(t.count(|k| *k == DeviceKind::Router), 20);
        // 20 routers x 2 dimensions, one link each; 40 NIC-router links.
        let net = t
            .graph
            .edge_weights()
            .filter(|l| l.kind == LinkKind::Network)
            .count();
        assert_eq!(net, 2 * (40 + 40));
        let torus = match &t.routing {
            routing::Routing::Structured {
                inter: routing::Inter::Torus(x),
                ..
            } => x.clone(),
            _ => unreachable!(),
        };
        for s in 0..40 {
            for d in 0..40 {
                let (ns, nd) = (s / 2, d / 2);
                if ns == nd {
                    continue;
                }
                let (a, b) = (torus.coords(ns), torus.coords(nd));
                let want: u32 = (0..2)
                    .map(|i| {
                        let k = torus.dims[i];
                        let f = (b[i] + k - a[i]) % k;
                        f.min(k - f)
                    })
                    .sum();
                assert_eq!(router_hops(&t, &t.route(s, d)) as u32, want, "{s} -> {d}");
            }
        }
        check_all_routes(&t);
    }

    #[test]
    fn manhattan_hops_3d_and_small_dims() {
        let t = Topology::build(&spec(12, InterKind::Torus3d, Some(vec![2, 2, 3]))).unwrap();
        // Node 0 (0,0,0) to node 11 (1,1,2): 1 + 1 + 1 (wrap) hops.
        assert_eq!(router_hops(&t, &t.route(0, 22)), 3);
        check_all_routes(&t);
        let ring = Topology::build(&spec(5, InterKind::Torus2d, None)).unwrap();
        assert_eq!(router_hops(&ring, &ring.route(0, 8)), 1);
        check_all_routes(&ring);
    }
}
