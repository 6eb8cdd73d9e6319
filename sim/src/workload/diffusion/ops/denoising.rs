//! The denoising steps of one video on rank 0: each step's blocks over this GPU's share of the
//! tokens, run synchronously, patch by patch through the PipeFusion pipeline, or over this GPU's
//! region of the latent, with the collectives that join the shares.

use super::super::layout::{Dim, Layout};
use super::{BlockKind, Builder, Generation, Share, block};
use crate::collective::CollectiveOp;
use crate::exec::{OpId, OpKind};
use crate::model::dit::VideoDit;
use std::borrow::Cow;

/// Runs every denoising step, and the gather of the sequence-parallel latent after the last.
/// Returns the model FLOPs of the first step.
pub(super) fn denoise(b: &mut Builder, v: &Generation) -> f64 {
    let d = Denoising::new(v, b.layout);
    let mut step_flops = 0.0;
    for step in 0..v.steps {
        let flops_before = b.flops;
        d.step(b, step);
        if step == 0 {
            step_flops = b.flops - flops_before;
        }
    }
    if d.sp > 1 {
        b.blocking(
            "latent_all_gather",
            Dim::Ulysses,
            CollectiveOp::AllGather,
            d.latent_bytes(b),
        );
    }
    step_flops
}

/// What every denoising step of one video shares: its token counts and this GPU's blocks.
struct Denoising<'a> {
    v: &'a Generation<'a>,
    m: &'a VideoDit,
    layout: Layout,
    /// Branches one GPU runs (2 with guidance and no CFG parallelism).
    batch: u64,
    /// Sequence-parallel degree (Ulysses x Ring).
    sp: u64,
    /// Video tokens of the whole latent.
    video: u64,
    /// Text tokens that join the video's attention (none in cross-attention models).
    joint: u64,
    /// Latent tokens along frames, height and width.
    grid: [u64; 3],
    /// Factorised attention: (tokens a frame, frames).
    factorised: Option<(u64, u64)>,
    blocks: Vec<BlockKind>,
    /// PipeFusion patches (1 without PipeFusion).
    patches: u64,
}

impl<'a> Denoising<'a> {
    fn new(v: &'a Generation<'a>, layout: Layout) -> Self {
        let m = v.model;
        let branches = v.model.branches(v.guidance);
        let text = m.text_tokens as u64;
        let joint = match (m.dual_stream_blocks + m.single_stream_blocks) > 0 {
            true => text,
            false => 0,
        };
        let (tf, th, tw) = m.token_grid(v.video);
        Denoising {
            v,
            m,
            layout,
            batch: layout.branches_per_gpu(branches),
            sp: layout.sp() as u64,
            video: m.tokens(v.video),
            joint,
            grid: [tf, th, tw],
            factorised: m.factorised_attention.then_some((th * tw, tf)),
            blocks: stage_blocks(m, layout.pipefusion),
            patches: if layout.pipefusion > 1 {
                layout.patches as u64
            } else {
                1
            },
        }
    }

    /// This GPU's share of one block's tokens with the latent cut into `patches` patches.
    ///
    /// Sequence parallelism splits the video tokens only: every GPU of the Ulysses and Ring
    /// groups keeps the whole text and appends it to its queries before the all-to-all, so the
    /// text is projected on every GPU and attends `ulysses` times (HunyuanVideo's
    /// hyvideo/inference.py `parallelize_transformer` chunks only the latent;
    /// `parallel_attention` hands the text to xFuserLongContextAttention as joint tensors,
    /// `joint_strategy` "rear").
    fn share(&self, patches: u64) -> Share {
        let (video, joint, layout) = (self.video, self.joint, self.layout);
        let text = joint.div_ceil(patches);
        Share {
            batch: self.batch,
            video: video.div_ceil(self.sp * patches),
            text,
            queries: (video.div_ceil(self.sp * patches) + text) * layout.ulysses as u64,
            keys: (video + joint).div_ceil(layout.ring as u64),
        }
    }

    /// Bytes of one patch's activations, sent to the next PipeFusion stage.
    fn patch_bytes(&self, b: &Builder, patches: u64) -> f64 {
        (self.batch * self.video.div_ceil(self.sp * patches) * self.m.hidden as u64) as f64
            * b.act.bytes()
    }

    /// Bytes of the whole latent.
    fn latent_bytes(&self, b: &Builder) -> f64 {
        let m = self.m;
        let (f, hh, ww) = m.latent(self.v.video);
        (f as u64 * hh as u64 * ww as u64 * m.vae.latent_channels as u64) as f64 * b.act.bytes()
    }

    /// The projection of `n` tokens back to latent patches after the last block.
    fn final_layer(&self, b: &mut Builder, n: u64) {
        let m = self.m;
        let (pt, ph, pw) = m.patch;
        b.gemm(
            "final_layer",
            self.batch * n,
            (pt * ph * pw * m.vae.latent_channels) as u64,
            m.hidden as u64,
        );
    }

