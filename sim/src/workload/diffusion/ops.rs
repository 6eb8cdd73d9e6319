//! The operations of one video on one GPU (rank 0 of `layout`), as a dependency graph on a compute
//! stream and a communication stream: the text encoders, every denoising step's blocks with their
//! collectives, the offloading pipeline's copies of weights over PCIe, and the VAE decoder (its
//! convolutions from `vae`, the 3-D ones at `vae::CONV3D_PEAK_FRACTION` of the GPU's peak).
//!
//! A block, per stream of tokens: QKV, the queries' and keys' norm and rotation (`qk_norm`,
//! `rope`, priced as streaming kernels), fused attention, the output projection, the MLP, norms,
//! modulations and residual adds, plus each parallelism's communication: Ulysses' all-to-alls
//! (with reorder copies) around the attention, Ring's chunk sends overlapping it, tp's all-reduces
//! after the output projection and the MLP, DSP's all-to-alls around a temporal block,
//! PipeFusion's patch sends, latent parallelism's all-gather at the end of a step.
//!
//! Units: seconds, bytes, FLOPs. Ignored: timestep embeddings, the scheduler's update of the
//! latent, CUDA launch gaps between blocks, the norms of the cross-attention's queries and keys.
//! In full: docs/DIFFUSION.md#what-is-modelled.

mod denoising;

use super::layout::{Dim, Layout};
use crate::collective::cost::{Collective, Options, cost};
use crate::collective::{Algorithm, CollectiveOp, Group};
use crate::engine::SimTime;
use crate::exec::{Graph, LaneId, LaneUse, Op, OpId, OpKind};
use crate::hw::{ComputeModel, Dtype, ElementwiseOp, Kernel};
use crate::model::dit::{Video, VideoDit};
use crate::net::Topology;
use crate::net::tier::Tier;
use std::borrow::Cow;
use std::collections::HashMap;

/// The network a video's GPUs sit on.
pub struct Network {
    pub topology: Topology,
    pub tier: Tier,
    pub nvls: bool,
}

/// Where each part of the video's operations lies in the graph (ranges of op ids).
#[derive(Clone, Debug, Default)]
pub struct Parts {
    pub text_encode: std::ops::Range<usize>,
    pub denoise: std::ops::Range<usize>,
    pub vae: std::ops::Range<usize>,
    /// The copies of weights between host memory and the GPU.
    pub offload: Vec<usize>,
    /// Model FLOPs of one denoising step on this GPU.
    pub step_flops: f64,
}

/// One video to generate: the model, its size, the steps and the options that shape the work.
pub struct Generation<'a> {
    pub model: &'a VideoDit,
    pub video: Video,
    pub steps: u32,
    pub guidance: bool,
    pub warmup_steps: u32,
    pub vae_parallel: bool,
    /// Weights the pipeline's offload moves over PCIe, by where they fall.
    pub moves: super::memory::Moves,
}

struct Builder<'a> {
    graph: Graph,
    compute: LaneId,
    comm: LaneId,
    /// The last operation of the compute stream's chain.
    last: Option<OpId>,
    model: &'a ComputeModel,
    net: &'a Network,
    layout: Layout,
    act: Dtype,
    priced: HashMap<(Dim, CollectiveOp, u64), f64>,
    flops: f64,
    /// Operations the next one on the compute stream's chain also waits for.
    pending: Vec<OpId>,
}

