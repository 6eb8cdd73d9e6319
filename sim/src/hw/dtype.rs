//! Numeric formats of weights, activations and arithmetic.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A numeric format as frameworks name it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Int4,
}

impl Dtype {
    pub const ALL: [Dtype; 7] = [
        Dtype::Fp32,
        Dtype::Tf32,
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Fp8,
        Dtype::Int8,
        Dtype::Int4,
    ];

    /// Bytes one element occupies in memory (TF32 is stored as FP32; INT4 packs two per byte).
    pub fn bytes(self) -> f64 {
        match self {
            Dtype::Fp32 | Dtype::Tf32 => 4.0,
            Dtype::Bf16 | Dtype::Fp16 => 2.0,
            Dtype::Fp8 | Dtype::Int8 => 1.0,
            Dtype::Int4 => 0.5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Int8 => "int8",
            Dtype::Int4 => "int4",
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
