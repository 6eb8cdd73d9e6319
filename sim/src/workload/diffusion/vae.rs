//! The VAE decoder's convolutions for one video: which run, at what size, how often (tiles too).
//!
//! The decoder (diffusers' `Decoder` and the causal 3-D decoders built like it) runs coarse to
//! fine: `conv_in` from the latent channels, a mid block of two residual blocks, each level's
//! residual blocks (two convolutions each, the first from the coarser level's channels, with a 1x1
//! shortcut), between levels an upsampler convolving at the finer resolution with the coarser
//! level's channels, and `conv_out` to RGB. A level sees the frames halved once per time-doubling
//! level above it (`Vae::time_doubling_levels`). Tiled decoding (`Vae::tiling`) decodes each
//! overlapping tile alone, overlaps twice; a causal tile of `t` latent frames gives
//! `(t - 1) * temporal + 1` frames. 3-D convolutions are priced at [`CONV3D_PEAK_FRACTION`] of the
//! GPU's dense peak, 2-D ones as GEMMs.
//!
//! Units: voxels (frames x height x width at a level), channels. Ignored: the mid block's
//! attention (under 1% of the arithmetic at 720p), the overlaps' blending, the 1x1
//! `post_quant_conv`. Sources: docs/DIFFUSION.md#what-is-modelled.

use crate::model::dit::{Video, VideoDit};
use std::collections::BTreeMap;

/// Fraction of the GPU's dense 16-bit peak that a video VAE decoder's 3 x 3 x 3 convolutions
/// sustain. From TAEHV's README (madebyollin/taehv): the full HunyuanVideo VAE decodes 61 frames
/// of 512 x 320 in "~2-3 s" in fp16 on a GH200 (an H100, 989 TFLOP/s dense). Decoded as diffusers
/// does by default (frame-wise, tiles of 4 + 1 latent frames every 3), that is 2.37e14 FLOPs of
/// convolution by [`convs`]: 79-118 TFLOP/s, 8-12% of peak (14% at 2.5 s had it also tiled
/// spatially, `enable_tiling`). The same fraction is used on every GPU and for every 3-D decoder:
/// it is an H100-class figure (docs/DIFFUSION.md: on an H20 it over-prices). It is also the
/// channels-first layout of 2024's code: decoders whose convolutions run channels-last reach
/// about twice that (docs/DIFFUSION.md, SGLang's decoder on an H200).
pub const CONV3D_PEAK_FRACTION: f64 = 0.10;

/// One kind of convolution of the decode: `count` convolutions over `voxels` output positions
/// each, `c_in` to `c_out` channels, with `taps` kernel taps (27 for 3 x 3 x 3, 9 for 3 x 3, 1 for
/// a 1 x 1 shortcut). Its arithmetic is `2 * voxels * c_in * taps * c_out * count` FLOPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv {
    pub voxels: u64,
    pub c_in: u64,
    pub c_out: u64,
    pub taps: u64,
    pub count: u64,
}

impl Conv {
    #[cfg(test)]
    pub fn flops(&self) -> f64 {
        2.0 * self.voxels as f64
            * self.c_in as f64
            * self.taps as f64
            * self.c_out as f64
            * self.count as f64
    }
}