impl Builder<'_> {
    fn op(
        &mut self,
        lane: LaneId,
        op: (Cow<'static, str>, OpKind),
        cost: (f64, f64, f64),
        deps: &[OpId],
    ) -> OpId {
        let (seconds, flops, bytes) = cost;
        self.graph.add(
            Op {
                name: op.0,
                lane,
                kind: op.1,
                duration: SimTime::from_secs_f64(seconds),
                flops,
                bytes,
                tier: if op.1 == OpKind::Communication {
                    self.net.tier.name()
                } else {
                    "roofline"
                },
                layer: None,
                micro_batch: None,
                model_flops: op.1 == OpKind::Compute,
                chain: None,
            },
            deps,
        )
    }

    /// What the next operation of the chain waits for: the last one, and any pending.
    fn chain(&mut self) -> Vec<OpId> {
        let mut deps: Vec<OpId> = self.last.into_iter().collect();
        deps.append(&mut self.pending);
        deps
    }

    /// A kernel on the compute stream after everything before it there.
    fn kernel(&mut self, name: &'static str, k: Kernel) -> OpId {
        let c = self
            .model
            .cost(&k)
            .expect("the set-up checked that the GPU computes in the model's format");
        self.flops += c.flops;
        let deps = self.chain();
        let kind = match k {
            Kernel::Memory { .. } | Kernel::Elementwise { .. } => OpKind::Memory,
            _ => OpKind::Compute,
        };
        let id = self.op(
            self.compute,
            (Cow::Borrowed(name), kind),
            (c.seconds, c.flops, c.bytes),
            &deps,
        );
        self.last = Some(id);
        id
    }

    /// A 3-D convolution, as the implicit GEMM `k` stands for, at
    /// [`super::vae::CONV3D_PEAK_FRACTION`] of the GPU's dense peak (never faster than the GEMM).
    fn conv3d(&mut self, k: Kernel) -> OpId {
        let c = self
            .model
            .cost(&k)
            .expect("the set-up checked that the GPU computes in the model's format");
        let peak = self.model.gpu.peak_flops(self.act).unwrap_or(0.0);
        let seconds = if peak > 0.0 {
            c.seconds
                .max(c.flops / (peak * super::vae::CONV3D_PEAK_FRACTION))
        } else {
            c.seconds
        };
        self.flops += c.flops;
        let deps = self.chain();
        let id = self.op(
            self.compute,
            (Cow::Borrowed("vae_conv3d"), OpKind::Compute),
            (seconds, c.flops, c.bytes),
            &deps,
        );
        self.last = Some(id);
        id
    }

    /// `bytes` of weights copied between host memory and the GPU over its PCIe link, on the
    /// compute stream (the pipelines copy synchronously); nothing when there are none.
    fn host_copy(&mut self, name: &'static str, bytes: f64, parts: &mut Parts) {
        if bytes <= 0.0 {
            return;
        }
        let seconds = self.net.topology.host_copy_seconds(bytes);
        let deps = self.chain();
        let id = self.op(
            self.compute,
            (Cow::Borrowed(name), OpKind::Memory),
            (seconds, 0.0, bytes),
            &deps,
        );
        self.last = Some(id);
        parts.offload.push(id as usize);
    }

    fn gemm(&mut self, name: &'static str, m: u64, n: u64, k: u64) -> OpId {
        self.kernel(
            name,
            Kernel::Gemm {
                m,
                n,
                k,
                batch: 1,
                dtype: self.act,
            },
        )
    }

    fn elementwise(&mut self, name: &'static str, op: ElementwiseOp, elements: u64, passes: f64) {
        self.kernel(
            name,
            Kernel::Elementwise {
                op,
                backward: false,
                bytes: elements as f64 * self.act.bytes() * passes,
                flops: 4.0 * elements as f64,
            },
        );
    }

    fn attention(
        &mut self,
        name: &'static str,
        batch_heads: u64,
        q: u64,
        kv: u64,
        head_dim: u64,
    ) -> OpId {
        self.kernel(
            name,
            Kernel::Attention {
                batch_heads,
                q_len: q,
                kv_len: kv,
                head_dim,
                causal: false,
                backward: false,
                dtype: self.act,
            },
        )
    }

    fn collective_seconds(&mut self, dim: Dim, op: CollectiveOp, bytes: f64) -> f64 {
        let key = (dim, op, bytes.to_bits());
        if let Some(&s) = self.priced.get(&key) {
            return s;
        }
        let ranks = match (dim, op) {
            (_, CollectiveOp::SendRecv) => self.layout.group(dim)[..2].to_vec(),
            _ => self.layout.group(dim),
        };
        let c = Collective {
            op,
            algorithm: Algorithm::Auto,
            group: Group::new(ranks, self.net.topology.gpus_per_node),
            bytes,
            compression: None,
        };
        let mut options = Options::new(self.net.tier);
        options.nvls_available = self.net.nvls;
        let s = cost(&self.net.topology, &c, &options)
            .expect("a video's groups are ranks of its cluster")
            .seconds;
        self.priced.insert(key, s);
        s
    }

    /// A collective the compute stream waits for.
    fn blocking(&mut self, name: &'static str, dim: Dim, op: CollectiveOp, bytes: f64) {
        let s = self.collective_seconds(dim, op, bytes);
        let deps = self.chain();
        let id = self.op(
            self.comm,
            (Cow::Borrowed(name), OpKind::Communication),
            (s, 0.0, bytes),
            &deps,
        );
        self.last = Some(id);
    }

    /// An idle wait of the compute stream (other pipeline stages at work).
    fn wait(&mut self, name: &'static str, seconds: f64) {
        let deps = self.chain();
        let id = self.op(
            self.comm,
            (Cow::Borrowed(name), OpKind::Communication),
            (seconds, 0.0, 0.0),
            &deps,
        );
        self.last = Some(id);
    }
}

