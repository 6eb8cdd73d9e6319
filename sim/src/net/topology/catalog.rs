//! The topologies a scenario can ask for, with one line each, for `clustersim list topologies`.

/// One buildable wiring.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// What the scenario writes.
    pub name: &'static str,
    /// The scenario keys that select it.
    pub select: &'static str,
    pub description: &'static str,
}

/// Every intra-node and inter-node wiring, intra-node first.
pub fn catalog() -> Vec<CatalogEntry> {
    let e = |name, select, description| CatalogEntry {
        name,
        select,
        description,
    };
    vec![
        e(
            "nvswitch",
            "[cluster.intra_node] link = \"nvswitch\"",
            "every GPU on one non-blocking NVSwitch at its full NVLink bandwidth (HGX A100/H100/B200)",
        ),
        e(
            "nvlink-mesh",
            "[cluster.intra_node] link = \"nvlink-mesh\"",
            "a direct link between every pair of GPUs, each GPU's bandwidth split over its peers (MI300X, V100)",
        ),
        e(
            "nvlink-pairs",
            "[cluster.intra_node] link = \"nvlink-mesh\", mesh = \"pairs\"",
            "GPUs joined in NVLink pairs; pairs talk over PCIe through the host (A100 pairwise-NVLink boxes)",
        ),
        e(
            "pcie",
            "[cluster.intra_node] link = \"pcie\"",
            "two GPUs per PCIe switch, switches under the host; cross-switch traffic goes through the host",
        ),
        e(
            "fat-tree",
            "[cluster.inter_node] topology = \"fat-tree\"",
            "two-level leaf/spine Clos, consecutive nodes' NICs on one leaf, uplinks divided by oversubscription",
        ),
        e(
            "rail-optimized",
            "[cluster.inter_node] topology = \"rail-optimized\"",
            "NIC k of every node on a rail-k leaf: same-rail traffic stays on a leaf, cross-rail crosses a spine",
        ),
        e(
            "multi-pod",
            "[cluster.inter_node] topology = \"fat-tree\" or \"rail-optimized\", pods = N",
            "three-tier Clos: pods with their own leaves and spines, joined by a core (pod_oversubscription)",
        ),
        e(
            "torus-2d",
            "[cluster.inter_node] topology = \"torus-2d\", torus_dims = [x, y]",
            "one router per node on a wrap-around 2-D grid, dimension-order routing (TPU-style)",
        ),
        e(
            "torus-3d",
            "[cluster.inter_node] topology = \"torus-3d\", torus_dims = [x, y, z]",
            "one router per node on a wrap-around 3-D grid, dimension-order routing (TPU-style)",
        ),
        e(
            "wan",
            "[cluster.inter_node] topology = \"wan\", sites = N, wan_bandwidth, wan_latency",
            "sites of their own fat-tree, site routers joined pairwise by WAN links",
        ),
        e(
            "graph",
            "[cluster.inter_node] topology = \"graph\", graph_file = \"...\"",
            "an explicit graph of devices and links from a TOML file, routed by fewest hops",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_described() {
        let c = catalog();
        let mut names: Vec<_> = c.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), c.len());
        assert!(
            c.iter()
                .all(|e| !e.description.is_empty() && e.select.contains("cluster."))
        );
    }
}
