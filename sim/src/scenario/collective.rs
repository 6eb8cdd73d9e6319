//! `[collective]`: one collective operation priced on the scenario's cluster (`kind =
//! "collective"`), as nccl-tests would run it, optionally compressed.

use super::compression::CompressionSpec;
use super::quantity::Bytes;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveSection {
    /// all-reduce | all-gather | reduce-scatter | broadcast | reduce | all-to-all | send-recv
    pub op: String,
    /// nccl-tests' size: each rank's buffer (all-reduce), the whole gathered or scattered buffer,
    /// or the message.
    pub size: Bytes,
    /// ring | tree | halving-doubling | hierarchical | nvls | direct | auto (default auto).
    pub algorithm: Option<String>,
    /// Ranks taking part: the first N GPUs (default all).
    pub ranks: Option<u32>,
    /// Compress the payload (the report then gives the uncompressed time and the speed-up too).
    pub compression: Option<CompressionSpec>,
}