/// The pieces the decoder runs on: (latent frames, latent height, latent width) of each distinct
/// tile shape and how many tiles have it. Without tiling, the whole latent once.
pub fn tiles(m: &VideoDit, v: Video) -> Vec<((u32, u32, u32), u64)> {
    let (f, h, w) = m.latent(v);
    let Some(t) = m.vae.tiling else {
        return vec![((f, h, w), 1)];
    };
    // Tile starts every `stride` from 0 while inside the latent; each tile `len` long, cut at
    // the end: the full tiles counted, then each shorter one at the end.
    let cut = |total: u32, len: u32, stride: u32| -> Vec<(u32, u64)> {
        if len == 0 || stride == 0 {
            return vec![(total, 1)];
        }
        let starts = total.div_ceil(stride) as u64;
        let full = total
            .checked_sub(len)
            .map_or(0, |room| (room / stride) as u64 + 1);
        let mut out: Vec<(u32, u64)> = Vec::new();
        if full > 0 {
            out.push((len, full));
        }
        out.extend((full..starts).map(|k| (total - (k * stride as u64) as u32, 1)));
        out
    };
    // Temporal tiling applies when the latent has more frames than a tile's `frames`
    // (`temporal_tiled_decode`); a tile is `frames + 1` latent frames long.
    let frames = if t.frames > 0 && f > t.frames {
        cut(f, t.frames + 1, t.frame_stride)
    } else {
        vec![(f, 1)]
    };
    let spatial = h > t.size || w > t.size;
    let (rows, cols) = if spatial {
        (cut(h, t.size, t.stride), cut(w, t.size, t.stride))
    } else {
        (vec![(h, 1)], vec![(w, 1)])
    };
    let mut shapes: BTreeMap<(u32, u32, u32), u64> = BTreeMap::new();
    for &(tf, nf) in &frames {
        for &(th, nh) in &rows {
            for &(tw, nw) in &cols {
                *shapes.entry((tf, th, tw)).or_default() += nf * nh * nw;
            }
        }
    }
    shapes.into_iter().collect()
}

/// The convolutions of decoding `v`, tiles included, grouped by shape.
pub fn convs(m: &VideoDit, v: Video) -> Vec<Conv> {
    let vae = &m.vae;
    let whole = m.latent(v);
    let mut out: BTreeMap<(u64, u64, u64, u64), u64> = BTreeMap::new();
    for ((tf, th, tw), n) in tiles(m, v) {
        // The pixels this piece decodes to: the whole video, or a tile of it.
        let piece = if (tf, th, tw) == whole {
            v
        } else {
            Video {
                frames: (tf.max(1) - 1) * vae.temporal + 1,
                height: th * vae.spatial,
                width: tw * vae.spatial,
            }
        };
        for c in piece_convs(m, piece) {
            *out.entry((c.voxels, c.c_in, c.c_out, c.taps)).or_default() += c.count * n;
        }
    }
    out.into_iter()
        .map(|((voxels, c_in, c_out, taps), count)| Conv {
            voxels,
            c_in,
            c_out,
            taps,
            count,
        })
        .collect()
}

/// Voxels of decoder level `l` (0: the finest, the video's resolution over `Vae::unpatchify`) for
/// a video of `v`'s size: height and width halved once a level, the frames halved once for every time-doubling level above it.
fn level_voxels(m: &VideoDit, v: Video, l: usize) -> u64 {
    let halvings = m
        .vae
        .time_doubling_levels
        .iter()
        .filter(|&&k| (k as usize) < l)
        .count();
    let frames = (v.frames as u64).div_ceil(1 << halvings);
    let p = m.vae.unpatchify.max(1) as u64;
    frames * ((v.height as u64 / p) >> l) * ((v.width as u64 / p) >> l)
}

/// The convolutions of decoding one piece of `v`'s size, without tiling.
fn piece_convs(m: &VideoDit, v: Video) -> Vec<Conv> {
    let vae = &m.vae;
    let ch = vae.decoder_channels;
    let levels = ch.len();
    let taps: u64 = if vae.conv3d { 27 } else { 9 };
    let conv = |l: usize, c_in: u32, c_out: u32, taps: u64, count: u64| Conv {
        voxels: level_voxels(m, v, l),
        c_in: c_in as u64,
        c_out: c_out as u64,
        taps,
        count,
    };
    let blocks = vae.blocks_per_level as u64;
    let top = levels - 1;
    let mut out = vec![
        // conv_in, and the mid block's two residual blocks at the coarsest level.
        conv(top, vae.latent_channels, ch[top], taps, 1),
        conv(top, ch[top], ch[top], taps, 4),
        // The coarsest level's residual blocks.
        conv(top, ch[top], ch[top], taps, 2 * blocks),
    ];
    for l in (0..top).rev() {
        let (coarse, fine) = (ch[l + 1], ch[l]);
        // The upsampler: interpolated to this level, convolved at the coarser channels.
        out.push(conv(l, coarse, coarse, taps, 1));
        // The first residual block changes the channels (with a 1 x 1 shortcut); the rest keep
        // them.
        if coarse != fine {
            out.push(conv(l, coarse, fine, taps, 1));
            out.push(conv(l, fine, fine, taps, 2 * blocks - 1));
            out.push(conv(l, coarse, fine, 1, 1));
        } else {
            out.push(conv(l, fine, fine, taps, 2 * blocks));
        }
    }
    let p = vae.unpatchify.max(1);
    out.push(conv(0, ch[0], 3 * p * p, taps, 1));
    out
}

