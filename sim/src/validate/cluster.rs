//! The `[cluster]` table of a training case: its GPU and nodes, a stated power limit, and the
//! links as the source describes them (`[cluster.intra_node]`, `[cluster.inter_node]`), with the
//! network assumed where the source does not state one.

use super::prose::{
    bandwidth_in, count_in, find_gpu, power_limit_in, rate_is_per_node, text, whole,
};
use super::{Case, Refusal, quote};
use crate::hw::gpu::{GpuSpec, IntraLinkKind};
use std::fmt::Write as _;

/// The `[cluster]` table of a training case (with its link keys), its GPU and its GPU count.
pub(super) fn cluster_table(
    c: &Case,
    a: &mut Vec<String>,
) -> Result<(String, &'static GpuSpec, u32), Refusal> {
    let hw = |k: &str| c.get("hardware", k);
    let gpu_name = text(hw("gpu")).ok_or_else(|| Refusal::failed("hardware.gpu is missing", a))?;
    let (gpu, note) = find_gpu(gpu_name).map_err(|e| Refusal::failed(e, a))?;
    a.extend(note);
    let count =
        whole(hw("count")).ok_or_else(|| Refusal::failed("hardware.count is missing", a))?;
    let gpus_per_node = match whole(hw("gpus_per_node")) {
        Some(n) => n,
        None => {
            let n = count.min(8);
            a.push(format!("{n} GPUs per node (not stated)"));
            n
        }
    };
    if gpus_per_node == 0 || !count.is_multiple_of(gpus_per_node) {
        return Err(Refusal::failed(
            format!("{count} GPUs do not fill nodes of {gpus_per_node}"),
            a,
        ));
    }
    let nodes = count / gpus_per_node;
    if let Some(stated) = whole(hw("nodes"))
        && stated != nodes
    {
        return Err(Refusal::failed(
            format!(
                "hardware.nodes = {stated}, but {count} GPUs at {gpus_per_node} a node make {nodes}"
            ),
            a,
        ));
    }
    let mut cluster = format!(
        "[cluster]\ngpu = {}\nnodes = {nodes}\ngpus_per_node = {gpus_per_node}\n",
        quote(&gpu.name)
    );
    if let Some(watts) = power_limit_in(gpu_name) {
        let _ = writeln!(cluster, "power_limit = \"{watts} W\"");
        a.push(format!(
            "power limit {watts} W, as the source states for its GPU (clocks fall to fit it)"
        ));
    }
    let intra = intra_node(text(hw("intra_node")), gpu, a);
    if !intra.is_empty() {
        let _ = write!(cluster, "\n[cluster.intra_node]\n{intra}");
    }
    if nodes > 1 {
        let inter = inter_node(text(hw("inter_node")), gpu, gpus_per_node, a)
            .map_err(|e| Refusal::failed(e, a))?;
        let _ = write!(cluster, "\n[cluster.inter_node]\n{inter}");
    }
    Ok((cluster, gpu, count))
}

/// `[cluster.intra_node]` keys for the source's description (empty: the GPU's datasheet).
fn intra_node(stated: Option<&str>, gpu: &GpuSpec, a: &mut Vec<String>) -> String {
    let usual = match gpu.intra_link {
        IntraLinkKind::NvSwitch => "NVSwitch",
        IntraLinkKind::Mesh => "NVLink mesh",
        IntraLinkKind::Pcie => "PCIe",
    };
    let Some(t) = stated else {
        a.push(format!(
            "intra-node link: the {}'s usual {usual} (not stated)",
            gpu.name
        ));
        return String::new();
    };
    let lower = t.to_lowercase();
    if !lower.contains(&usual.to_lowercase()) {
        a.push(format!(
            "intra-node \"{t}\" modelled as the {}'s usual {usual}",
            gpu.name
        ));
    }
    let Some((bw, written)) = bandwidth_in(t) else {
        return String::new();
    };
    let datasheet = gpu.intra_bandwidth;
    let close = |x: f64| (x - datasheet).abs() <= 0.01 * datasheet;
    let per_direction = if lower.contains("bidirectional") || close(bw / 2.0) {
        if !lower.contains("bidirectional") {
            a.push(format!(
                "intra-node {written} read as the bidirectional total ({} GB/s per direction)",
                bw / 2e9
            ));
        }
        bw / 2.0
    } else {
        a.push(format!("intra-node {written} read as per direction"));
        bw
    };
    if close(per_direction) {
        String::new()
    } else {
        format!("bandwidth = \"{} GB/s\"\n", per_direction / 1e9)
    }
}

