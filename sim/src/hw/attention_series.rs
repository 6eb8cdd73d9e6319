//! Measured fused-attention times: one table of a calibration profile (`[[attention]]`) and how
//! it prices an attention kernel.
//!
//! A table holds the times of one kind of call, (dtype, pass, causal, head_dim), over points of
//! (batch x heads, q_len, kv_len). Two regimes, limited by different things, are priced apart:
//! - **prefill** (`q_len > DECODE_MAX_Q`), tensor-core bound: each point gives an achieved FLOP/s
//!   (the roofline's FLOP count over the time) against the effective length `sqrt(q_len x
//!   kv_len)`, interpolated linearly in its logarithm, held at the ends; time = FLOPs / rate.
//! - **decode** (`q_len <= DECODE_MAX_Q`), bound by reading the KV cache: each point gives an
//!   achieved bandwidth over the bytes of q, k, v and the output, interpolated linearly in the
//!   logarithm of the bytes; time = bytes / bandwidth, never below the smallest point's time.
//!
//! A kernel takes the table of its dtype, pass and causality with the nearest head_dim (by ratio,
//! at most [`HEAD_DIM_MAX_RATIO`]); FLOPs and bytes are the kernel's own. Ignored: occupancy with
//! very few heads, grouped-query sharing of keys (bytes per query head) and sliding windows.

use super::dtype::Dtype;
use super::kernel::Kernel;
pub use super::kernel::Pass;
use serde::Deserialize;

/// Calls with at most this many queries per sequence are priced as decode (bandwidth-bound).
pub const DECODE_MAX_Q: u64 = 16;

/// How far (as a factor) the nearest measured head_dim may be from a kernel's.
pub const HEAD_DIM_MAX_RATIO: f64 = 2.0;

/// Measured times of one kind of fused-attention call.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionSeries {
    pub dtype: Dtype,
    pub pass: Pass,
    pub causal: bool,
    pub head_dim: u64,
    /// Independent heads of the call (batch x heads), one per point.
    pub batch_heads: Vec<u64>,
    /// Queries per sequence, one per point.
    pub q_len: Vec<u64>,
    /// Keys per sequence, one per point.
    pub kv_len: Vec<u64>,
    /// Seconds, one per point.
    pub time_s: Vec<f64>,
}

/// Bytes a fused attention call moves at least: q and the output, k and v, once each.
fn bytes(batch_heads: u64, q_len: u64, kv_len: u64, head_dim: u64, dtype: Dtype) -> f64 {
    (batch_heads * head_dim * (2 * q_len + 2 * kv_len)) as f64 * dtype.bytes()
}

fn is_decode(q_len: u64) -> bool {
    q_len <= DECODE_MAX_Q
}

/// Linear interpolation of `ys` in `ln x` over points sorted by x (ties averaged away by the
/// caller); held at the ends.
fn interpolate_ln(points: &[(f64, f64)], x: f64) -> f64 {
    let last = points.len() - 1;
    if x <= points[0].0 {
        return points[0].1;
    }
    if x >= points[last].0 {
        return points[last].1;
    }
    let i = points.partition_point(|p| p.0 <= x) - 1;
    let (x0, y0) = points[i];
    let (x1, y1) = points[i + 1];
    if x1 == x0 {
        return y0;
    }
    let f = (x.ln() - x0.ln()) / (x1.ln() - x0.ln());
    y0 + (y1 - y0) * f
}

impl AttentionSeries {
    fn kernel(&self, i: usize) -> Kernel {
        Kernel::Attention {
            batch_heads: self.batch_heads[i],
            q_len: self.q_len[i],
            kv_len: self.kv_len[i],
            head_dim: self.head_dim,
            causal: self.causal,
            backward: self.pass == Pass::Backward,
            dtype: self.dtype,
        }
    }

