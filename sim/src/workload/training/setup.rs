//! A training run, fully specified: the cluster, the model, the layout and its rank strides, every
//! policy and option resolved (`scenario/lower/training/` builds it from a scenario, defaults
//! recorded in `assumptions`), with the per-stage arithmetic the step builder asks of it.

use super::comm::Compressions;
use super::layout::Layout;
use super::optimizer::Optimizer;
use super::policy::{ContextAlgorithm, OptimizerOffload, ParamGather, Recompute, Schedule};
use super::reliability::Reliability;
use crate::hw::Dtype;
use crate::hw::GpuSpec;
use crate::hw::host::HostSpec;
use crate::model::Transformer;
use crate::net::Fabric;
use crate::net::Topology;
use crate::net::tier::Tier;
use crate::workload::cluster::ComputeProfile;
use crate::workload::cost::Prices;
use std::sync::Arc;

/// A training run, fully specified.
#[derive(Clone, Debug)]
pub struct TrainingConfig {
    /// The scenario's name, for the report.
    pub scenario: String,
    pub gpu: Arc<GpuSpec>,
    /// Measured kernel times that price kernels before the roofline (`cluster.profile`).
    pub profile: Option<ComputeProfile>,
    pub fabric: Fabric,
    pub topology: Topology,
    /// The topology's GPU that rank 0 runs on: 0, or where a cluster placed the job (its ranks
    /// on consecutive GPUs from there, a whole number of servers in).
    pub first_gpu: u32,
    /// Network tier that prices the collectives.
    pub tier: Tier,
    /// Whether the NVSwitches can reduce in the switch (NCCL's NVLS).
    pub in_switch_reduction: bool,
    /// The model; its `dtype` is the format of everything but the linear layers' GEMMs
    /// (`gemm_dtype`): bf16 in an fp8 run.
    pub model: Transformer,
    /// The format the linear layers' GEMMs compute in: the scenario's `dtype`. Under fp8 the
    /// GEMMs run in fp8 and the rest in bf16, as fp8 training recipes (Transformer Engine,
    /// torchao's float8) run them; each fp8 GEMM's operands are cast first (`layer::fp8_cast`).
    pub gemm_dtype: Dtype,
    /// How fp8 GEMMs' operands are cast (fp8 runs only).
    pub fp8_casts: super::policy::Fp8Casts,
    /// Tensor-parallel degree (Megatron-LM's column/row split), innermost in rank order.
    pub tp: u32,
    /// Sequence parallelism: layer norms and dropout split over the tensor-parallel ranks by
    /// tokens, all-reduces replaced by reduce-scatter and all-gather.
    pub sequence_parallel: bool,
    /// Pipeline stages, outermost in rank order; each runs `layers / (pp x virtual_stages)`
    /// layers per model chunk.
    pub pp: u32,
    pub schedule: Schedule,
    pub virtual_stages: u32,
    pub dp: u32,
    /// The parallel dimensions in rank order, innermost first ("tp", "cp", "dp", "pp").
    pub order: [&'static str; 4],
    /// Rank distance between neighbours along each parallel dimension.
    pub stride: Strides,
    /// The optimizer (its state, its step and GaLore's projections).
    pub optimizer: Optimizer,
    /// Where the optimizer states live and the step runs (`parallel.optimizer_offload`).
    pub optimizer_offload: OptimizerOffload,
    /// The servers' host, shared by its GPUs (`host`), or the optimizer node (`network`).
    pub host: Option<HostSpec>,
    /// Bytes per parameter of the gradients kept and reduced across data-parallel ranks: 4
    /// (fp32, Megatron-LM) or 2 (`parallel.grad_dtype` the model's 16-bit format, DeepSpeed).
    pub grad_bytes: f64,
    /// Tensor-parallel collectives overlap the neighbouring GEMMs instead of blocking (no effect
    /// without tensor parallelism).
    pub tp_comm_overlap: bool,
    /// The backward's input-gradient collective of each column-split GEMM runs beside its
    /// weight-gradient GEMM (`parallel.tp_dgrad_overlap`; implied by `tp_comm_overlap`).
    pub tp_dgrad_overlap: bool,
    /// ZeRO-3: how each layer's parameters are gathered (`parallel.param_gather`).
    pub param_gather: ParamGather,
    /// Context parallelism: each sequence split over `cp` ranks (two balanced chunks each).
    pub cp: u32,
    pub cp_algorithm: ContextAlgorithm,
    /// Expert parallelism: each group of `ep` consecutive data-parallel replicas shares out the
    /// experts of every mixture-of-experts layer.
    pub ep: u32,
    pub micro_batch: u32,
    pub global_batch: u32,
    /// Micro-batches each data-parallel replica runs per step (gradient accumulation).
    pub accumulation: u32,
    pub recompute: Recompute,
    /// Under full recomputation, the layers of each pipeline chunk that recompute, counted from
    /// the chunk's first (`parallel.recompute_layers`; all when `None`).
    pub recompute_layers: Option<u32>,
    /// Attention runs unfused (`[model] attention_kernel = "unfused"`): its score matrices are
    /// kept for the backward, and selective recomputation recomputes them.
    pub unfused_attention: bool,
    /// The layer's elementwise operations run as eager PyTorch's separate kernels
    /// (`[model] elementwise = "eager"`, `super::eager`).
    pub eager: bool,
    /// The layers train with dropout (`[model] dropout` above 0), keeping its masks for the
    /// backward.
    pub dropout: bool,
    /// ZeRO stage: 0 none, 1 optimizer states sharded, 2 gradients too.
    pub zero: u8,
    pub seed: u64,
    /// Count every link's bytes over the step for the report (`[sim] record_links`).
    pub record_links: bool,
    /// One GPU computes this many times slower than its peers (1: none). It sits in the last
    /// pipeline stage; its tensor-parallel peers wait for it at every collective and its
    /// data-parallel peers at the gradient reduction, so the stage runs at its pace.
    pub straggler_slowdown: f64,
    /// Which GPUs the step simulates (`sim.ranks`).
    pub ranks: super::policy::Ranks,
    /// With every rank simulated, GPUs whose pipelines the trace draws (`sim.trace_gpus`);
    /// empty: the pipeline that finishes last.
    pub trace_gpus: Vec<u32>,
    /// GPUs computing slower than their peers (`[[perturb]]`): global rank and slowdown, each
    /// rank once, ascending.
    pub slow_gpus: Vec<(u32, f64)>,
    /// GPUs whose kernel times vary (`[[perturb]] jitter`): global rank and coefficient of
    /// variation, ascending.
    pub jitter_gpus: Vec<(u32, f64)>,
    /// GPUs under a lower board power limit than the cluster's (`[[perturb]] power_limit`):
    /// global rank and watts, ascending.
    pub limited_gpus: Vec<(u32, f64)>,
    /// Links running below their rate (`[[perturb]] nic_bandwidth` or `link`): edge index of the
    /// topology and its bandwidth, bytes/s (0: the cable failed), ascending by edge.
    pub degraded_links: Vec<(u32, f64)>,
    /// Failures and checkpoints (`[reliability]`).
    pub reliability: Option<Reliability>,
    /// Prices (`[cost]`).
    pub prices: Option<Prices>,
    /// Tokens to train on (`[capacity]`).
    pub train_tokens: Option<f64>,
    /// Compressed collectives by parallel dimension (`[compression]`).
    pub compression: Compressions,
    /// Compression of saved activations (`[compression.activations]`), for adaptive
    /// recomputation.
    pub activation_compression: Option<crate::collective::cost::Compression>,
    /// Memory per GPU adaptive recomputation fits within, bytes (`parallel.memory_cap`).
    pub memory_cap: f64,
    /// Local SGD (DiLoCo): sites that each reduce gradients among their own replicas every step
    /// (1: no local SGD, every replica reduces with every other).
    pub sites: u32,
    /// Local SGD: steps between two outer synchronisations across sites (1 without).
    pub local_steps: u32,
    /// Local SGD: the outer synchronisation overlaps the next round of steps (one round late).
    pub outer_overlap: bool,
    /// Sequences of unlike lengths and their micro-batches (`[sequences]`); None: every
    /// micro-batch is `micro_batch` sequences of the model's length.
    pub sequences: Option<super::sequences::Sequences>,
    /// Defaults that were applied, in words, for the report.
    pub assumptions: Vec<String>,
}

/// Rank strides of the parallel dimensions: rank = t x tp + c x cp + d x dp + p x pp for tensor,
/// context, data and pipeline indices (t, c, d, p).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Strides {
    pub tp: u32,
    pub cp: u32,
    pub dp: u32,
    pub pp: u32,
}