/// `[cluster.inter_node]` keys for the source's description; the assumed network when it is not
/// stated.
fn inter_node(
    stated: Option<&str>,
    gpu: &GpuSpec,
    gpus_per_node: u32,
    a: &mut Vec<String>,
) -> Result<String, String> {
    let stated = stated.filter(|t| !t.to_lowercase().contains("not stated"));
    let Some(t) = stated else {
        let rate = if gpu.name.starts_with("H100")
            || gpu.name.starts_with("H800")
            || gpu.name.starts_with("H200")
        {
            400
        } else if gpu.name.starts_with("A100") || gpu.name.starts_with("A800") {
            200
        } else {
            return Err(format!(
                "the inter-node network is not stated and there is no default for {}",
                gpu.name
            ));
        };
        a.push(format!(
            "inter-node network not stated: 8 x {rate} Gb/s NICs per node on a non-blocking fat \
             tree (usual for {} clusters)",
            gpu.name
        ));
        return Ok(format!(
            "topology = \"fat-tree\"\nnic_bandwidth = \"{rate} Gb/s\"\nnics_per_node = 8\n"
        ));
    };
    let lower = t.to_lowercase();
    let (mut bw, _) = bandwidth_in(t)
        .ok_or_else(|| format!("no NIC bandwidth in the inter-node description \"{t}\""))?;
    // A node's total rate: a NIC a GPU.
    let nics = if rate_is_per_node(t) {
        bw /= gpus_per_node as f64;
        a.push(format!(
            "the stated rate per node read as {gpus_per_node} NICs of {} Gb/s, one a GPU",
            bw * 8.0 / 1e9
        ));
        gpus_per_node
    } else if lower.contains("per gpu") {
        gpus_per_node
    } else if let Some(n) = count_in(t) {
        n
    } else {
        a.push(format!(
            "{gpus_per_node} NICs per node, one per GPU (count not stated in \"{t}\")"
        ));
        gpus_per_node
    };
    let topology = if lower.contains("fat tree") || lower.contains("fat-tree") {
        "fat-tree"
    } else if lower.contains("rail") {
        "rail-optimized"
    } else {
        a.push("non-blocking fat tree between nodes (topology not stated)".into());
        "fat-tree"
    };
    // An InfiniBand subnet manager fills the switches' tables with one path per destination;
    // Ethernet fabrics hash each flow (the scenario default).
    let routing = if lower.contains("infiniband") {
        a.push(
            "InfiniBand: switches route by destination (the subnet manager's forwarding tables, \
             routing = \"destination\"), not by a hash of each flow"
                .into(),
        );
        "routing = \"destination\"\n"
    } else {
        ""
    };
    Ok(format!(
        "topology = \"{topology}\"\nnic_bandwidth = \"{} Gb/s\"\nnics_per_node = {nics}\n{routing}",
        bw * 8.0 / 1e9
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::prose::find_gpu;

    #[test]
    fn infiniband_routes_by_destination_and_other_networks_hash() {
        let a100 = find_gpu("A100-SXM4-80GB").unwrap().0;
        let mut a = Vec::new();
        let ib = inter_node(
            Some("8x Mellanox HDR InfiniBand 200 Gb/s HCAs per node (fat tree)"),
            a100,
            8,
            &mut a,
        )
        .unwrap();
        assert!(ib.contains("routing = \"destination\""), "{ib}");
        assert!(a.iter().any(|x| x.starts_with("InfiniBand")), "{a:?}");
        let mut a = Vec::new();
        let rdma = inter_node(
            Some("RDMA backend network 400 Gb/s per GPU"),
            a100,
            8,
            &mut a,
        );
        assert!(!rdma.unwrap().contains("routing"));
        assert!(
            !inter_node(None, a100, 8, &mut a)
                .unwrap()
                .contains("routing")
        );
    }

    /// A rate per node with no NIC count before it is the node's total, one NIC a GPU; with a
    /// count ("1x 400 Gb/s per node") it is each NIC's.
    #[test]
    fn a_rate_per_node_is_the_nodes_total_unless_counted() {
        let h100 = find_gpu("H100-SXM5-80GB").unwrap().0;
        let mut a = Vec::new();
        let efa = "EFA 3200 Gb/s per node (32x 100 Gb/s), i.e. 400 Gb/s per GPU";
        let t = inter_node(Some(efa), h100, 8, &mut a).unwrap();
        assert!(
            t.contains("nic_bandwidth = \"400 Gb/s\"") && t.contains("nics_per_node = 8"),
            "{t}"
        );
        let t = inter_node(Some("1x 400 Gb/s per node"), h100, 8, &mut a).unwrap();
        assert!(
            t.contains("nic_bandwidth = \"400 Gb/s\"") && t.contains("nics_per_node = 1"),
            "{t}"
        );
    }
}
