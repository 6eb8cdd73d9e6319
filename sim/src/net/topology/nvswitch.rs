//! NVSwitch servers (HGX/DGX A100, H100, B200): every GPU has one link pair to the server's
//! NVSwitch vertex, at the GPU's full NVLink bandwidth per direction.
//!
//! Modelled: the per-GPU NVLink port bandwidth, which is what bounds a GPU's traffic, and one
//! latency (`intra_latency`, half on each hop). Deliberately ignored: the several physical NVSwitch
//! chips and how the GPU's NVLinks are spread over them (the switch fabric is modelled as a single
//! non-blocking vertex), NVLink SHARP. A server of one GPU has no NVSwitch vertex. Units: bytes/s per direction, seconds.

use super::spec::TopologySpec;
use super::{Builder, DeviceKind, LinkKind};
use petgraph::graph::EdgeIndex;

/// The edges of each GPU to and from its NVSwitch, by rank.
#[derive(Clone, Debug)]
pub(crate) struct NvSwitchRoutes {
    pub up: Vec<EdgeIndex>,
    pub down: Vec<EdgeIndex>,
}

impl NvSwitchRoutes {
    pub fn route(&self, src: u32, dst: u32, out: &mut Vec<EdgeIndex>) {
        out.push(self.up[src as usize]);
        out.push(self.down[dst as usize]);
    }
}

pub(crate) fn build(b: &mut Builder, spec: &TopologySpec) -> super::routing::Intra {
    let g = spec.gpus_per_node;
    let total = (spec.nodes * g) as usize;
    let mut up = Vec::with_capacity(total);
    let mut down = Vec::with_capacity(total);
    if g == 1 {
        // A server of one GPU has no NVSwitch.
        for node in 0..spec.nodes {
            b.gpu(node, node, 0);
        }
        return super::routing::Intra::NvSwitch(NvSwitchRoutes { up, down });
    }
    for node in 0..spec.nodes {
        let sw = b.device(
            DeviceKind::NvSwitch,
            format!("node{node}/nvswitch"),
            Some(node),
        );
        for local in 0..g {
            let gpu = b.gpu(node * g + local, node, local);
            let (u, d) = b.link(
                gpu,
                sw,
                LinkKind::NvLink,
                spec.intra_bandwidth,
                spec.intra_latency / 2.0,
            );
            up.push(u);
            down.push(d);
        }
    }
    super::routing::Intra::NvSwitch(NvSwitchRoutes { up, down })
}

#[cfg(test)]
mod tests {
    use super::super::testing::check_all_routes;
    use super::super::*;

    #[test]
    fn one_switch_per_node_and_two_hops() {
        let t = Topology::build(&TopologySpec::new(1, 8)).unwrap();
        assert_eq!(t.graph.node_count(), 9);
        assert_eq!(t.graph.edge_count(), 16);
        let r = t.route(0, 7);
        assert_eq!(r.len(), 2);
        assert!((t.route_latency(&r) - t.spec.intra_latency).abs() < 1e-15);
        assert_eq!(t.route_bandwidth(&r), 450e9);
        assert_eq!(check_all_routes(&t), 8 * 7 * 2);
    }
}