impl Strides {
    /// Strides for `order` (innermost first) and the dimensions' sizes.
    pub fn new(order: &[&'static str], sizes: [(&str, u32); 4]) -> Strides {
        let mut stride = 1;
        let mut out = [0u32; 4];
        for name in order {
            let i = sizes
                .iter()
                .position(|(n, _)| n == name)
                .expect("validated order");
            out[i] = stride;
            stride *= sizes[i].1;
        }
        Strides {
            tp: out[0],
            cp: out[1],
            dp: out[2],
            pp: out[3],
        }
    }
}

/// The parallel dimensions, sorted.
pub const DIMENSIONS: [&str; 4] = ["cp", "dp", "pp", "tp"];

impl TrainingConfig {
    /// The share of an fp8 GEMM's weight cast each micro-batch pays: all of it when every call
    /// casts, one over the step's micro-batches a replica runs when Transformer Engine reuses
    /// the first micro-batch's.
    pub fn weight_casts(&self) -> f64 {
        match self.fp8_casts {
            super::policy::Fp8Casts::PerCall => 1.0,
            super::policy::Fp8Casts::TransformerEngine => {
                let micro_batches = self.global_batch / (self.micro_batch * self.dp).max(1);
                1.0 / micro_batches.max(1) as f64
            }
        }
    }

