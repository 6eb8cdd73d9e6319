//! One kind of serving replica: its GPU and tp and pp degrees, each GPU's memory, what an
//! iteration costs, and what swapping one token of KV cache to host memory and back costs. A fleet
//! holds one kind, or several in a mixed fleet (`[[serving.group]]`).
//!
//! Memory per GPU: the engine's share ([`KvBudget`]: a fraction of all memory, or of what the
//! weights leave free), less the weights (split over tp x pp GPUs) and [`ACTIVATION_RESERVE`], is
//! KV cache in whole blocks (a stage's GPU holds its layers' share of every cached token). An
//! iteration is its kernels plus the engine's time outside them ([`Overhead`]). With `pp` stages a
//! replica runs `pp` engines, each with `1/pp` of the KV blocks; an engine's iteration is the
//! whole model on `tp` GPUs plus `pp - 1` hand-offs of hidden states (tokens x hidden x 2 bytes)
//! priced as NCCL's send/recv. Offloaded weights are read over PCIe every iteration
//! (`offload.rs`).
//!
//! Ignored: engines contending for a stage (assumed to interleave), uneven layer splits, CUDA
//! graphs' and the framework's memory beyond the reserve. Details: docs/SERVING.md.

use super::cost::{Batch, IterationCost, kv_bytes_per_token_layer};
use super::engine::{EngineKind, KvBudget};
use super::offload::Offload;
use super::overhead::Overhead;
use super::policy::OffloadMode;
use crate::hw::host::HostSpec;
use crate::hw::{ComputeModel, Dtype, GpuSpec};
use crate::model::Transformer;
use crate::net::Topology;
use crate::net::tier::Tier;
use std::sync::Arc;

/// Memory an engine keeps aside for activations and workspaces, bytes a GPU (vLLM profiles a
/// forward pass to size it; 1 GiB is typical for 8-70B models at a few thousand batched tokens).
pub const ACTIVATION_RESERVE: f64 = 1.0 * (1u64 << 30) as f64;

/// How the engine uses memory and what it spends outside the kernels, the same for every kind
/// of replica.
#[derive(Clone, Copy, Debug)]
pub struct EnginePolicy {
    /// The engine whose defaults the run took where the scenario was silent.
    pub engine: EngineKind,
    /// How much of a GPU's memory the KV cache gets.
    pub kv_budget: KvBudget,
    /// Time an iteration spends outside the kernels.
    pub overhead: Overhead,
    pub block_tokens: u32,
    pub kv_dtype: Dtype,
    /// Weight bytes of each GPU kept in host memory (`weights_offload`).
    pub offload_bytes: f64,
    /// How the offloaded weights are used each iteration.
    pub offload_mode: OffloadMode,
    /// The servers' host (mode `cpu`), shared evenly by the GPUs of a server.
    pub host: Option<HostSpec>,
}

/// One kind of replica, sized and priced.
#[derive(Clone)]
pub struct ReplicaKind {
    pub gpu: Arc<GpuSpec>,
    pub tp: u32,
    /// Pipeline stages, and engines, of a replica.
    pub pp: u32,
    /// How many replicas of this kind the fleet has.
    pub replicas: u32,
    /// Weight bytes of each GPU's share of the model, in GPU memory (the offloaded part is not
    /// counted here).
    pub weights_per_gpu: f64,
    /// Weight bytes of each GPU's share kept in host memory.
    pub offloaded_bytes: f64,
    /// Seconds every iteration spends reading the offloaded weights over PCIe.
    offload_seconds: f64,
    /// How an iteration uses the offloaded weights.
    pub offload: Offload,
    /// GPUs of a server that keep weights in its host memory and share its CPUs.
    pub offload_users: u32,
    /// KV-cache bytes of one token on one GPU, all layers.
    pub kv_per_token: f64,
    /// KV-cache blocks of one replica (0: the weights do not fit); each engine has `blocks / pp`.
    pub blocks: u32,
    pub cost: IterationCost,
    /// Seconds to copy one token of KV cache between a GPU and host memory (each GPU its shard
    /// over its own PCIe link).
    pub swap_seconds_per_token: f64,
    /// Tokens a second of a reference iteration ([`REFERENCE_BATCH`]) on one engine: how fast
    /// it drains work, relative to other kinds (routers weigh load by it).
    pub capacity_tokens_per_s: f64,
    /// The model's hidden size (the width of the hidden states handed between stages).
    hidden: u32,
    /// The layers an iteration runs, and the engine's time outside the kernels.
    layers: u32,
    overhead: Overhead,
}