/// Token counts of one block's work on this GPU.
#[derive(Clone, Copy)]
struct Share {
    /// Branches (1, or 2 with guidance and no CFG parallelism).
    batch: u64,
    /// Video tokens this GPU projects (its sequence share, of its patch).
    video: u64,
    /// Text tokens this GPU projects in joint attention (whole on every GPU of its sequence
    /// group).
    text: u64,
    /// Query and key lengths of its attention after the Ulysses exchange (per ring chunk for
    /// keys).
    queries: u64,
    keys: u64,
}

fn self_attention(
    b: &mut Builder,
    m: &VideoDit,
    s: Share,
    streams: &[u64],
    axis: Option<Attention3>,
) {
    let l = b.layout;
    let (t, u) = (l.tp as u64, l.ulysses as u64);
    let a = m.attention_width();
    let h = m.hidden as u64;
    let tokens: u64 = streams.iter().sum();
    for &n in streams {
        b.gemm("qkv", s.batch * n, 3 * a / t, h);
    }
    // Queries and keys normalised per head, the video tokens' rotated, on this GPU's tokens
    // before any exchange: streaming passes of the bytes the model's code moves.
    let per_head_elements = |n: u64| (2 * s.batch * n * a / t) as f64;
    let rotated = match axis {
        Some(Attention3::Spatial(..)) => 0,
        _ => s.video,
    };
    let qk_bytes = per_head_elements(tokens) * m.qk_norm.bytes_per_element()
        + per_head_elements(rotated) * m.rope.bytes_per_element();
    if qk_bytes > 0.0 {
        b.kernel(
            "qk_norm_rope",
            Kernel::Memory {
                bytes: qk_bytes,
                flops: 0.0,
            },
        );
    }
    let act = b.act.bytes();
    let bytes = |width: u64| (s.batch * tokens * width / t) as f64 * act;
    // An all-to-all of heads for tokens sends from a buffer ordered by destination and leaves one
    // ordered by source: a copy of the tensor before and one after (yunchang's `all_to_all_4D`,
    // `transpose(...).contiguous()` on either side), each reading and writing it.
    let layout = |b: &mut Builder, width: u64| {
        b.kernel(
            "ulysses_layout_copies",
            Kernel::Memory {
                bytes: 4.0 * bytes(width),
                flops: 0.0,
            },
        );
    };
    if u > 1 {
        layout(b, 3 * a);
        b.blocking(
            "ulysses_all_to_all_qkv",
            Dim::Ulysses,
            CollectiveOp::AllToAll,
            bytes(3 * a),
        );
    }
    let heads = (m.heads as u64 / (t * u)).max(1);
    let hd = m.head_dim as u64;
    // With DSP each GPU holds whole frames for spatial attention and whole time lines for
    // temporal attention: its share of the frames, or of the positions.
    let dsp = l.dsp as u64;
    match axis {
        Some(Attention3::Spatial(per_frame, frames)) => {
            b.attention(
                "spatial_attention",
                s.batch * heads * frames.div_ceil(dsp),
                per_frame,
                per_frame,
                hd,
            );
        }
        Some(Attention3::Temporal(per_frame, frames)) => {
            b.attention(
                "temporal_attention",
                s.batch * heads * per_frame.div_ceil(dsp),
                frames,
                frames,
                hd,
            );
        }
        None if l.ring > 1 => {
            // Keys and values pass around the ring, chunk by chunk: chunk i + 1 arrives with a
            // send that overlaps the attention over chunk i.
            let kv_bytes = (2 * s.batch * heads * s.keys * hd) as f64 * b.act.bytes();
            let send = b.collective_seconds(Dim::Ring, CollectiveOp::SendRecv, kv_bytes);
            let mut arriving: Option<OpId> = None;
            for i in 0..l.ring {
                let ready = arriving.take();
                if i + 1 < l.ring {
                    let deps: Vec<OpId> = ready.or(b.last).into_iter().collect();
                    let name = (Cow::Borrowed("ring_kv_send"), OpKind::Communication);
                    arriving = Some(b.op(b.comm, name, (send, 0.0, kv_bytes), &deps));
                }
                b.pending.extend(ready);
                b.attention("attention", s.batch * heads, s.queries, s.keys, hd);
            }
        }
        None => {
            b.attention("attention", s.batch * heads, s.queries, s.keys, hd);
        }
    }
    if u > 1 {
        b.blocking(
            "ulysses_all_to_all_out",
            Dim::Ulysses,
            CollectiveOp::AllToAll,
            bytes(a),
        );
        layout(b, a);
    }
    for &n in streams {
        b.gemm("attention_out", s.batch * n, h, a / t);
        if t > 1 {
            b.blocking(
                "tp_all_reduce",
                Dim::Tensor,
                CollectiveOp::AllReduce,
                (s.batch * n * h) as f64 * b.act.bytes(),
            );
        }
    }
}