    /// The blocks a collective holds on each GPU of its servers, and the rate the kernels beside
    /// it keep (`workload::cluster::collective_contention`).
    pub fn contention(&self) -> (u32, Option<crate::exec::Contention>) {
        crate::workload::cluster::collective_contention(self.topology.spec.intra, &self.gpu)
    }

    pub fn gpus(&self) -> u32 {
        self.fabric.gpus()
    }

    /// Bytes of a tensor-parallel sync: between a mixture-of-experts layer's two all-to-alls
    /// (`experts`) the routed copies of the tensor-parallel group's tokens (`routed`), gathered
    /// for (or reduced from) the experts' split GEMMs as Megatron-Core's all-to-all dispatcher
    /// does; else the layer's activation `act`.
    pub fn sync_bytes(&self, experts: bool, routed: f64, act: f64) -> f64 {
        if experts { routed } else { act }
    }

    /// Bytes one rank sends in an expert-parallel all-to-all of a tensor-parallel group's
    /// `routed` bytes: its own tokens' copies, under sequence parallelism a rank's share.
    pub fn exchanged_bytes(&self, routed: f64) -> f64 {
        if self.sequence_parallel {
            routed / self.tp as f64
        } else {
            routed
        }
    }

    /// Whether the layer at `position` in its pipeline chunk is one full recomputation reruns.
    pub fn recomputes_position(&self, position: u32) -> bool {
        self.recompute_layers.is_none_or(|n| position < n)
    }

    /// The fraction of the model's layers whose forward full recomputation reruns.
    pub fn recomputed_share(&self) -> f64 {
        let Some(n) = self.recompute_layers else {
            return 1.0;
        };
        let chunks = self.pp * self.virtual_stages;
        let rerun: u32 = (0..chunks)
            .map(|c| self.chunk_layers(c).len().min(n as usize) as u32)
            .sum();
        rerun as f64 / self.model.layers.max(1) as f64
    }

    /// Whether the backward recomputes attention's score matrices: selective recomputation of
    /// unfused attention (fused attention recomputes them inside its backward anyway).
    pub fn recomputes_scores(&self) -> bool {
        self.recompute == Recompute::Selective && self.unfused_attention
    }

    /// Ranks that hold the same weights and reduce their gradients together every step (the
    /// data-parallel communicator, `Comm::Data`): the data-parallel replicas (under local SGD
    /// those of one site) times the context-parallel ranks, which compute gradients of the same
    /// weights from other parts of the sequences. ZeRO shards over all of them, as Megatron-Core's
    /// distributed optimizer (its data-parallel group with context parallelism) and torchtitan's
    /// FSDP (its `dp_shard_cp` mesh) do.
    pub fn gradient_ranks(&self) -> u32 {
        self.site_replicas() * self.cp
    }

    /// Data-parallel replicas of one site (all of them without local SGD's sites).
    pub fn site_replicas(&self) -> u32 {
        self.dp / self.sites
    }

