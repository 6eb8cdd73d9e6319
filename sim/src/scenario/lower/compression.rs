//! A `[compression...]` table of a scenario to the collective layer's `Compression`: the ratio
//! (1 or more) and the compressor and decompressor throughputs (above zero) checked at their
//! keys, compressing once at the ends unless `per_hop` says otherwise (recorded); a per-hop codec
//! added to each step unless `overlap` pipelines it with the transfer in slices of `slice` bytes
//! (NCCL's 1 MiB unless given, recorded). Error feedback (`error_feedback`) is read by the caller
//! that models it and refused elsewhere.

use crate::collective::compression::{Compression, NCCL_SLICE_BYTES};
use crate::scenario::Scenario;
use crate::scenario::compression::CompressionSpec;
use crate::scenario::error::ScenarioError;

/// Reads the compression table at `path` (e.g. "compression.data"); `what` names its messages in
/// the assumption recorded when `per_hop` is left out. `error_feedback` says whether the caller
/// models error feedback for these messages; where it does not, the key is refused.
pub fn resolve(
    s: &Scenario,
    spec: Option<&CompressionSpec>,
    path: &str,
    what: &str,
    error_feedback: bool,
    assumptions: &mut Vec<String>,
) -> Result<Option<Compression>, ScenarioError> {
    let Some(z) = spec else {
        return Ok(None);
    };
    if z.error_feedback.is_some() && !error_feedback {
        return Err(s
            .error_at(
                &format!("{path}.error_feedback"),
                format!(
                    "error feedback is modelled for pipeline-parallel messages only, not {what}"
                ),
            )
            .with_help("set it in [compression.pipeline], or remove it here"));
    }
    if !(z.ratio.is_finite() && z.ratio >= 1.0) {
        return Err(s
            .error_at(
                &format!("{path}.ratio"),
                format!(
                    "a compression ratio is 1 or more (original over compressed bytes), not {}",
                    z.ratio
                ),
            )
            .with_help("e.g. ratio = 4.0 for a quarter of the bytes on the wire"));
    }
    for (rate, key) in [(z.compress.0, "compress"), (z.decompress.0, "decompress")] {
        if rate <= 0.0 {
            return Err(s.error_at(
                &format!("{path}.{key}"),
                format!("`{path}.{key}` must be a throughput above zero"),
            ));
        }
    }
    if z.per_hop.is_none() {
        assumptions.push(format!(
            "{what} compressed once before and decompressed once after each collective"
        ));
    }
    let per_hop = z.per_hop.unwrap_or(false);
    let overlap = z.overlap.unwrap_or(false);
    if overlap && !per_hop {
        return Err(s
            .error_at(
                &format!("{path}.overlap"),
                "overlap pipelines the decompression and recompression of every step with its transfer; compression once at the ends has no step to overlap",
            )
            .with_help("set per_hop = true, or remove overlap"));
    }
    if let Some(slice) = z.slice {
        if !overlap {
            return Err(s
                .error_at(
                    &format!("{path}.slice"),
                    "slice is the unit of the pipeline that overlap = true sets up; without overlap it has no meaning",
                )
                .with_help("set overlap = true, or remove slice"));
        }
        if slice.0 == 0 {
            return Err(s
                .error_at(
                    &format!("{path}.slice"),
                    "a pipelined slice is some bytes of payload, not 0",
                )
                .with_help("e.g. slice = \"1 MiB\" (NCCL's ring slice)"));
        }
    }
    let overlap_slice_bytes = overlap.then(|| {
        if z.slice.is_none() {
            assumptions.push(format!(
                "{what} decompressed and recompressed at every step in a pipeline with its transfer, in NCCL's 1 MiB slices"
            ));
        }
        z.slice.map_or(NCCL_SLICE_BYTES, |b| b.0) as f64
    });
    Ok(Some(Compression {
        ratio: z.ratio,
        compress_bytes_per_s: z.compress.0,
        decompress_bytes_per_s: z.decompress.0,
        per_hop,
        overlap_slice_bytes,
    }))
}
