//! The report's view of a collective layer `Compression` (the lowering layer reads the
//! `[compression...]` tables, `scenario/lower/compression.rs`).

use crate::collective::compression::Compression;

/// The report's view of a compression: ratio, throughputs, per hop, and the overlap's slice in
/// bytes when the codec is pipelined with the transfers.
pub fn report(z: &Compression) -> serde_json::Value {
    let mut out = serde_json::json!({
        "ratio": z.ratio,
        "compress_bytes_per_s": z.compress_bytes_per_s,
        "decompress_bytes_per_s": z.decompress_bytes_per_s,
        "per_hop": z.per_hop,
    });
    if let Some(slice) = z.overlap_slice_bytes {
        out["overlap_slice_bytes"] = serde_json::json!(slice);
    }
    out
}
