//! `[cluster]`: which GPUs, how many, and how they are wired.

use super::quantity::{Bandwidth, Bytes, Duration, Power, Throughput};
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// Catalog name or alias of the GPU (`clustersim list gpus`).
    pub gpu: Option<String>,
    /// A device defined by its own figures instead of `gpu` (an FPGA design, an ASIC).
    pub accelerator: Option<AcceleratorSection>,
    pub nodes: Option<u32>,
    pub gpus_per_node: Option<u32>,
    pub intra_node: Option<IntraNodeSection>,
    pub inter_node: Option<InterNodeSection>,
    /// Calibration profile of measured kernel times that prices kernels before the roofline: a
    /// shipped profile's name (e.g. "h100-sxm5-80gb-vidur") or a profile file, relative to the
    /// scenario file (docs/PROFILES.md). Default: none, the roofline prices every kernel.
    pub profile: Option<String>,
    /// Sustained board power limit per GPU, e.g. "500 W": kernels that would draw more run at a
    /// lower clock (`hw::clock`). Default: the TDP.
    pub power_limit: Option<Power>,
    /// The servers' host CPUs and memory (`hw::host`), used where weights or optimizer states
    /// live in host memory. Default: a dual-socket Xeon Platinum 8480C with 2 TB (DGX H100).
    pub host: Option<HostSection>,
}

/// `[cluster.host]`: each server's CPUs and host memory; every key defaults to
/// `hw::host::HostSpec::DEFAULT`'s figure.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSection {
    /// Dense arithmetic peak of all sockets, e.g. "14.3 TFLOP/s".
    pub cpu_flops: Option<Throughput>,
    /// Memory bandwidth of all sockets, e.g. "614 GB/s".
    pub memory_bandwidth: Option<Bandwidth>,
    /// Host memory capacity, e.g. "2 TB".
    pub memory: Option<Bytes>,
}

/// `[cluster.accelerator]`: a device defined by its own figures (`hw::accelerator`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceleratorSection {
    /// What reports call it.
    pub name: String,
    /// Dense peaks by format, e.g. `{ fp16 = "6 TFLOP/s", int8 = "24.5 TOP/s" }`; fp16 required.
    pub peak: PeakSection,
    /// Device memory capacity.
    pub memory: Bytes,
    pub memory_bandwidth: Bandwidth,
    /// Board power at full load.
    pub tdp: Power,
    /// Board power idle (default 15% of `tdp`, as for GPUs).
    pub idle_power: Option<Power>,
    /// Exponentials a second of a unit that prices softmax apart (default: not priced apart).
    pub nonlinear_rate: Option<Throughput>,
    /// The clock, as a share of the one its efficiency constants hold, at which a compute-bound
    /// matrix kernel draws exactly `tdp` (`hw::clock`; default 1: it holds that clock at its TDP).
    pub sustained_clock: Option<f64>,
    /// Units that run thread blocks or tiles side by side (default 1).
    pub compute_units: Option<u32>,
    /// Host link per direction; peers also talk over it (default 16 GB/s, PCIe Gen3 x16).
    pub host_bandwidth: Option<Bandwidth>,
    /// Departures from the efficiency constants measured on GPUs (`hw::roofline::Efficiency`).
    pub efficiency: Option<EfficiencySection>,
    /// Where the figures come from.
    pub source: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeakSection {
    pub fp32: Option<Throughput>,
    pub bf16: Option<Throughput>,
    pub fp16: Option<Throughput>,
    pub fp8: Option<Throughput>,
    pub int8: Option<Throughput>,
    pub int4: Option<Throughput>,
}

/// Each key replaces one of `hw::roofline::Efficiency::DEFAULT`'s constants.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EfficiencySection {
    pub gemm_peak_fraction: Option<f64>,
    /// The GEMM dimension at which half the peak fraction is reached along it: 32 on GPUs
    /// (tiles); about 1 for a design built for the matrix-vector products of small batches.
    pub gemm_half_dim: Option<f64>,
    pub attention_peak_fraction: Option<f64>,
    pub memory_fraction: Option<f64>,
    pub elementwise_fraction: Option<f64>,
    pub kernel_overhead: Option<Duration>,
    pub overlap_exponent: Option<f64>,
    pub tensor_core_latency: Option<Duration>,
}

