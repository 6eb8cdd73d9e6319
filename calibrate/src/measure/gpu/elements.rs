//! The random data the GEMMs run on: elements of each format with magnitudes of real
//! activations and weights (never zero, NaN, infinite or subnormal, which would change the
//! kernels' speed), and the bytes an element takes.

use clustersim::hw::Dtype;

/// `bytes` of random elements of `dtype` with magnitudes from 2^-8 to just under 1 and random
/// signs (xorshift64*, seeded): never NaN, infinite or subnormal.
pub fn random_elements(dtype: Dtype, bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut next = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut out = Vec::with_capacity(bytes);
    while out.len() < bytes {
        let r = next();
        let sign = r >> 63;
        // Exponent offset 0..=7 below the bias: 2^-8 ..= 2^-1 times 1.mantissa.
        let e = (r >> 60) & 7;
        match dtype {
            Dtype::Fp8 => {
                // e4m3, bias 7: exponents 1..=6 (2^-6 to just under 1).
                let exp = 1 + (r >> 56) % 6;
                out.push(((sign << 7) | (exp << 3) | (r & 7)) as u8);
            }
            Dtype::Bf16 => {
                let bits = (sign << 15) | ((127 - 8 + e) << 7) | (r & 0x7f);
                out.extend_from_slice(&(bits as u16).to_le_bytes());
            }
            Dtype::Fp16 => {
                let bits = (sign << 15) | ((15 - 8 + e) << 10) | (r & 0x3ff);
                out.extend_from_slice(&(bits as u16).to_le_bytes());
            }
            _ => {
                let bits = (sign << 31) | ((127 - 8 + e) << 23) | (r & 0x7f_ffff);
                out.extend_from_slice(&(bits as u32).to_le_bytes());
            }
        }
    }
    out.truncate(bytes);
    out
}

/// Bytes per element as stored (tf32 is stored as fp32).
pub(super) fn element_bytes(dtype: Dtype) -> u64 {
    match dtype {
        Dtype::Fp8 | Dtype::Int8 => 1,
        Dtype::Bf16 | Dtype::Fp16 => 2,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16(bits: u16) -> f32 {
        f32::from_bits(u32::from(bits) << 16)
    }

    fn fp16(bits: u16) -> f32 {
        let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
        let exp = i32::from((bits >> 10) & 0x1f);
        let mant = f32::from(bits & 0x3ff) / 1024.0;
        assert!(exp != 0 && exp != 31, "subnormal, inf or NaN: {bits:#x}");
        sign * (1.0 + mant) * 2f32.powi(exp - 15)
    }

    fn e4m3(bits: u8) -> f32 {
        let sign = if bits >> 7 == 1 { -1.0 } else { 1.0 };
        let exp = i32::from((bits >> 3) & 0xf);
        let mant = f32::from(bits & 7) / 8.0;
        assert!(
            exp != 0 && !(exp == 15 && bits & 7 == 7),
            "subnormal or NaN: {bits:#x}"
        );
        sign * (1.0 + mant) * 2f32.powi(exp - 7)
    }

    fn check(values: &[f32], lo: f32) {
        assert!(
            values
                .iter()
                .all(|v| v.is_finite() && v.abs() >= lo && v.abs() < 1.0)
        );
        let negative = values.iter().filter(|v| **v < 0.0).count();
        assert!(negative > values.len() / 3 && negative < 2 * values.len() / 3);
        let mut distinct = values.to_vec();
        distinct.sort_by(f32::total_cmp);
        distinct.dedup();
        // e4m3 has 96 values in this range; the wider formats have thousands.
        assert!(distinct.len() >= 64, "{}", distinct.len());
    }

    #[test]
    fn random_elements_are_finite_normal_and_varied() {
        let n = 4096;
        let b = random_elements(Dtype::Bf16, 2 * n, 1);
        let v: Vec<f32> = b
            .chunks(2)
            .map(|c| bf16(u16::from_le_bytes([c[0], c[1]])))
            .collect();
        check(&v, 2f32.powi(-8));
        let h = random_elements(Dtype::Fp16, 2 * n, 2);
        let v: Vec<f32> = h
            .chunks(2)
            .map(|c| fp16(u16::from_le_bytes([c[0], c[1]])))
            .collect();
        check(&v, 2f32.powi(-8));
        let f = random_elements(Dtype::Tf32, 4 * n, 3);
        let v: Vec<f32> = f
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        check(&v, 2f32.powi(-8));
        let e = random_elements(Dtype::Fp8, n, 4);
        let v: Vec<f32> = e.iter().map(|&b| e4m3(b)).collect();
        check(&v, 2f32.powi(-6));
        // Odd sizes are cut, seeds are reproducible.
        assert_eq!(random_elements(Dtype::Tf32, 7, 9).len(), 7);
        assert_eq!(
            random_elements(Dtype::Bf16, 64, 9),
            random_elements(Dtype::Bf16, 64, 9)
        );
        assert_ne!(
            random_elements(Dtype::Bf16, 64, 9),
            random_elements(Dtype::Bf16, 64, 10)
        );
    }
}
