//! `[cluster]`'s wiring keys lowered to a `net::TopologySpec`: the intra-node link (the GPU's
//! usual one unless given), the inter-node topology and its options, and the graph file read
//! from disk when the topology is an explicit graph.

use crate::files;
use crate::hw::gpu::{GpuSpec, IntraLinkKind};
use crate::net::Fabric;
use crate::net::topology::spec::{GraphSource, InterKind, IntraKind, PathSelection, TopologySpec};
use crate::scenario::cluster::{self, ClusterSection, MeshShape};
use std::path::Path;

/// Why a spec was refused: a key of `[cluster]` (the caller places it), or a file it names that
/// cannot be read.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecError {
    Key(String),
    File(String),
}

/// The spec of a scenario's `[cluster]`: sizes, bandwidths and latencies from the resolved
/// `fabric` (where the workload already applied its defaults), the GPU's usual intra-node
/// link and PCIe bandwidth from `gpu`, and the topology keys from `cluster`. A relative
/// `graph_file` is taken relative to `base_dir` (the scenario file's directory) and read.
pub fn spec(
    cluster: &ClusterSection,
    fabric: &Fabric,
    gpu: &GpuSpec,
    base_dir: Option<&Path>,
) -> Result<TopologySpec, SpecError> {
    let intra_s = cluster.intra_node.clone().unwrap_or_default();
    let inter_s = cluster.inter_node.clone().unwrap_or_default();
    let own = match gpu.intra_link {
        IntraLinkKind::NvSwitch => cluster::IntraLink::Nvswitch,
        IntraLinkKind::Mesh => cluster::IntraLink::NvlinkMesh,
        IntraLinkKind::Pcie => cluster::IntraLink::Pcie,
    };
    let link = intra_s.link.unwrap_or(own);
    let intra = match (link, intra_s.mesh) {
        (cluster::IntraLink::NvlinkMesh, Some(MeshShape::Pairs)) => IntraKind::NvLinkPairs,
        (cluster::IntraLink::NvlinkMesh, _) => IntraKind::NvLinkMesh,
        (_, Some(_)) => {
            return Err(SpecError::Key(
                "cluster.intra_node.mesh applies only to link = \"nvlink-mesh\"".to_string(),
            ));
        }
        (cluster::IntraLink::Nvswitch, None) => IntraKind::NvSwitch,
        (cluster::IntraLink::Pcie, None) => IntraKind::Pcie,
    };
    let inter = match inter_s.topology.unwrap_or(cluster::Topology::FatTree) {
        cluster::Topology::FatTree => InterKind::FatTree,
        cluster::Topology::RailOptimized => InterKind::RailOptimized,
        cluster::Topology::Torus2d => InterKind::Torus2d,
        cluster::Topology::Torus3d => InterKind::Torus3d,
        cluster::Topology::Wan => InterKind::Wan,
        cluster::Topology::Graph => InterKind::Graph,
    };
    let mut spec = TopologySpec::from_fabric(fabric, intra, inter);
    // The GPU's link keeps its own efficiency, stated or not; another link gets NVLink's.
    spec.intra_efficiency = gpu.intra_efficiency.filter(|_| link == own);
    spec.pcie_bandwidth = intra_s.pcie_bandwidth.map_or(gpu.pcie_bandwidth, |b| b.0);
    spec.gpu_copy_bandwidth = gpu.copy_bandwidth();
    // Unstated, the fabric is taken at InfiniBand's rate and latency with its flows hashed
    // (ECMP), the cautious reading of an unknown network; a stated transport brings its own
    // routing.
    spec.transport = inter_s.transport.unwrap_or_default();
    spec.routing = inter_s
        .transport
        .map_or(PathSelection::Ecmp, |t| t.routing());
    if let Some(n) = inter_s.leaf_downlinks {
        spec.leaf_downlinks = n;
    }
    spec.spines = inter_s.spines;
    if let Some(r) = inter_s.routing {
        if !spec.inter.has_leaves_and_spines() {
            return Err(SpecError::Key(format!(
                "cluster.inter_node.routing applies to leaf/spine networks (topology = \
                 \"fat-tree\", \"rail-optimized\" or \"wan\"), not to {}",
                spec.inter.name()
            )));
        }
        spec.routing = r;
    }
    if let Some(p) = inter_s.pods {
        spec.pods = p;
    }
    if let Some(o) = inter_s.pod_oversubscription {
        spec.pod_oversubscription = o;
    }
    spec.torus_dims = inter_s.torus_dims.clone();
    spec.torus_link_bandwidth = inter_s.torus_link_bandwidth.map(|b| b.0);
    if let Some(s) = inter_s.sites {
        spec.sites = s;
    }
    if let Some(b) = inter_s.wan_bandwidth {
        spec.wan_bandwidth = b.0;
    }
    if let Some(d) = inter_s.wan_latency {
        spec.wan_latency = d.secs();
    }
    let graph_path = inter_s.graph_file.as_ref().map(|f| {
        let p = Path::new(f);
        match base_dir {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.to_path_buf(),
        }
    });
    if spec.inter == InterKind::Graph {
        let Some(path) = graph_path else {
            return Err(SpecError::Key(
            "topology = \"graph\" needs graph_file in [cluster.inter_node], e.g. graph_file = \"cluster-graph.toml\""
                .to_string(),
        ));
        };
        let text = files::read(&path).map_err(|why| {
            SpecError::File(format!(
                "graph file `{}`: cannot read it: {why}",
                path.display()
            ))
        })?;
        spec.graph = Some(GraphSource::File { path, text });
    }
    spec.validate().map_err(|e| SpecError::Key(e.message))?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_cluster_reads_the_new_keys() {
        let text = r#"
            gpu = "A100"
            nodes = 4
            gpus_per_node = 8
            [intra_node]
            link = "nvlink-mesh"
            mesh = "pairs"
            pcie_bandwidth = "32 GB/s"
            [inter_node]
            topology = "rail-optimized"
            nic_bandwidth = "200 Gb/s"
            pods = 2
            pod_oversubscription = 2.0
            leaf_downlinks = 16
        "#;
        let c: ClusterSection = toml::from_str(text).unwrap();
        let gpu = crate::hw::gpu::find("A100").unwrap();
        let fabric = Fabric {
            nodes: 4,
            gpus_per_node: 8,
            intra_bandwidth: 300e9,
            intra_latency: 1.5e-6,
            nic_bandwidth: 25e9,
            nics_per_node: 8,
            oversubscription: 1.0,
            inter_latency: 5e-6,
        };
        let s = spec(&c, &fabric, gpu, None).unwrap();
        assert_eq!(s.intra, IntraKind::NvLinkPairs);
        assert_eq!(s.inter, InterKind::RailOptimized);
        assert_eq!(s.pcie_bandwidth, 32e9);
        assert_eq!(
            (s.pods, s.pod_oversubscription, s.leaf_downlinks),
            (2, 2.0, 16)
        );
        assert_eq!(s.nic_bandwidth, 25e9);
    }

    #[test]
    fn graph_needs_a_file_and_mesh_needs_a_mesh() {
        let gpu = crate::hw::gpu::find("H100").unwrap();
        let fabric = Fabric {
            nodes: 2,
            gpus_per_node: 8,
            intra_bandwidth: 450e9,
            intra_latency: 1.5e-6,
            nic_bandwidth: 50e9,
            nics_per_node: 8,
            oversubscription: 1.0,
            inter_latency: 5e-6,
        };
        let c: ClusterSection = toml::from_str("[inter_node]\ntopology = \"graph\"").unwrap();
        let key = |e: SpecError| match e {
            SpecError::Key(e) => e,
            SpecError::File(e) => panic!("a key's error, not a file's: {e}"),
        };
        let e = key(spec(&c, &fabric, gpu, None).unwrap_err());
        assert!(e.contains("graph_file"), "{e}");
        let c: ClusterSection =
            toml::from_str("[intra_node]\nlink = \"pcie\"\nmesh = \"pairs\"").unwrap();
        let e = key(spec(&c, &fabric, gpu, None).unwrap_err());
        assert!(e.contains("nvlink-mesh"), "{e}");
        let c: ClusterSection =
            toml::from_str("[inter_node]\ntopology = \"graph\"\ngraph_file = \"g.toml\"").unwrap();
        // The file is taken relative to the scenario's folder, and read.
        let e = spec(&c, &fabric, gpu, Some(Path::new("/nonexistent-dir"))).unwrap_err();
        assert_eq!(
            e,
            SpecError::File(
                "graph file `/nonexistent-dir/g.toml`: cannot read it: no such file".into()
            )
        );
    }
}