/// Links inside one server. Defaults come from the GPU's usual server.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntraNodeSection {
    pub link: Option<IntraLink>,
    /// Per GPU, per direction.
    pub bandwidth: Option<Bandwidth>,
    /// One-way latency of a message between two GPUs of the server.
    pub latency: Option<Duration>,
    /// With `link = "nvlink-mesh"`: which GPUs NVLink joins (default `"full"`, every pair).
    pub mesh: Option<MeshShape>,
    /// Per GPU, per direction, of its PCIe link (to its NIC, to a PCIe switch). Default: the GPU's
    /// datasheet host-link bandwidth.
    pub pcie_bandwidth: Option<Bandwidth>,
}

/// Which GPUs of a server an NVLink mesh joins.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeshShape {
    /// Every GPU to every other, its bandwidth split evenly over its peers.
    Full,
    /// GPUs 2i and 2i+1 joined by NVLink; pairs talk over PCIe through the host.
    Pairs,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntraLink {
    Nvswitch,
    NvlinkMesh,
    Pcie,
}

/// Links between servers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterNodeSection {
    pub topology: Option<Topology>,
    /// Per NIC, per direction.
    pub nic_bandwidth: Option<Bandwidth>,
    pub nics_per_node: Option<u32>,
    /// Ratio of downlink to uplink capacity at the leaf switches (1.0 = non-blocking).
    pub oversubscription: Option<f64>,
    /// One-way latency of a message between two servers (NIC, switches and cables; default:
    /// the transport's).
    pub latency: Option<Duration>,
    /// What carries the NICs' traffic: "infiniband" (the default), "roce", "efa", "efa-v1"
    /// (p3dn, p4d, p4de), "tcpx", "tcpxo" (`net::transport`).
    pub transport: Option<crate::net::Transport>,
    /// NIC ports one leaf switch serves (default 32).
    pub leaf_downlinks: Option<u32>,
    /// Spine switches per pod (default: one per leaf uplink port, downlinks / oversubscription).
    pub spines: Option<u32>,
    /// Leaf/spine networks: how switches choose among equal uplinks, "ecmp" (a hash of each
    /// flow), "destination" (InfiniBand's per-destination forwarding tables) or "spray" (every
    /// flow over every path); default: the transport's (`net::transport`).
    pub routing: Option<crate::net::topology::spec::PathSelection>,
    /// Fat-tree and rail-optimized: number of pods, each with its own leaves and spines, joined by
    /// a core layer (default 1, no core).
    pub pods: Option<u32>,
    /// Ratio of a pod spine's downlink to its uplink capacity towards the core (default 1.0).
    pub pod_oversubscription: Option<f64>,
    /// Torus: nodes along each dimension, e.g. `[4, 4]` (default: the most square factorisation of
    /// the node count).
    pub torus_dims: Option<Vec<u32>>,
    /// Torus: bandwidth of each router-to-router link, per direction (default: the node's NIC
    /// bandwidth spread over its 2 x dimensions torus ports).
    pub torus_link_bandwidth: Option<Bandwidth>,
    /// Wan: number of sites the nodes are split into (default 2).
    pub sites: Option<u32>,
    /// Wan: bandwidth of the link between two sites, per direction (default 400 Gb/s).
    pub wan_bandwidth: Option<Bandwidth>,
    /// Wan: one-way latency of the link between two sites (default 1 ms, about 200 km of fibre).
    pub wan_latency: Option<Duration>,
    /// Graph: the TOML file listing devices and links, relative to the scenario file.
    pub graph_file: Option<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    FatTree,
    RailOptimized,
    #[serde(rename = "torus-2d")]
    Torus2d,
    #[serde(rename = "torus-3d")]
    Torus3d,
    Wan,
    Graph,
}

impl Topology {
    pub fn name(self) -> &'static str {
        match self {
            Topology::FatTree => "fat-tree",
            Topology::RailOptimized => "rail-optimized",
            Topology::Torus2d => "torus-2d",
            Topology::Torus3d => "torus-3d",
            Topology::Wan => "wan",
            Topology::Graph => "graph",
        }
    }
}