fn mlp(b: &mut Builder, m: &VideoDit, batch: u64, n: u64) {
    let t = b.layout.tp as u64;
    let h = m.hidden as u64;
    let f = m.ffn as u64 / t;
    let (up, op, passes) = if m.gated_mlp {
        (2 * f, ElementwiseOp::GatedActivation, 3.0)
    } else {
        (f, ElementwiseOp::Activation, 2.0)
    };
    b.gemm("mlp_up", batch * n, up, h);
    b.elementwise("activation", op, batch * n * f, passes);
    b.gemm("mlp_down", batch * n, h, f);
    if t > 1 {
        b.blocking(
            "tp_all_reduce",
            Dim::Tensor,
            CollectiveOp::AllReduce,
            (batch * n * h) as f64 * b.act.bytes(),
        );
    }
    // Two norms, two modulations and two residual adds of the stream.
    b.elementwise("norm", ElementwiseOp::Norm, batch * n * h, 2.0);
    b.elementwise(
        "modulate_residual",
        ElementwiseOp::Add,
        2 * batch * n * h,
        3.0,
    );
    if m.frame_mask {
        // The second norms (2 passes each), modulations (4) and gates (2), and four selects
        // (read two, write one).
        b.elementwise("frame_mask_select", ElementwiseOp::Add, batch * n * h, 28.0);
    }
}

/// One block of `kind` on `s`.
fn block(b: &mut Builder, m: &VideoDit, kind: BlockKind, s: Share, factorised: Option<(u64, u64)>) {
    match kind {
        BlockKind::Dual => {
            self_attention(b, m, s, &[s.video, s.text], None);
            mlp(b, m, s.batch, s.video);
            mlp(b, m, s.batch, s.text);
        }
        BlockKind::Single => {
            self_attention(b, m, s, &[s.video + s.text], None);
            mlp(b, m, s.batch, s.video + s.text);
        }
        BlockKind::Cross if factorised.is_some() => {
            // A spatial block and a temporal block, each whole (Open-Sora's STDiT).
            let (per_frame, frames) = factorised.expect("checked above");
            cross_block(b, m, s, Some(Attention3::Spatial(per_frame, frames)));
            // DSP re-splits the activations from frames to positions before the temporal
            // block, and back after it.
            let switch = (s.batch * s.video * m.hidden as u64) as f64 * b.act.bytes();
            if b.layout.dsp > 1 {
                b.blocking("dsp_all_to_all", Dim::Dsp, CollectiveOp::AllToAll, switch);
            }
            cross_block(b, m, s, Some(Attention3::Temporal(per_frame, frames)));
            if b.layout.dsp > 1 {
                b.blocking("dsp_all_to_all", Dim::Dsp, CollectiveOp::AllToAll, switch);
            }
        }
        BlockKind::Cross => cross_block(b, m, s, None),
    }
}

