//! Why a collective cannot be priced on a topology. The layers above say where the fault lies
//! in what the user wrote.

use super::{Algorithm, CollectiveOp};
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// A rank of the group is not a GPU of the cluster, which has `gpus`.
    RankOutside { rank: u32, gpus: usize },
    /// A copy of the group shifted beside it reaches a rank outside the cluster.
    CopyOutside { rank: u32, gpus: usize },
    /// The algorithm asked for has no schedule for `op` over `ranks` ranks.
    AlgorithmDoesNotApply {
        algorithm: Algorithm,
        op: CollectiveOp,
        ranks: u32,
    },
    /// None of the algorithms `Auto` chooses among applies.
    NoAlgorithm { op: CollectiveOp, ranks: u32 },
    /// In-switch reduction on a node without an NVSwitch.
    NoSwitch { node: u32 },
    /// A GPU is not attached to the NVSwitch that reduces for it.
    NotAttached,
    /// No protocol runs the algorithm on this topology.
    NoProtocol,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::RankOutside { rank, gpus } => {
                write!(f, "rank {rank} is outside the cluster's {gpus} GPUs")
            }
            Refusal::CopyOutside { rank, gpus } => write!(
                f,
                "a shifted copy reaches rank {rank}, outside the cluster's {gpus} GPUs"
            ),
            Refusal::AlgorithmDoesNotApply {
                algorithm,
                op,
                ranks,
            } => write!(
                f,
                "the {} algorithm does not apply to {op} over these {ranks} ranks",
                algorithm.name()
            ),
            Refusal::NoAlgorithm { op, ranks } => {
                write!(f, "no algorithm applies to {op} over {ranks} ranks")
            }
            Refusal::NoSwitch { node } => {
                write!(f, "node {node} has no NVSwitch for in-switch reduction")
            }
            Refusal::NotAttached => f.write_str("a GPU is not attached to its NVSwitch"),
            Refusal::NoProtocol => f.write_str("no protocol applies"),
        }
    }
}

impl std::error::Error for Refusal {}
