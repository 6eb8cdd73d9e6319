//! Wide-area clusters: the nodes are split into `sites` sites of consecutive nodes (sizes differing
//! by at most one), each site a [`fat_tree`](super::fat_tree) of its own, with one Router per site
//! linked to every spine of the site, and every pair of site routers joined by a WAN link.
//!
//! Modelled: WAN links of `wan_bandwidth` per direction and `wan_latency` one way (a full mesh
//! between site routers, so two sites are always one WAN hop apart); spine <-> router links as
//! fast as a spine's downlinks (the WAN is the bottleneck, not the site's edge) with
//! `switch_latency`. Routes between sites: GPU -> NIC -> leaf -> spine -> router -> router ->
//! spine -> leaf -> NIC -> GPU, both spines picked by the ECMP hash. Inside a site, as in a
//! fat-tree; every site has spines, even a site of one leaf, so its router has somewhere to attach.
//!
//! Deliberately ignored: WAN protocol effects (TCP windows, loss, retransmission), shared or
//! leased-line capacity varying over time, routing over intermediate sites. Units: bytes/s per
//! direction, seconds.

use super::clos::{self, Clos, Placement, Upper};
use super::nic::Nics;
use super::spec::TopologySpec;
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::{EdgeIndex, NodeIndex};

#[derive(Clone, Debug)]
pub(crate) struct Sites {
    pub sites: u32,
    /// Spine -> its site's router and back, by `site * spines + spine`.
    pub up: Vec<EdgeIndex>,
    pub down: Vec<EdgeIndex>,
    /// Router `i` -> router `j`, by `i * sites + j` (`EdgeIndex::end()` on the diagonal).
    pub mesh: Vec<EdgeIndex>,
}

impl Sites {
    /// Appends spine `s1` of site `ga` -> router -> router -> spine `s2` of site `gb`.
    pub fn route(&self, spines: u32, ga: u32, s1: u32, gb: u32, s2: u32, out: &mut Vec<EdgeIndex>) {
        out.push(self.up[(ga * spines + s1) as usize]);
        out.push(self.mesh[(ga * self.sites + gb) as usize]);
        out.push(self.down[(gb * spines + s2) as usize]);
    }
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec, nics: &Nics) -> Clos {
    let n = spec.sites;
    let mut c = clos::build(b, spec, nics, Placement::NodeMajor, n, "site", true);
    let routers: Vec<NodeIndex> = (0..n)
        .map(|i| b.device(DeviceKind::Router, format!("site{i}/router"), None))
        .collect();
    let s = c.spines;
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for site in 0..n {
        for i in 0..s {
            let (u, d) = b.link(
                c.spine_vertices[(site * s + i) as usize],
                routers[site as usize],
                LinkKind::Network,
                c.spine_down_bandwidth,
                spec.switch_latency,
            );
            up.push(u);
            down.push(d);
        }
    }
    let mut mesh = vec![EdgeIndex::end(); (n * n) as usize];
    for i in 0..n {
        for j in i + 1..n {
            let (ij, ji) = b.link(
                routers[i as usize],
                routers[j as usize],
                LinkKind::Wan,
                spec.wan_bandwidth,
                spec.wan_latency,
            );
            mesh[(i * n + j) as usize] = ij;
            mesh[(j * n + i) as usize] = ji;
        }
    }
    c.upper = Upper::Wan(Sites {
        sites: n,
        up,
        down,
        mesh,
    });
    c
}

#[cfg(test)]
mod tests {
    use super::super::testing::{check_all_routes, names};
    use super::super::*;

    #[test]
    fn sites_meet_over_the_wan() {
        let spec = TopologySpec {
            inter: InterKind::Wan,
            sites: 3,
            leaf_downlinks: 4,
            wan_bandwidth: 10e9,
            wan_latency: 2e-3,
            ..TopologySpec::new(7, 2)
        };
        let t = Topology::build(&spec).unwrap();
        assert_eq!(t.count(|k| *k == DeviceKind::Router), 3);
        let wan = t
            .graph
            .edge_weights()
            .filter(|l| l.kind == LinkKind::Wan)
            .count();
        assert_eq!(wan, 2 * 3);
        // Sites hold nodes 0-1, 2-3, 4-6. Inside a site: no WAN.
        let r = t.route(0, 3);
        assert!(r.links.iter().all(|&e| t.link(e).kind != LinkKind::Wan));
        // Across sites: exactly one WAN hop, through both routers.
        let r = t.route(0, 13);
        let n = names(&t, &r);
        assert_eq!(
            r.links
                .iter()
                .filter(|&&e| t.link(e).kind == LinkKind::Wan)
                .count(),
            1
        );
        assert_eq!(n[4], "site0/router", "{n:?}");
        assert_eq!(n[5], "site2/router", "{n:?}");
        assert_eq!(t.route_bandwidth(&r), 10e9);
        let latency = spec.inter_latency + 4.0 * spec.switch_latency + 2e-3;
        assert!((t.route_latency(&r) - latency).abs() < 1e-12);
        check_all_routes(&t);
    }

    #[test]
    fn one_site_is_refused() {
        let spec = TopologySpec {
            inter: InterKind::Wan,
            sites: 1,
            ..TopologySpec::new(4, 8)
        };
        let e = Topology::build(&spec).unwrap_err();
        assert_eq!(e.part, super::super::Part::Shape);
        assert!(e.message.contains("at least 2 sites"), "{e}");
    }
}