/// A cross-attention block: self-attention over the video tokens (or one axis of them), then
/// cross-attention to the text, then the MLP.
fn cross_block(b: &mut Builder, m: &VideoDit, s: Share, axis: Option<Attention3>) {
    self_attention(b, m, s, &[s.video], axis);
    let t = b.layout.tp as u64;
    let a = m.attention_width();
    let h = m.hidden as u64;
    let text = m.text_tokens as u64;
    b.gemm("cross_q", s.batch * s.video, a / t, h);
    b.gemm("cross_kv", s.batch * text, 2 * a / t, m.text_dim as u64);
    let heads = (m.heads as u64 / t).max(1);
    b.attention(
        "cross_attention",
        s.batch * heads,
        s.video,
        text,
        m.head_dim as u64,
    );
    b.gemm("cross_out", s.batch * s.video, h, a / t);
    if t > 1 {
        b.blocking(
            "tp_all_reduce",
            Dim::Tensor,
            CollectiveOp::AllReduce,
            (s.batch * s.video * h) as f64 * b.act.bytes(),
        );
    }
    mlp(b, m, s.batch, s.video);
}

/// One axis of a factorised attention: (tokens a frame, frames).
#[derive(Clone, Copy)]
enum Attention3 {
    Spatial(u64, u64),
    Temporal(u64, u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Dual,
    Single,
    Cross,
}

/// The graph of one video on rank 0, and where its parts lie.
pub fn build(
    v: &Generation,
    layout: Layout,
    compute: &ComputeModel,
    net: &Network,
    act: Dtype,
) -> (Graph, Parts) {
    let mut graph = Graph::new();
    // A Ring pass or PipeFusion send beside attention holds SMs and slows it (`exec::Contention`);
    // the lane's waits and blocking collectives leave no kernel beside them to slow.
    graph.contention =
        crate::workload::cluster::collective_contention(net.topology.spec.intra, &compute.gpu).1;
    let compute_lane = graph.add_lane_using("compute", "GPU 0", LaneUse::Kernels);
    let comm = graph.add_lane_using("communication", "GPU 0", LaneUse::Collectives);
    let mut b = Builder {
        graph,
        compute: compute_lane,
        comm,
        last: None,
        model: compute,
        net,
        layout,
        act,
        priced: HashMap::new(),
        flops: 0.0,
        pending: Vec::new(),
    };
    let mut parts = Parts::default();

    // Text encoders: the prompt, and the negative prompt with guidance.
    let moves = v.moves;
    b.host_copy("offload_encoders_in", moves.before_encode, &mut parts);
    let start = b.graph.ops.len();
    let branches = v.model.branches(v.guidance);
    for enc in v.model.text_encoders {
        let tokens = enc.tokens as u64 * branches;
        b.gemm("text_encoder", tokens, (enc.params / 4096).max(1), 4096);
    }
    parts.text_encode = start..b.graph.ops.len();

    b.host_copy(
        "offload_swap_to_transformer",
        moves.before_denoise,
        &mut parts,
    );
    b.host_copy(
        "offload_transformer_streamed",
        moves.during_denoise,
        &mut parts,
    );
    let start = b.graph.ops.len();
    parts.step_flops = denoising::denoise(&mut b, v);
    parts.denoise = start..b.graph.ops.len();

    b.host_copy("offload_before_decode", moves.before_decode, &mut parts);
    let start = b.graph.ops.len();
    vae_decoder(&mut b, v);
    parts.vae = start..b.graph.ops.len();
    (b.graph, parts)
}

/// The VAE decoder, level by level (its share of the tiles with the parallel VAE).
fn vae_decoder(b: &mut Builder, v: &Generation) {
    let share_of = if v.vae_parallel {
        b.layout.world() as u64
    } else {
        1
    };
    for conv in super::vae::convs(v.model, v.video) {
        let vox = conv.voxels.div_ceil(share_of);
        let gemm = Kernel::Gemm {
            m: vox,
            n: conv.c_out,
            k: conv.c_in * conv.taps,
            batch: conv.count,
            dtype: b.act,
        };
        if conv.taps == 27 {
            b.conv3d(gemm);
        } else {
            b.kernel("vae_conv", gemm);
        }
        if conv.taps > 1 {
            // The group norm and SiLU before each 3 x 3 (x 3) convolution, on its input.
            b.elementwise(
                "vae_norm_silu",
                ElementwiseOp::Norm,
                vox * conv.c_in * conv.count,
                4.0,
            );
        }
    }
}