/// The VAE decoder's levels, full resolution first, for sizing its activations: (channels, voxels,
/// convolutions at that resolution). Each level below the first halves height and width; a level
/// sees the frames halved once for every time-doubling level above it (a 2-D decoder: every frame).
pub fn levels(m: &VideoDit, v: Video) -> Vec<(u64, u64, u64)> {
    let vae = &m.vae;
    let levels = vae.decoder_channels.len();
    vae.decoder_channels
        .iter()
        .enumerate()
        .map(|(l, &c)| {
            let voxels = level_voxels(m, v, l);
            // Residual blocks (two convolutions each), and the upsampling convolution that
            // produces this level from the one below (none below the lowest).
            let convs = 2 * vae.blocks_per_level as u64 + u64::from(l + 1 < levels);
            (c as u64, voxels, convs)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::dit_preset;

    fn hunyuan_720p() -> (VideoDit, Video) {
        let m = dit_preset::find("hunyuanvideo").expect("a preset");
        let v = Video {
            width: 1280,
            height: 720,
            frames: 129,
        };
        (m, v)
    }

    #[test]
    fn hunyuan_720p_tiles_as_the_official_pipeline_cuts_them() {
        // Latent 33 x 90 x 160: temporal tiles of 17, 17, 9 latent frames (starts 0, 12, 24),
        // rows of 32, 32, 32, 18 (starts 0, 24, 48, 72), columns 6 x 32 and 16 (starts 0..=144).
        let (m, v) = hunyuan_720p();
        let t = tiles(&m, v);
        let count: u64 = t.iter().map(|&(_, n)| n).sum();
        assert_eq!(count, 3 * 4 * 7);
        let latent_voxels: u64 = t.iter().map(|&((f, h, w), n)| (f * h * w) as u64 * n).sum();
        // (17 + 17 + 9) x (3 x 32 + 18) x (6 x 32 + 16) against 33 x 90 x 160.
        assert_eq!(latent_voxels, 43 * 114 * 208);
        let overlap = latent_voxels as f64 / (33.0 * 90.0 * 160.0);
        assert!((overlap - 2.14).abs() < 0.01, "{overlap}");
    }

    #[test]
    fn taehv_reference_decode_is_2_to_3_seconds_on_an_h100() {
        // The reference of `CONV3D_PEAK_FRACTION`: 61 frames of 512 x 320, frame-wise tiles of
        // 4 + 1 latent frames every 3 and no spatial tiles (diffusers' defaults).
        let (mut m, _) = hunyuan_720p();
        m.vae.tiling = Some(crate::model::dit::VaeTiling {
            size: u32::MAX,
            stride: u32::MAX,
            frames: 4,
            frame_stride: 3,
        });
        let v = Video {
            width: 512,
            height: 320,
            frames: 61,
        };
        let flops: f64 = convs(&m, v).iter().map(Conv::flops).sum();
        assert!((2.3e14..2.45e14).contains(&flops), "{flops:e}");
        let seconds = flops / (989e12 * CONV3D_PEAK_FRACTION);
        assert!((2.0..=3.0).contains(&seconds), "{seconds}");
    }

    #[test]
    fn hunyuan_decoder_arithmetic_untiled() {
        // Untiled 720p x 129 frames: about 2.0e15 FLOPs (the full-resolution level's six 128-
        // channel convolutions, its 256-channel upsampler and first conv dominate).
        let (mut m, v) = hunyuan_720p();
        m.vae.tiling = None;
        let flops: f64 = convs(&m, v).iter().map(Conv::flops).sum();
        assert!((1.8e15..2.3e15).contains(&flops), "{flops:e}");
    }
}
