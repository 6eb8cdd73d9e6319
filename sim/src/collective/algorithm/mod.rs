//! Collective algorithms: each lowers an operation over a group to a schedule of transfers.
//! One file per algorithm; `Auto` picks the fastest that applies, as NCCL's tuner does from its
//! own cost model.

pub(crate) mod direct;
pub(crate) mod halving_doubling;
pub(crate) mod hierarchical;
pub(crate) mod mesh_rings;
pub(crate) mod nvls;
pub(crate) mod nvls_tree;
pub(crate) mod ring;
pub(crate) mod torus;
pub(crate) mod tree;

use super::group::Group;
use super::op::CollectiveOp;
use super::schedule::Schedule;

/// What the algorithms may know of the network beyond the group's nodes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Wiring {
    /// The torus's first dimension, in nodes, when its nodes are single chips (the torus
    /// algorithm's rows); None elsewhere.
    pub torus_row: Option<u32>,
    /// Every GPU of a node has its own link to every other (no switch): rings share them out.
    pub full_mesh: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Ring,
    Tree,
    HalvingDoubling,
    Hierarchical,
    Nvls,
    /// In-switch reduction inside each server, trees between servers (NCCL's NVLSTree).
    NvlsTree,
    Direct,
    /// Rows then columns of a torus of single-chip nodes (TPU pods).
    Torus,
    Auto,
}

impl Algorithm {
    pub const CONCRETE: [Algorithm; 8] = [
        Algorithm::Ring,
        Algorithm::Tree,
        Algorithm::HalvingDoubling,
        Algorithm::Hierarchical,
        Algorithm::Nvls,
        Algorithm::NvlsTree,
        Algorithm::Direct,
        Algorithm::Torus,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::HalvingDoubling => "halving-doubling",
            Algorithm::Hierarchical => "hierarchical",
            Algorithm::Nvls => "nvls",
            Algorithm::NvlsTree => "nvls-tree",
            Algorithm::Direct => "direct",
            Algorithm::Torus => "torus-2d",
            Algorithm::Auto => "auto",
        }
    }

    /// Whether the NVSwitch reduces the data (NVLS, NVLS tree): NCCL runs it with the Simple
    /// protocol only, and its NVLink traffic moves at in-switch reduction's share of line rate.
    pub fn reduces_in_switch(self) -> bool {
        matches!(self, Algorithm::Nvls | Algorithm::NvlsTree)
    }

    pub fn parse(text: &str) -> Option<Algorithm> {
        let t = text.to_ascii_lowercase();
        Self::CONCRETE
            .into_iter()
            .chain([Algorithm::Auto])
            .find(|a| a.name() == t)
            .or(match t.as_str() {
                "rhd" | "recursive-halving-doubling" | "rabenseifner" => {
                    Some(Algorithm::HalvingDoubling)
                }
                "double-binary-tree" => Some(Algorithm::Tree),
                "nvlstree" | "nvls_tree" => Some(Algorithm::NvlsTree),
                "sharp" | "in-switch" => Some(Algorithm::Nvls),
                _ => None,
            })
    }

    /// The schedule of `op` over `group` with this (concrete) algorithm, or None where the
    /// algorithm does not apply (NVLS across nodes, halving-doubling on 12 ranks, ...).
    pub fn lower(self, op: CollectiveOp, group: &Group, bytes: f64) -> Option<Schedule> {
        self.lower_on(op, group, bytes, Wiring::default())
    }

    /// [`Algorithm::lower`] on a network wired as `wiring` says.
    pub fn lower_on(
        self,
        op: CollectiveOp,
        group: &Group,
        bytes: f64,
        wiring: Wiring,
    ) -> Option<Schedule> {
        if group.size() < 2 {
            return Some(Schedule::default());
        }
        match self {
            Algorithm::Ring => ring::lower(op, group, bytes, wiring.full_mesh),
            Algorithm::Tree => tree::lower(op, group, bytes),
            Algorithm::HalvingDoubling => halving_doubling::lower(op, group, bytes),
            Algorithm::Hierarchical => hierarchical::lower(op, group, bytes),
            Algorithm::Nvls => nvls::lower(op, group, bytes),
            Algorithm::NvlsTree => nvls_tree::lower(op, group, bytes),
            Algorithm::Direct => direct::lower(op, group, bytes),
            Algorithm::Torus => torus::lower(op, group, bytes, wiring.torus_row),
            Algorithm::Auto => None,
        }
    }
}
