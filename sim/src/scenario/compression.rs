//! `[compression]`: compressed collectives per parallel dimension of a training step (lossless
//! for model-parallel messages, lossy for gradients, or any mix), as the compressed-collective
//! papers configure them.

use super::quantity::{Bandwidth, Bytes};
use serde::Deserialize;

/// One dimension's compression.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressionSpec {
    /// Original bytes over compressed bytes (1 or more).
    pub ratio: f64,
    /// Compressor throughput: bytes of input compressed per second.
    pub compress: Bandwidth,
    /// Decompressor throughput: bytes of output restored per second.
    pub decompress: Bandwidth,
    /// Decompress, reduce and recompress at every step of the collective (else compress once
    /// before and decompress once after).
    pub per_hop: Option<bool>,
    /// Pipeline each step's decompression and recompression with its transfer (NCCLZ): a step
    /// takes the larger of the two plus one slice of the smaller. Per-hop compression only.
    pub overlap: Option<bool>,
    /// Bytes of payload per pipelined slice when `overlap` (default: NCCL's 1 MiB ring slice).
    pub slice: Option<Bytes>,
    /// Error feedback (pipeline messages only): keep what compression lost of each message and
    /// add it to the same message at the next step (Clapping), a buffer in memory per message.
    pub error_feedback: Option<bool>,
}

/// `[compression.data]`, `[compression.tensor]`, ... : which communicators compress.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressionSection {
    /// Data-parallel gradient reductions and ZeRO's gathers.
    pub data: Option<CompressionSpec>,
    /// Tensor-parallel all-reduces, all-gathers and reduce-scatters.
    pub tensor: Option<CompressionSpec>,
    /// Pipeline-parallel activation and gradient hand-offs.
    pub pipeline: Option<CompressionSpec>,
    /// Expert-parallel all-to-alls.
    pub expert: Option<CompressionSpec>,
    /// Context-parallel key and value exchanges.
    pub context: Option<CompressionSpec>,
    /// Local SGD's outer synchronisation across sites (`parallel.local_steps`).
    pub outer: Option<CompressionSpec>,
    /// Activations saved for the backward (`recompute = "adaptive"` chooses which): ratio and
    /// compressor and decompressor throughputs.
    pub activations: Option<CompressionSpec>,
}