    /// Checks what serde cannot: lengths, positive sizes and times. `what` names the table.
    pub(crate) fn check(&self, what: &str) -> Result<(), String> {
        let n = self.time_s.len();
        if n == 0 {
            return Err(format!("{what}: no points"));
        }
        for (name, len) in [
            ("batch_heads", self.batch_heads.len()),
            ("q_len", self.q_len.len()),
            ("kv_len", self.kv_len.len()),
        ] {
            if len != n {
                return Err(format!(
                    "{what}: {len} values in `{name}` but {n} in `time_s`; they pair up one to one"
                ));
            }
        }
        if self.head_dim == 0 {
            return Err(format!("{what}: head_dim must be at least 1"));
        }
        for i in 0..n {
            if self.batch_heads[i] == 0 || self.q_len[i] == 0 || self.kv_len[i] == 0 {
                return Err(format!(
                    "{what}: point {} has a zero batch_heads, q_len or kv_len",
                    i + 1
                ));
            }
            let t = self.time_s[i];
            if !(t.is_finite() && t > 0.0) {
                return Err(format!(
                    "{what}: time_s[{i}] = {t} must be a positive number of seconds"
                ));
            }
        }
        if self.pass == Pass::Backward && self.q_len.iter().any(|&q| is_decode(q)) {
            return Err(format!(
                "{what}: a backward table with q_len <= {DECODE_MAX_Q} (decode has no backward)"
            ));
        }
        Ok(())
    }

    /// Number of points.
    pub fn points(&self) -> usize {
        self.time_s.len()
    }

    /// (x, y) of the points in the regime of `decode`, sorted by x, equal x merged by mean:
    /// prefill (effective length, FLOP/s), decode (bytes, bytes/s).
    fn curve(&self, decode: bool) -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = (0..self.points())
            .filter(|&i| is_decode(self.q_len[i]) == decode)
            .map(|i| {
                let (q, kv, t) = (self.q_len[i], self.kv_len[i], self.time_s[i]);
                if decode {
                    let b = bytes(self.batch_heads[i], q, kv, self.head_dim, self.dtype);
                    (b, b / t)
                } else {
                    (((q * kv) as f64).sqrt(), self.kernel(i).flops() / t)
                }
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64, u32)> = Vec::new();
        for (x, y) in pts {
            match merged.last_mut() {
                Some(last) if last.0 == x => {
                    last.1 += y;
                    last.2 += 1;
                }
                _ => merged.push((x, y, 1)),
            }
        }
        merged
            .into_iter()
            .map(|(x, y, n)| (x, y / n as f64))
            .collect()
    }

    /// Seconds of an attention call by this table's measurements, or None when the table has no
    /// points of the call's regime.
    pub fn seconds(&self, batch_heads: u64, q_len: u64, kv_len: u64, head_dim: u64) -> Option<f64> {
        let decode = is_decode(q_len);
        let curve = self.curve(decode);
        if curve.is_empty() {
            return None;
        }
        if decode {
            let b = bytes(batch_heads, q_len, kv_len, head_dim, self.dtype);
            if b <= curve[0].0 {
                return Some(curve[0].0 / curve[0].1);
            }
            Some(b / interpolate_ln(&curve, b))
        } else {
            let kernel = Kernel::Attention {
                batch_heads,
                q_len,
                kv_len,
                head_dim,
                causal: self.causal,
                backward: self.pass == Pass::Backward,
                dtype: self.dtype,
            };
            let x = ((q_len * kv_len) as f64).sqrt();
            Some(kernel.flops() / interpolate_ln(&curve, x))
        }
    }
}