/// The iteration that measures a replica kind's speed: a 1,024-token prefill chunk beside 32
/// decodes at 1,024 tokens of context (a Sarathi-style mixed batch, neither all prefill nor all
/// decode).
pub const REFERENCE_BATCH: (u32, u32, u32) = (1024, 32, 1024);

impl ReplicaKind {
    /// `network` is the GPUs replicas of this kind are laid out on (replica j's stage k on GPUs
    /// (j pp + k) tp onwards), the tier that prices its transfers and whether its switches reduce
    /// in-network.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: Arc<GpuSpec>,
        (tp, pp): (u32, u32),
        replicas: u32,
        model: &Transformer,
        memory: EnginePolicy,
        compute: ComputeModel,
        network: (Topology, Tier, bool),
    ) -> ReplicaKind {
        let weights = model.params() as f64 * model.dtype.bytes();
        Self::build(
            gpu,
            (tp, pp),
            replicas,
            (model, weights, true),
            memory,
            compute,
            network,
        )
    }

    /// A server of `tp` GPUs holding layers `start..end` of `model` only (a placement over a
    /// heterogeneous fleet): its layers' weights, the embedding table when it holds the first
    /// layer and the output projection when it holds the last; it samples tokens only then.
    pub fn stage(
        gpu: Arc<GpuSpec>,
        tp: u32,
        model: &Transformer,
        (start, end): (u32, u32),
        memory: EnginePolicy,
        compute: ComputeModel,
        network: (Topology, Tier, bool),
    ) -> ReplicaKind {
        let table = model.vocab as f64 * model.hidden as f64;
        let last = end == model.layers;
        let mut stage = model.clone();
        stage.layers = end - start;
        stage.skip_attention_layers = stage.layers - model.attention_layers_in(start..end);
        let params = stage.layers as f64 * model.layer_params() as f64
            - stage.skip_attention_layers as f64 * model.attention_params() as f64
            + if start == 0 { table } else { 0.0 }
            + if last { table } else { 0.0 };
        let weights = params * model.dtype.bytes();
        Self::build(
            gpu,
            (tp, 1),
            1,
            (&stage, weights, last),
            memory,
            compute,
            network,
        )
    }

    /// `model` is what one engine computes, `weights` the bytes of a replica's weights (before
    /// offload), `samples` whether its iterations end by sampling tokens.
    fn build(
        gpu: Arc<GpuSpec>,
        (tp, pp): (u32, u32),
        replicas: u32,
        (model, weights, samples): (&Transformer, f64, bool),
        memory: EnginePolicy,
        compute: ComputeModel,
        network: (Topology, Tier, bool),
    ) -> ReplicaKind {
        let share = weights / (tp * pp) as f64;
        let offloaded = memory.offload_bytes.min(share);
        let weights_per_gpu = share - offloaded;
        let kv_space = memory.kv_budget.kv_bytes(
            gpu.memory_bytes as f64,
            weights_per_gpu,
            ACTIVATION_RESERVE,
            tp,
        );
        // The stage with the most attention layers (the first: skipped ones are the last).
        let stage_layers = model.layers.div_ceil(pp).min(model.attention_layers());
        let kv_per_token =
            kv_bytes_per_token_layer(model, tp, memory.kv_dtype) * stage_layers as f64;
        let blocks = if kv_space > 0.0 {
            (kv_space / (kv_per_token * memory.block_tokens as f64)).floor() as u32
        } else {
            0
        };
        let swap_seconds_per_token = network.0.host_copy_seconds(kv_per_token);
        let offload_seconds = network.0.host_copy_seconds(offloaded);
        let offload_users = network.0.gpus_per_node;
        let offload = Offload {
            mode: memory.offload_mode,
            bytes: offloaded,
            pcie_seconds_per_byte: network.0.host_copy_seconds(1.0),
            layers: model.layers.div_ceil(pp),
            weight_bytes: model.dtype.bytes(),
            hidden: model.hidden,
            host: memory.host.map(|h| h.share(network.0.gpus_per_node)),
        };
        let cost = IterationCost::new(model.clone(), compute, tp, network, memory.kv_dtype);
        let (chunk, decodes, context) = REFERENCE_BATCH;
        let reference = Batch {
            prefill: vec![(chunk, 0)],
            decodes,
            decode_context: decodes as u64 * context as u64,
            sampling: if samples { decodes + 1 } else { 0 },
        };
        let mut kind = ReplicaKind {
            gpu,
            tp,
            pp,
            replicas,
            weights_per_gpu,
            kv_per_token,
            blocks,
            cost,
            swap_seconds_per_token,
            offloaded_bytes: offloaded,
            offload_seconds,
            offload,
            offload_users,
            capacity_tokens_per_s: 0.0,
            hidden: model.hidden,
            layers: model.layers,
            overhead: memory.overhead,
        };
        kind.capacity_tokens_per_s = reference.tokens() as f64 / kind.iteration(&reference);
        kind
    }

    /// Seconds of one engine's iteration over `batch`: every stage's layers, the hand-offs, and
    /// reading the offloaded weights.
    pub fn iteration(&mut self, batch: &Batch) -> f64 {
        let bytes = ((batch.tokens() * self.hidden as u64) as f64 * Dtype::Bf16.bytes()) as u64;
        let handoffs: f64 = (1..self.pp)
            .map(|k| {
                self.cost
                    .send_seconds((k - 1) * self.tp, k * self.tp, bytes)
            })
            .sum();
        let kernels = self.cost.iteration(batch);
        let gpu = self.gpu_seconds(batch, kernels, handoffs);
        let requests = batch.prefill.len() as u32 + batch.decodes;
        let decode_only = batch.prefill.is_empty();
        self.overhead
            .iteration_seconds(gpu, self.layers, (requests, decode_only), self.tp)
    }

    /// Seconds the GPUs are busy in an iteration whose kernels take `kernels` and whose
    /// hand-offs between stages take `handoffs`: with the offloaded weights' reads.
    fn gpu_seconds(&mut self, batch: &Batch, kernels: f64, handoffs: f64) -> f64 {
        match self.offload.mode {
            OffloadMode::Serial => kernels + handoffs + self.offload_seconds,
            OffloadMode::Prefetch | OffloadMode::Cpu => {
                let stages = self.pp as f64;
                let tokens = batch.tokens();
                let offloaded = match self.offload.mode {
                    OffloadMode::Cpu => self.cost.weight_gemm_seconds(tokens, self.offload.bytes),
                    _ => 0.0,
                };
                let (stage, _) = self
                    .offload
                    .stage_seconds(kernels / stages, offloaded, tokens);
                stage * stages + handoffs
            }
        }
    }

    /// Seconds to move `tokens` tokens of KV cache from replica `from` to replica `to` (pp = 1):
    /// each tensor-parallel GPU sends its shard to its counterpart, all at once.
    pub fn kv_transfer_seconds(&mut self, from: u32, to: u32, tokens: u32) -> f64 {
        let bytes = (tokens as f64 * self.kv_per_token) as u64;
        (0..self.tp)
            .map(|k| {
                self.cost
                    .send_seconds(from * self.tp + k, to * self.tp + k, bytes)
            })
            .fold(0.0, f64::max)
    }

    /// Whether the weights leave room for at least one KV block.
    pub fn fits(&self) -> bool {
        self.blocks > 0
    }
}
