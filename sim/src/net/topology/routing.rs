//! Route dispatch: each builder leaves lookup tables of the edge indices its routes use, so a
//! route costs a few array reads per hop and no graph search (except on explicit graphs, where
//! BFS trees are cached per source).
//!
//! ECMP choices (which spine, which core) come from [`ecmp_hash`], a fixed mix of the
//! (source, destination) ranks: the same flow takes the same path on every machine and run.

use super::{clos::Clos, graph::GraphRoutes, nic::Nics, torus::Torus};
use super::{nvlink_mesh::MeshRoutes, nvswitch::NvSwitchRoutes, pcie::PcieRoutes};
use petgraph::graph::EdgeIndex;

#[derive(Clone, Debug)]
pub(crate) enum Intra {
    NvSwitch(NvSwitchRoutes),
    Mesh(MeshRoutes),
    /// PCIe tree, with NVLink between pairs when present.
    Pcie(PcieRoutes),
}

/// One per topology, so the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(crate) enum Inter {
    /// A single node: nothing between nodes.
    None,
    Clos(Clos),
    Torus(Torus),
}

/// One per topology, so the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(crate) enum Routing {
    Structured {
        intra: Intra,
        nics: Option<Nics>,
        inter: Inter,
    },
    Graph(GraphRoutes),
}

impl Routing {
    /// Appends the route `src -> dst` (distinct ranks) to `out`, between servers over the NICs
    /// of `lane` (`nic::Nics::lane`; each lane its own flow, hashed on its own).
    pub fn route(
        &self,
        gpus_per_node: u32,
        src: u32,
        dst: u32,
        lane: u32,
        out: &mut Vec<EdgeIndex>,
    ) {
        match self {
            Routing::Graph(g) => g.route(src, dst, out),
            Routing::Structured { intra, nics, inter } => {
                let (ns, nd) = (src / gpus_per_node, dst / gpus_per_node);
                if ns == nd {
                    match intra {
                        Intra::NvSwitch(r) => r.route(src, dst, out),
                        Intra::Mesh(r) => r.route(gpus_per_node, src, dst, out),
                        Intra::Pcie(r) => r.route(gpus_per_node, src, dst, out),
                    }
                    return;
                }
                let nics = nics.as_ref().expect("several nodes have NICs");
                let (a, up, _) = nics.lane(src, lane);
                let (b, _, down) = nics.lane(dst, lane);
                out.push(up);
                match inter {
                    Inter::None => unreachable!("several nodes have an inter-node part"),
                    Inter::Clos(c) => c.route(a, b, lane_hash(src, dst, lane % nics.lanes), out),
                    Inter::Torus(t) => t.route(a, b, ns, nd, out),
                }
                out.push(down);
            }
        }
    }
}

/// A fixed 64-bit mix (SplitMix64's finaliser) of a flow's ends.
pub(crate) fn ecmp_hash(src: u32, dst: u32) -> u64 {
    let mut z = ((src as u64) << 32 | dst as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The ECMP hash of one lane of a flow: the flow's own for lane 0, the hash of the hash and the
/// lane for the others (each lane is its own connection to the switches).
pub(crate) fn lane_hash(src: u32, dst: u32, lane: u32) -> u64 {
    let h = ecmp_hash(src, dst);
    if lane == 0 {
        h
    } else {
        ecmp_hash((h >> 32) as u32 ^ lane, h as u32)
    }
}

/// Which of the equal paths through leaves, spines and cores one flow takes: a number for each
/// layer it can choose in, the spine going up, the core, and the spine coming down, each taken
/// modulo the number of options there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PathChoice {
    pub up: u32,
    pub core: u32,
    pub down: u32,
}

impl PathChoice {
    /// ECMP: independent 21-bit fields of the flow's hash (bits 0, 21 and 42 up).
    pub fn hashed(hash: u64) -> PathChoice {
        let field = |salt: u32| ((hash >> (salt * 21)) & 0x1F_FFFF) as u32;
        PathChoice {
            up: field(0),
            core: field(1),
            down: field(2),
        }
    }

    /// InfiniBand's forwarding tables: both spines by the destination NIC's port on its leaf,
    /// the core by the destination's leaf.
    pub fn by_destination(port: u32, leaf: u32) -> PathChoice {
        PathChoice {
            up: port,
            core: leaf,
            down: port,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_fixed_and_spreads() {
        // Fixed: these values must not change between versions or machines.
        assert_eq!(ecmp_hash(0, 1), 0x910a_2dec_8902_5cc1);
        assert_eq!(ecmp_hash(12345, 678), 0x54d7_fb2e_41a6_69c3);
        assert_ne!(ecmp_hash(0, 1), ecmp_hash(1, 0));
        let mut counts = [0u32; 8];
        for s in 0..64 {
            for d in 0..64 {
                counts[(PathChoice::hashed(ecmp_hash(s, d)).up % 8) as usize] += 1;
            }
        }
        // 4096 flows over 8 spines: each gets roughly 512.
        assert!(
            counts.iter().all(|&c| (400..624).contains(&c)),
            "{counts:?}"
        );
    }
}