/// Prices an attention kernel from `tables` (see the module docs), or None.
pub fn seconds(
    tables: &[AttentionSeries],
    dtype_ok: impl Fn(Dtype) -> bool,
    kernel: &Kernel,
) -> Option<f64> {
    let Kernel::Attention {
        batch_heads,
        q_len,
        kv_len,
        head_dim,
        causal,
        backward,
        ..
    } = *kernel
    else {
        return None;
    };
    let pass = Pass::of(backward);
    let ratio = |t: &AttentionSeries| {
        let r = t.head_dim as f64 / head_dim as f64;
        r.max(1.0 / r)
    };
    let nearest = tables
        .iter()
        .filter(|t| t.pass == pass && t.causal == causal && dtype_ok(t.dtype))
        .filter(|t| t.q_len.iter().any(|&q| is_decode(q) == is_decode(q_len)))
        .min_by(|a, b| {
            ratio(a)
                .total_cmp(&ratio(b))
                .then(a.head_dim.cmp(&b.head_dim))
        })?;
    if ratio(nearest) > HEAD_DIM_MAX_RATIO * (1.0 + 1e-12) {
        return None;
    }
    nearest.seconds(batch_heads, q_len, kv_len, head_dim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pass: Pass, causal: bool, head_dim: u64) -> AttentionSeries {
        // Prefill at 2k and 8k tokens (rates 200 and 300 TFLOP/s) and decode at two cache sizes.
        let mut t = AttentionSeries {
            dtype: Dtype::Bf16,
            pass,
            causal,
            head_dim,
            batch_heads: vec![256, 64],
            q_len: vec![2048, 8192],
            kv_len: vec![2048, 8192],
            time_s: vec![0.0, 0.0],
        };
        for (i, rate) in [(0, 200e12), (1, 300e12)] {
            t.time_s[i] = t.kernel(i).flops() / rate;
        }
        if pass == Pass::Forward {
            t.batch_heads.extend([32, 32]);
            t.q_len.extend([1, 1]);
            t.kv_len.extend([1024, 16384]);
            let b0 = bytes(32, 1, 1024, head_dim, Dtype::Bf16);
            let b1 = bytes(32, 1, 16384, head_dim, Dtype::Bf16);
            t.time_s.extend([b0 / 1e12, b1 / 3e12]);
        }
        t
    }

    fn attention(q_len: u64, kv_len: u64, head_dim: u64, backward: bool) -> Kernel {
        Kernel::Attention {
            batch_heads: 32,
            q_len,
            kv_len,
            head_dim,
            causal: true,
            backward,
            dtype: Dtype::Bf16,
        }
    }

    #[test]
    fn prefill_rate_is_interpolated_in_log_length_and_held_at_the_ends() {
        let tables = [
            table(Pass::Forward, true, 128),
            table(Pass::Backward, true, 128),
        ];
        let any = |_| true;
        let rate = |k: Kernel| k.flops() / seconds(&tables, any, &k).unwrap();
        // Exact at a measured length, whatever the batch.
        assert!((rate(attention(2048, 2048, 128, false)) / 200e12 - 1.0).abs() < 1e-9);
        // Half-way in ln between 2k and 8k (4k): half-way in rate.
        assert!((rate(attention(4096, 4096, 128, false)) / 250e12 - 1.0).abs() < 1e-9);
        // Held beyond the ends.
        assert!((rate(attention(512, 512, 128, false)) / 200e12 - 1.0).abs() < 1e-9);
        assert!((rate(attention(32768, 32768, 128, true)) / 300e12 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn decode_is_priced_by_bandwidth_with_a_floor() {
        let tables = [table(Pass::Forward, true, 128)];
        let k = |kv| Kernel::Attention {
            batch_heads: 32,
            q_len: 1,
            kv_len: kv,
            head_dim: 128,
            causal: true,
            backward: false,
            dtype: Dtype::Bf16,
        };
        let t_small = seconds(&tables, |_| true, &k(1024)).unwrap();
        let t_tiny = seconds(&tables, |_| true, &k(16)).unwrap();
        assert_eq!(t_small, t_tiny, "below the smallest size the time is kept");
        let big = seconds(&tables, |_| true, &k(16384)).unwrap();
        let b = bytes(32, 1, 16384, 128, Dtype::Bf16);
        assert!((big / (b / 3e12) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_nearest_head_dim_within_a_factor_two_else_nothing() {
        let tables = [
            table(Pass::Forward, true, 64),
            table(Pass::Forward, true, 128),
        ];
        let k96 = attention(2048, 2048, 96, false);
        // 96 is nearer 128 (ratio 1.33) than 64 (1.5): priced at 200 TFLOP/s on its own FLOPs.
        let t = seconds(&tables, |_| true, &k96).unwrap();
        assert!((k96.flops() / t / 200e12 - 1.0).abs() < 1e-9);
        assert!(seconds(&tables, |_| true, &attention(2048, 2048, 512, false)).is_none());
        // No backward table, no non-causal table, no acceptable dtype: nothing.
        assert!(seconds(&tables, |_| true, &attention(2048, 2048, 128, true)).is_none());
        assert!(seconds(&tables, |_| false, &k96).is_none());
    }

    #[test]
    fn checks_refuse_mismatched_lengths_and_backward_decode() {
        let mut t = table(Pass::Forward, true, 128);
        assert!(t.check("t").is_ok());
        t.kv_len.pop();
        assert!(t.check("t").unwrap_err().contains("pair up"));
        let mut b = table(Pass::Backward, true, 128);
        b.q_len[0] = 1;
        assert!(b.check("t").unwrap_err().contains("decode has no backward"));
    }
}
