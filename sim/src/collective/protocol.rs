//! NCCL's three wire protocols, which trade bandwidth for latency.
//!
//! - LL (low latency): 8-byte stores that carry their own flag, no synchronisation between steps;
//!   the lowest latency and a fraction of the bandwidth.
//! - LL128: the same idea on 128-byte lines with 8 bytes of flag; most of the bandwidth, medium
//!   latency. NCCL enables it by default where the servers' GPUs are joined by NVLink and each NIC
//!   sits on a PCIe switch beside its GPU (src/graph/tuning.cc: `typeIntra <= PATH_NVL` and
//!   `typeInter <= PATH_PXB`), as in DGX and HGX servers, the network hops of their rings
//!   included; never where GPUs of a server talk over PCIe.
//! - Simple: bulk copies with a synchronisation per chunk; the full bandwidth, the highest latency.
//!
//! A collective costs `base + sum over steps (step latency + transfer time at the protocol's
//! share of bandwidth)`, with NCCL's model constants (src/graph/tuning.cc, microseconds: the
//! `baseLat` and `hwLat` tables of NCCL 2.7 inside a server, which the single-server tables of
//! docs/COLLECTIVE-VALIDATION.md check, and the network's Simple rows of NCCL 2.19 and later; the
//! bandwidth factors of its tuner), and the tuner's choice is the cheapest protocol. Step
//! latencies are per kind of link the step crosses.

use super::algorithm::Algorithm;
use super::op::CollectiveOp;
use crate::net::topology::LinkKind;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    Ll,
    Ll128,
    Simple,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    pub fn parse(text: &str) -> Option<Protocol> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text))
    }

    /// Whether NCCL runs the protocol for a collective whose slowest link is `slowest`.
    /// `nvlink_servers`: the cluster's servers hold several GPUs, every pair of them joined by
    /// NVLink (through an NVSwitch or a full mesh). LL128 runs over NVLink, and on such servers
    /// over the hops between them too (their NICs are taken to sit beside their GPUs, as in DGX
    /// and HGX designs); never over PCIe between GPUs, and not between single-chip nodes (a
    /// torus of accelerators, which NCCL does not drive). LL and LL128 cross a network only where
    /// its transport delivers small stores whole and in order (`Transport::in_order_stores`).
    pub fn usable(self, slowest: LinkKind, nvlink_servers: bool, in_order_network: bool) -> bool {
        if self != Protocol::Simple && slowest >= LinkKind::Network && !in_order_network {
            return false;
        }
        match self {
            Protocol::Ll128 => {
                slowest == LinkKind::NvLink || (nvlink_servers && slowest != LinkKind::Pcie)
            }
            Protocol::Ll | Protocol::Simple => true,
        }
    }

    /// Share of the links' bandwidth carrying data (NCCL's tuner: LL a quarter for reductions and
    /// a third otherwise, LL128 120/128 less overhead, 0.92).
    pub fn bandwidth_factor(self, op: CollectiveOp) -> f64 {
        match self {
            Protocol::Ll => match op {
                CollectiveOp::AllReduce | CollectiveOp::Reduce => 0.25,
                _ => 1.0 / 3.0,
            },
            Protocol::Ll128 => 0.92,
            Protocol::Simple => 1.0,
        }
    }

    /// Fixed cost of launching the collective, seconds (`baseLat`). Point-to-point exchanges
    /// (send/recv, all-to-all) set up no ring or tree and pay none.
    pub fn base_latency_s(self, algorithm: Algorithm) -> f64 {
        let us = match (algorithm, self) {
            (Algorithm::Direct | Algorithm::NvlsTree, _) => 0.0,
            (Algorithm::Tree, Protocol::Ll | Protocol::Ll128) => 4.4,
            (Algorithm::Tree, Protocol::Simple) => 0.0,
            (_, Protocol::Ll) => 3.6,
            (_, Protocol::Ll128) => 10.0,
            (_, Protocol::Simple) => 8.4,
        };
        us * 1e-6
    }

    /// Latency of one step over links of `kind`, seconds (`hwLat`; a tree's Simple step inside a
    /// server is the latency of a 256 KiB chunk). WAN steps take their route's latency instead.
    pub fn step_latency_s(self, algorithm: Algorithm, kind: LinkKind) -> f64 {
        if algorithm == Algorithm::NvlsTree {
            // NCCL 2.19+'s NVLSTree row (Simple only): 25 us through the switch, 20.9 us a
            // network hop.
            return match kind {
                LinkKind::NvLink | LinkKind::Pcie => 25e-6,
                LinkKind::Network | LinkKind::Wan => 20.9e-6,
            };
        }
        let tree = algorithm == Algorithm::Tree;
        let us = match (kind, tree, self) {
            (LinkKind::NvLink, false, Protocol::Ll) => 0.47,
            (LinkKind::NvLink, false, Protocol::Ll128) => 1.9,
            (LinkKind::NvLink, false, Protocol::Simple) => 3.4,
            (LinkKind::NvLink, true, Protocol::Ll) => 0.52,
            (LinkKind::NvLink, true, Protocol::Ll128) => 1.2,
            (LinkKind::NvLink, true, Protocol::Simple) => 28.0,
            (LinkKind::Pcie, false, Protocol::Ll) => 1.0,
            (LinkKind::Pcie, false, Protocol::Ll128) => 2.5,
            (LinkKind::Pcie, false, Protocol::Simple) => 5.7,
            (LinkKind::Pcie, true, Protocol::Ll) => 1.0,
            (LinkKind::Pcie, true, Protocol::Ll128) => 1.9,
            (LinkKind::Pcie, true, Protocol::Simple) => 28.0,
            (LinkKind::Network | LinkKind::Wan, false, Protocol::Ll) => 2.7,
            (LinkKind::Network | LinkKind::Wan, false, Protocol::Ll128) => 4.0,
            (LinkKind::Network | LinkKind::Wan, false, Protocol::Simple) => 14.0,
            (LinkKind::Network | LinkKind::Wan, true, Protocol::Ll) => 5.0,
            (LinkKind::Network | LinkKind::Wan, true, Protocol::Ll128) => 8.5,
            (LinkKind::Network | LinkKind::Wan, true, Protocol::Simple) => 14.0,
        };
        us * 1e-6
    }
}