    /// The parallel layout.
    pub fn layout(&self) -> Layout {
        Layout {
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            dp: self.dp,
            ep: self.ep,
            micro_batch: self.micro_batch,
            global_batch: self.global_batch,
            schedule: self.schedule,
            virtual_stages: self.virtual_stages,
            sequence_parallel: self.sequence_parallel,
            recompute: self.recompute,
            zero: self.zero,
        }
    }

    /// Where the optimizer step runs off the GPU: a server's host shared by its GPUs (`host`),
    /// the optimizer node (`network`), or none.
    pub fn optimizer_host(&self) -> Option<HostSpec> {
        match self.optimizer_offload {
            OptimizerOffload::Gpu => None,
            OptimizerOffload::Host => self.host.map(|h| h.share(self.topology.gpus_per_node)),
            OptimizerOffload::Network => self.host,
        }
    }

    /// Takes the degrees of `layout` (checked by the caller with `Layout::check`), with the rank
    /// strides that follow from them. Virtual stages and sequence parallelism need pipeline and
    /// tensor parallelism, and fall back to none without them.
    pub fn set_layout(&mut self, layout: &Layout) {
        self.tp = layout.tp;
        self.pp = layout.pp;
        self.cp = layout.cp;
        self.dp = layout.dp;
        self.ep = layout.ep;
        self.micro_batch = layout.micro_batch;
        self.global_batch = layout.global_batch;
        self.accumulation = layout.accumulation();
        self.schedule = layout.schedule;
        self.virtual_stages = if layout.pp > 1 {
            layout.virtual_stages
        } else {
            1
        };
        self.sequence_parallel = layout.sequence_parallel && layout.tp > 1;
        self.recompute = layout.recompute;
        self.zero = layout.zero;
        self.stride = Strides::new(
            &self.order,
            [
                ("tp", layout.tp),
                ("cp", layout.cp),
                ("dp", layout.dp),
                ("pp", layout.pp),
            ],
        );
    }

    /// Global rank of tensor-parallel rank 0, context rank 0, data-parallel replica 0 of pipeline
    /// stage `stage`.
    pub fn stage_rank(&self, stage: u32) -> u32 {
        stage * self.stride.pp
    }

    /// The layers of model chunk `chunk` (of pp x virtual_stages): as even a split as the layer
    /// count allows, the first chunks taking one more when it does not divide.
    pub fn chunk_layers(&self, chunk: u32) -> std::ops::Range<u32> {
        let chunks = self.pp * self.virtual_stages;
        let (base, extra) = (self.model.layers / chunks, self.model.layers % chunks);
        let start = chunk * base + chunk.min(extra);
        start..start + base + u32::from(chunk < extra)
    }

    /// Weights of layer `layer` that one GPU holds: its tensor-parallel share, and of a
    /// mixture-of-experts layer's routed experts only its expert-parallel share; none of the
    /// attention's in a layer that skips it.
    pub fn layer_params_here(&self, layer: u32) -> f64 {
        let m = &self.model;
        let tp = self.tp as f64;
        let here = if m.is_moe_layer(layer) {
            (m.moe_layer_params() - m.layer_expert_params()) as f64 / tp
                + m.layer_expert_params() as f64 / (tp * self.ep as f64)
        } else {
            m.layer_params() as f64 / tp
        };
        if m.has_attention(layer) {
            here
        } else {
            here - m.attention_params() as f64 / tp
        }
    }

    /// Layers held by the GPU of pipeline stage `stage` (all its chunks).
    pub fn stage_layers(&self, stage: u32) -> u32 {
        (0..self.virtual_stages)
            .map(|c| self.chunk_layers(c * self.pp + stage).len() as u32)
            .sum()
    }

    /// Parameters a GPU of pipeline stage `stage` holds: its chunks' layers split over the
    /// tensor-parallel ranks, the embedding on the first stage and the output projection on the
    /// last (a copy of the embedding when tied and on another stage, as Megatron-LM keeps it).
    pub fn stage_params(&self, stage: u32) -> f64 {
        let m = &self.model;
        let tp = self.tp as f64;
        let table = m.vocab as f64 * m.hidden as f64 / tp;
        let mut params: f64 = (0..self.virtual_stages)
            .flat_map(|c| self.chunk_layers(c * self.pp + stage))
            .map(|layer| self.layer_params_here(layer))
            .sum();
        if stage == 0 {
            params += table;
        }
        if stage == self.pp - 1 && (!m.tied_embeddings || self.pp > 1) {
            params += table;
        }
        params
    }
}
