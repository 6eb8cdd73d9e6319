//! What a mixture-of-experts config says of its experts beyond their count: routing, shared
//! experts, the experts' width and which layers are dense.

use super::{Reader, TOP_K};
use crate::key_error::KeyError;

/// What a mixture-of-experts config says of its experts beyond their count.
#[derive(Default)]
pub(super) struct Experts {
    pub(super) top_k: Option<u32>,
    pub(super) shared: Option<u32>,
    pub(super) expert_ffn: Option<u32>,
    pub(super) dense_layers: Option<u32>,
}

impl Experts {
    /// Reads the routing, the shared experts, the experts' width (the MLP's `ffn` when not
    /// given) and, of `layers`, how many are dense.
    pub(super) fn read(
        r: &Reader,
        layers: Option<u32>,
        ffn: Option<u32>,
        notes: &mut Vec<String>,
    ) -> Result<Self, KeyError> {
        let top_k = r.uint(TOP_K)?;
        let expert_ffn = r.uint(&["moe_intermediate_size"])?.or(ffn);
        let shared = match r.uint(&["n_shared_experts"])? {
            Some(n) => Some(n),
            None => match (r.uint(&["shared_expert_intermediate_size"])?, expert_ffn) {
                (Some(0), _) | (None, _) => Some(0),
                (Some(width), Some(e)) if e > 0 && width.is_multiple_of(e) => Some(width / e),
                (Some(width), Some(e)) if e > 0 => {
                    let n = (width as f64 / e as f64).round().max(1.0) as u32;
                    notes.push(format!(
                        "{}: shared_expert_intermediate_size = {width} taken as {n} shared \
                         experts of width {e}",
                        r.file
                    ));
                    Some(n)
                }
                _ => Some(0),
            },
        };
        let dense_layers = match layers {
            Some(layers) => Some(dense_layers(r, layers, notes)?),
            None => None,
        };
        if let Some(k) = r.uint(&["num_nextn_predict_layers"])?.filter(|k| *k > 0) {
            notes.push(format!(
                "{}: {k} multi-token-prediction layer(s) (num_nextn_predict_layers) not \
                 modelled",
                r.file
            ));
        }
        Ok(Experts {
            top_k,
            shared,
            expert_ffn,
            dense_layers,
        })
    }
}

/// How many of `layers` have a dense MLP rather than experts, from the config's sparse-layer
/// pattern; dense layers not all at the start are noted.
fn dense_layers(r: &Reader, layers: u32, notes: &mut Vec<String>) -> Result<u32, KeyError> {
    let first_dense = r.uint(&["first_k_dense_replace"])?.unwrap_or(0);
    let freq = r.uint(&["moe_layer_freq"])?.filter(|f| *f > 0).unwrap_or(1);
    let step = r
        .uint(&["decoder_sparse_step"])?
        .filter(|s| *s > 0)
        .unwrap_or(1);
    let mlp_only = r.indices("mlp_only_layers")?;
    let sparse = |i: u32| {
        i >= first_dense
            && i.is_multiple_of(freq)
            && (i + 1).is_multiple_of(step)
            && !mlp_only.contains(&i)
    };
    let dense: Vec<u32> = (0..layers).filter(|i| !sparse(*i)).collect();
    let n = dense.len() as u32;
    if dense.iter().enumerate().any(|(at, i)| *i != at as u32) {
        notes.push(format!(
            "{}: its {n} dense layers are not all at the start; modelled as the first {n}",
            r.file
        ));
    }
    Ok(n)
}
