//! Why a topology cannot be built: the part of its spec at fault and what a user reads. The
//! lowering layer places it in the scenario file.

use std::fmt;

/// The part of a [`TopologySpec`](super::TopologySpec) a refusal is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Sizes, bandwidths, latencies, oversubscription, switch, pod and site counts.
    Shape,
    /// The NICs of a node against its GPUs.
    Nics,
    /// The torus dimensions.
    Torus,
    /// An explicit graph file.
    Graph,
}

/// A spec [`Topology::build`](super::Topology::build) refuses.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub part: Part,
    pub message: String,
}

impl Refusal {
    pub(crate) fn shape(message: impl Into<String>) -> Self {
        Self::of(Part::Shape, message)
    }

    pub(crate) fn nics(message: impl Into<String>) -> Self {
        Self::of(Part::Nics, message)
    }

    pub(crate) fn torus(message: impl Into<String>) -> Self {
        Self::of(Part::Torus, message)
    }

    pub(crate) fn graph(message: impl Into<String>) -> Self {
        Self::of(Part::Graph, message)
    }

    fn of(part: Part, message: impl Into<String>) -> Self {
        Refusal {
            part,
            message: message.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}
