//! The natural logarithm and e^x with basic IEEE arithmetic only (fdlibm's e_log.c and e_exp.c,
//! error < 1 ulp), not the platform's math library, so the random variates built on them are the
//! same, bit for bit, on every machine.

const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);

fn hi_word(x: f64) -> i32 {
    (x.to_bits() >> 32) as i32
}

fn with_hi_word(x: f64, hi: i32) -> f64 {
    f64::from_bits(((hi as u32 as u64) << 32) | (x.to_bits() & 0xffff_ffff))
}

/// Natural logarithm.
pub(crate) fn ln(x: f64) -> f64 {
    const TWO54: f64 = f64::from_bits(0x4350_0000_0000_0000);
    const LG1: f64 = f64::from_bits(0x3fe5_5555_5555_5593);
    const LG2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04);
    const LG3: f64 = f64::from_bits(0x3fd2_4924_9422_9359);
    const LG4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af);
    const LG5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de);
    const LG6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f);
    const LG7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244);

    let mut x = x;
    let mut hx = hi_word(x);
    let lx = x.to_bits() as u32;
    let mut k: i32 = 0;
    if hx < 0x0010_0000 {
        if ((hx & 0x7fff_ffff) as u32 | lx) == 0 {
            return f64::NEG_INFINITY;
        }
        if hx < 0 {
            return f64::NAN;
        }
        // Subnormal: scale up.
        k -= 54;
        x *= TWO54;
        hx = hi_word(x);
    }
    if hx >= 0x7ff0_0000 {
        return x + x;
    }
    k += (hx >> 20) - 1023;
    hx &= 0x000f_ffff;
    let i = (hx + 0x95f64) & 0x10_0000;
    x = with_hi_word(x, hx | (i ^ 0x3ff0_0000)); // normalize x or x/2
    k += i >> 20;
    let f = x - 1.0;
    let dk = k as f64;
    if (0x000f_ffff & (2 + hx)) < 3 {
        // |f| < 2^-20
        if f == 0.0 {
            return dk * LN2_HI + dk * LN2_LO;
        }
        let r = f * f * (0.5 - 0.333_333_333_333_333_3 * f);
        return if k == 0 {
            f - r
        } else {
            dk * LN2_HI - ((r - dk * LN2_LO) - f)
        };
    }
    let s = f / (2.0 + f);
    let z = s * s;
    let mut i = hx - 0x6147a;
    let w = z * z;
    let j = 0x6b851 - hx;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    i |= j;
    let r = t2 + t1;
    if i > 0 {
        let hfsq = 0.5 * f * f;
        if k == 0 {
            f - (hfsq - s * (hfsq + r))
        } else {
            dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f)
        }
    } else if k == 0 {
        f - s * (f - r)
    } else {
        dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f)
    }
}

/// e^x.
pub(crate) fn exp(x: f64) -> f64 {
    const O_THRESHOLD: f64 = f64::from_bits(0x4086_2e42_fefa_39ef);
    const U_THRESHOLD: f64 = f64::from_bits(0xc087_4910_d52d_3051);
    const INV_LN2: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
    const TWO_M1000: f64 = f64::from_bits(0x0170_0000_0000_0000);
    const P1: f64 = f64::from_bits(0x3fc5_5555_5555_553e);
    const P2: f64 = f64::from_bits(0xbf66_c16c_16be_bd93);
    const P3: f64 = f64::from_bits(0x3f11_566a_af25_de2c);
    const P4: f64 = f64::from_bits(0xbebb_bd41_c5d2_6bf1);
    const P5: f64 = f64::from_bits(0x3e66_3769_72be_a4d0);

    let bits_hi = hi_word(x);
    let negative = bits_hi < 0;
    let hx = bits_hi & 0x7fff_ffff;
    if hx >= 0x4086_2e42 {
        // |x| >= 709.78...
        if hx >= 0x7ff0_0000 {
            if x.is_nan() {
                return x + x;
            }
            return if negative { 0.0 } else { x };
        }
        if x > O_THRESHOLD {
            return f64::INFINITY;
        }
        if x < U_THRESHOLD {
            return 0.0;
        }
    }
    let (hi, lo, k): (f64, f64, i32);
    let mut x = x;
    if hx > 0x3fd6_2e42 {
        // |x| > 0.5 ln2: reduce.
        if hx < 0x3ff0_a2b2 {
            // and |x| < 1.5 ln2
            if negative {
                (hi, lo, k) = (x + LN2_HI, -LN2_LO, -1);
            } else {
                (hi, lo, k) = (x - LN2_HI, LN2_LO, 1);
            }
        } else {
            let kk = (INV_LN2 * x + if negative { -0.5 } else { 0.5 }) as i32;
            let t = kk as f64;
            (hi, lo, k) = (x - t * LN2_HI, t * LN2_LO, kk);
        }
        x = hi - lo;
    } else if hx < 0x3e30_0000 {
        // |x| < 2^-28
        return 1.0 + x;
    } else {
        (hi, lo, k) = (0.0, 0.0, 0);
    }
    let t = x * x;
    let c = x - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    if k == 0 {
        return 1.0 - ((x * c) / (c - 2.0) - x);
    }
    let y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
    if k >= -1021 {
        with_hi_word(y, hi_word(y).wrapping_add(k << 20))
    } else {
        with_hi_word(y, hi_word(y).wrapping_add((k + 1000) << 20)) * TWO_M1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RngStreams;
    use rand::RngExt;

    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn ln_and_exp_agree_with_std_to_an_ulp() {
        let mut rng = RngStreams::new(7).stream("math");
        for _ in 0..200_000 {
            // Magnitudes from 1e-300 to 1e300, and the unit interval densely.
            let e = rng.random_range(-300.0..300.0);
            let x: f64 = 10f64.powf(e) * rng.random::<f64>().max(1e-3);
            assert!(
                ulps(ln(x), x.ln()) <= 1,
                "ln({x}) = {} vs {}",
                ln(x),
                x.ln()
            );
            let u = rng.random::<f64>();
            if u > 0.0 {
                assert!(ulps(ln(u), u.ln()) <= 1, "ln({u})");
            }
            let y = rng.random_range(-745.0..709.0);
            assert!(
                ulps(exp(y), y.exp()) <= 1,
                "exp({y}) = {} vs {}",
                exp(y),
                y.exp()
            );
            let small = rng.random_range(-2.0..2.0);
            assert!(ulps(exp(small), small.exp()) <= 1, "exp({small})");
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
        assert_eq!(ln(f64::MIN_POSITIVE / 4.0), (f64::MIN_POSITIVE / 4.0).ln());
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(1000.0), f64::INFINITY);
        assert!(ulps(exp(-740.0), (-740f64).exp()) <= 1, "subnormal result");
    }
}
