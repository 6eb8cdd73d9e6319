//! `[model]`: a preset by name, or the shape written out (explicit keys override a preset's).

use crate::hw::Dtype;
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub preset: Option<String>,
    pub layers: Option<u32>,
    pub hidden: Option<u32>,
    pub heads: Option<u32>,
    pub kv_heads: Option<u32>,
    pub ffn: Option<u32>,
    pub gated: Option<bool>,
    pub vocab: Option<u32>,
    pub seq_len: Option<u32>,
    pub tied_embeddings: Option<bool>,
    pub dtype: Option<Dtype>,
}