    /// Denoising step `step`, and the gather of the guidance branches' predictions.
    fn step(&self, b: &mut Builder, step: u32) {
        let layout = self.layout;
        let synchronous = layout.pipefusion == 1 || step < self.v.warmup_steps;
        if layout.latent > 1 {
            self.latent_step(b, step);
        } else if synchronous {
            self.synchronous_step(b);
        } else {
            self.pipelined_step(b, step);
        }
        if layout.cfg > 1 {
            // The branches' noise predictions meet to form the guided one.
            let m = self.m;
            let bytes = (self.video.div_ceil(self.sp)
                * (m.patch.0 * m.patch.1 * m.patch.2 * m.vae.latent_channels) as u64)
                as f64
                * b.act.bytes()
                * layout.cfg as f64;
            b.blocking("cfg_all_gather", Dim::Cfg, CollectiveOp::AllGather, bytes);
        }
    }

    /// A step of latent parallelism: the blocks over this GPU's region, then the gather of the
    /// regions' latents.
    fn latent_step(&self, b: &mut Builder, step: u32) {
        let layout = self.layout;
        // This step's region: the latent split along frames, height or width in turn (a
        // dimension too short for every GPU is passed over), with the overlap each side.
        let k = layout.latent as u64;
        let grid = self.grid;
        let splittable: Vec<usize> = (0..3).filter(|&d| grid[d] >= k).collect();
        let mut region = grid;
        if let Some(&d) = splittable.get(step as usize % splittable.len().max(1)) {
            region[d] = (grid[d].div_ceil(k) + 2 * layout.latent_overlap as u64).min(grid[d]);
        }
        let local = region[0] * region[1] * region[2];
        let sh = Share {
            batch: self.batch,
            video: local,
            text: self.joint,
            queries: local + self.joint,
            keys: local + self.joint,
        };
        let axis = self.factorised.map(|_| (region[1] * region[2], region[0]));
        for &kind in &self.blocks {
            block(b, self.m, kind, sh, axis);
        }
        self.final_layer(b, local);
        // The regions' denoised latents meet to form the whole one.
        let bytes = self.latent_bytes(b);
        b.blocking(
            "latent_all_gather",
            Dim::Latent,
            CollectiveOp::AllGather,
            bytes,
        );
    }

    /// A step on the whole latent; under PipeFusion (a warm-up step), then a wait for the rest
    /// of the pipeline.
    fn synchronous_step(&self, b: &mut Builder) {
        let p = self.layout.pipefusion;
        let stage_start = b.graph.ops.len();
        for &k in &self.blocks {
            block(b, self.m, k, self.share(1), self.factorised);
        }
        self.final_layer(b, self.share(1).video);
        if p > 1 {
            // The rest of the pipeline runs its stages on the whole latent after this one.
            let stage: f64 = b.graph.ops[stage_start..]
                .iter()
                .filter(|o| o.lane == b.compute)
                .map(|o| o.duration.as_secs_f64())
                .sum();
            let bytes = self.patch_bytes(b, 1);
            let hop = b.collective_seconds(Dim::Pipe, CollectiveOp::SendRecv, bytes);
            b.wait("pipefusion_wait", (p - 1) as f64 * (stage + hop) + hop);
        }
    }

    /// A pipelined PipeFusion step: the blocks patch by patch, each patch's activations sent to
    /// the next stage, and any wait for the pipeline to fill or for the first patch to come
    /// round.
    fn pipelined_step(&self, b: &mut Builder, step: u32) {
        let (p, patches) = (self.layout.pipefusion, self.patches);
        let mut patch_time = 0.0;
        for _ in 0..patches {
            let patch_start = b.graph.ops.len();
            for &k in &self.blocks {
                block(b, self.m, k, self.share(patches), self.factorised);
            }
            patch_time = b.graph.ops[patch_start..]
                .iter()
                .filter(|o| o.lane == b.compute)
                .map(|o| o.duration.as_secs_f64())
                .sum();
            let bytes = self.patch_bytes(b, patches);
            let s = b.collective_seconds(Dim::Pipe, CollectiveOp::SendRecv, bytes);
            let deps: Vec<OpId> = b.last.into_iter().collect();
            b.op(
                b.comm,
                (Cow::Borrowed("pipefusion_send"), OpKind::Communication),
                (s, 0.0, bytes),
                &deps,
            );
        }
        // The first pipelined step fills the pipeline; with fewer patches than stages every
        // step waits for its first patch to come round.
        let fill = if step == self.v.warmup_steps {
            (p - 1) as f64
        } else {
            0.0
        };
        let short = (p as f64 - patches as f64).max(0.0);
        if fill + short > 0.0 {
            b.wait("pipefusion_wait", (fill + short) * patch_time);
        }
    }
}

/// This GPU's blocks (its PipeFusion stage's share: the first stage's, the largest).
fn stage_blocks(m: &VideoDit, stages: u32) -> Vec<BlockKind> {
    let all: Vec<BlockKind> = std::iter::repeat_n(BlockKind::Dual, m.dual_stream_blocks as usize)
        .chain(std::iter::repeat_n(
            BlockKind::Single,
            m.single_stream_blocks as usize,
        ))
        .chain(std::iter::repeat_n(
            BlockKind::Cross,
            m.cross_attention_blocks as usize,
        ))
        .collect();
    let per = all.len().div_ceil(stages as usize);
    all.into_iter().take(per).collect()
}
