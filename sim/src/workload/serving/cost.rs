//! The time of one engine iteration: a batch of prefill chunks and decode steps on one replica.
//!
//! Per layer, on each of the replica's `tp` GPUs: the four GEMMs on all the batch's tokens at once
//! (QKV, attention output, MLP up and down, split as Megatron-LM splits them), fused attention for
//! each prefill chunk, one bandwidth-bound kernel reading every decoding request's KV cache, the
//! norms, activation and residual adds, and two all-reduces when `tp > 1`; then the output
//! projection for the requests that sample. One layer is priced and multiplied; layers without
//! attention (`skip_attention_layers`) keep only the MLP half. A mixture-of-experts layer has the
//! router's scores, the routed experts' batched GEMMs over the experts the batch touches (tokens
//! spread evenly, each expert split over `tp`) and any shared experts. Weights are in the model's
//! format (fp8, int8 and int4 change their bytes and, where the GPU has the units, the GEMM peak);
//! an fp8 linear layer's activation is quantized by a streaming pass before it, as vLLM's,
//! SGLang's and TensorRT-LLM's fp8 layers run it (fused into the norm or activation: not
//! modelled). The KV cache is in 16 bits or fp8. On a device that prices softmax apart
//! (`hw::roofline`), decode attention takes the longer of its KV read and its exponentials on
//! that unit. Ignored: sampling, the scheduler's own CPU time, CUDA-graph effects.

use crate::collective::cost::{Collective, CollectiveCost, Options, cost};
use crate::collective::{Algorithm, CollectiveOp, Group};
use crate::hw::{ComputeModel, Dtype, ElementwiseOp, Kernel};
use crate::model::Transformer;
use crate::net::Topology;
use crate::net::tier::Tier;
use std::collections::HashMap;

/// Bytes of KV cache a token holds in one layer on one GPU (keys and values in `kv`).
pub fn kv_bytes_per_token_layer(m: &Transformer, tp: u32, kv: Dtype) -> f64 {
    2.0 * (m.kv_heads as f64 / tp as f64).max(1.0) * m.head_dim() as f64 * kv.bytes()
}

/// The 16-bit format activations and attention run in: fp16 for an fp16 model or on a GPU
/// without bf16 arithmetic (T4, V100), bf16 otherwise. Both are two bytes, so hand-offs and
/// all-reduces are sized the same.
pub fn activation_dtype(m: &Transformer, compute: &ComputeModel) -> Dtype {
    if m.dtype == Dtype::Fp16 || compute.gpu.peak_flops(Dtype::Bf16).is_none() {
        Dtype::Fp16
    } else {
        Dtype::Bf16
    }
}

/// What one iteration runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// Prefill chunks: (new tokens, tokens already in the cache).
    pub prefill: Vec<(u32, u32)>,
    /// Decoding requests and the sum of their context lengths.
    pub decodes: u32,
    pub decode_context: u64,
    /// Requests that sample a token at the end of this iteration.
    pub sampling: u32,
}

impl Batch {
    pub fn tokens(&self) -> u64 {
        self.prefill.iter().map(|&(n, _)| n as u64).sum::<u64>() + self.decodes as u64
    }
}

/// Point-to-point transfers on a network, priced as NCCL's send/recv by the collective layer
/// (cached by sender, receiver and size).
#[derive(Clone)]
pub struct Sends {
    topology: Topology,
    tier: Tier,
    cache: HashMap<(u32, u32, u64), f64>,
}

impl Sends {
    pub fn new(topology: Topology, tier: Tier) -> Self {
        Sends {
            topology,
            tier,
            cache: HashMap::new(),
        }
    }

    /// Seconds to send `bytes` from GPU `from` to GPU `to`.
    pub fn seconds(&mut self, from: u32, to: u32, bytes: u64) -> f64 {
        if let Some(&s) = self.cache.get(&(from, to, bytes)) {
            return s;
        }
        let s = send_cost(&self.topology, self.tier, (from, to), bytes, false).seconds;
        self.cache.insert((from, to, bytes), s);
        s
    }
}

/// NCCL's send/recv of `bytes` from GPU `pair.0` to GPU `pair.1` of `topology`, with the bytes
/// each link carries when `record_links`.
pub fn send_cost(
    topology: &Topology,
    tier: Tier,
    pair: (u32, u32),
    bytes: u64,
    record_links: bool,
) -> CollectiveCost {
    let c = Collective {
        op: CollectiveOp::SendRecv,
        algorithm: Algorithm::Auto,
        group: Group::new(vec![pair.0, pair.1], topology.gpus_per_node),
        bytes: bytes as f64,
        compression: None,
    };
    let mut options = Options::new(tier);
    options.record_links = record_links;
    cost(topology, &c, &options).expect("the sending and receiving GPUs are GPUs of the network")
}

/// Prices iterations of one replica.
#[derive(Clone)]
pub struct IterationCost {
    model: Transformer,
    compute: ComputeModel,
    tp: u32,
    nvls: bool,
    kv: Dtype,
    /// Whether each linear layer's activation is quantized to fp8 first (an fp8 model).
    quantize_activations: bool,
    all_reduce: HashMap<u64, f64>,
    sends: Sends,
}

impl IterationCost {
    /// `network` is the replica's node, the tier that prices its all-reduces, and whether its
    /// switches reduce in-network.
    pub fn new(
        model: Transformer,
        compute: ComputeModel,
        tp: u32,
        network: (Topology, Tier, bool),
        kv: Dtype,
    ) -> Self {
        let (topology, tier, nvls) = network;
        IterationCost {
            quantize_activations: model.dtype == Dtype::Fp8,
            model,
            compute,
            tp,
            nvls,
            kv,
            all_reduce: HashMap::new(),
            sends: Sends::new(topology, tier),
        }
    }

    /// Seconds to send `bytes` from GPU `from` to GPU `to` of this replica's network.
    pub fn send_seconds(&mut self, from: u32, to: u32, bytes: u64) -> f64 {
        self.sends.seconds(from, to, bytes)
    }

    /// Seconds to put `elements` activations into fp8 before an fp8 linear layer: one streaming
    /// pass, 16-bit in and fp8 out (none for a model in another format).
    fn quantize_seconds(&self, elements: u64) -> f64 {
        if !self.quantize_activations || elements == 0 {
            return 0.0;
        }
        let act = activation_dtype(&self.model, &self.compute);
        self.seconds(Kernel::Memory {
            bytes: elements as f64 * (act.bytes() + Dtype::Fp8.bytes()),
            flops: 2.0 * elements as f64,
        })
    }

    fn seconds(&self, k: Kernel) -> f64 {
        self.compute
            .cost(&k)
            .expect("the set-up checked that the GPU computes in the model's format")
            .seconds
    }

    fn all_reduce_seconds(&mut self, bytes: u64) -> f64 {
        if self.tp < 2 {
            return 0.0;
        }
        if let Some(&s) = self.all_reduce.get(&bytes) {
            return s;
        }
        let c = Collective {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Auto,
            group: Group::first(self.tp, self.sends.topology.gpus_per_node),
            bytes: bytes as f64,
            compression: None,
        };
        let mut options = Options::new(self.sends.tier);
        options.nvls_available = self.nvls;
        let s = cost(&self.sends.topology, &c, &options)
            .expect("a replica's tensor-parallel group is the first ranks of its node")
            .seconds;
        self.all_reduce.insert(bytes, s);
        s
    }

    /// Seconds of a GEMM of `tokens` tokens over `bytes` of this GPU's weights (as one matrix
    /// `hidden` wide): what computing a part of the weights costs the GPU (`offload.rs`).
    pub fn weight_gemm_seconds(&self, tokens: u64, bytes: f64) -> f64 {
        let m = &self.model;
        let h = m.hidden as u64;
        let n = (bytes / m.dtype.bytes() / h as f64).ceil() as u64;
        if tokens == 0 || n == 0 {
            return 0.0;
        }
        self.seconds(Kernel::Gemm {
            m: tokens,
            n,
            k: h,
            batch: 1,
            dtype: m.dtype,
        })
    }

    /// Seconds of one iteration.
    pub fn iteration(&mut self, batch: &Batch) -> f64 {
        let t = batch.tokens();
        if t == 0 {
            return 0.0;
        }
        let reduce_bytes = (t * self.model.hidden as u64) as f64 * Dtype::Bf16.bytes();
        let all_reduce = self.all_reduce_seconds(reduce_bytes as u64);
        let m = &self.model;
        let tp = self.tp as u64;
        let h = m.hidden as u64;
        let w = m.dtype;
        let act = activation_dtype(&self.model, &self.compute);
        let gemm = |mm: u64, n: u64, k: u64| Kernel::Gemm {
            m: mm,
            n,
            k,
            batch: 1,
            dtype: w,
        };
        let ew = |op: ElementwiseOp, elements: u64, passes: f64| Kernel::Elementwise {
            op,
            backward: false,
            bytes: elements as f64 * act.bytes() * passes,
            flops: 4.0 * elements as f64,
        };
        let quantize = |elements: u64| self.quantize_seconds(elements);
        // Attention, norms and residual adds: every layer. The MLP: dense, or routed experts.
        let mut layer = quantize(t * h) + quantize(t * m.q_width() / tp);
        layer += self.seconds(gemm(t, m.qkv_width() / tp, h));
        layer += self.seconds(gemm(t, h, m.q_width() / tp));
        for &(new, cached) in &batch.prefill {
            layer += self.seconds(Kernel::Attention {
                batch_heads: m.heads as u64 / tp,
                q_len: new as u64,
                kv_len: (new + cached) as u64,
                head_dim: m.head_dim(),
                causal: true,
                backward: false,
                dtype: act,
            });
        }
        if batch.decodes > 0 {
            let kv = kv_bytes_per_token_layer(m, self.tp, self.kv) * batch.decode_context as f64;
            let read = self.seconds(Kernel::Memory {
                bytes: kv,
                flops: 4.0
                    * batch.decode_context as f64
                    * (m.heads as u64 / tp * m.head_dim()) as f64,
            });
            // On a device that prices softmax apart, its exponentials (one per cached token and
            // query head) run on that unit beside the KV read.
            let exps = batch.decode_context as f64 * (m.heads as u64 / tp) as f64;
            layer += read.max(self.compute.nonlinear_seconds(exps));
        }
        // What a layer without attention saves: the above, and the sublayer's norm, residual add
        // and all-reduce.
        let norm = self.seconds(ew(ElementwiseOp::Norm, t * h, 2.0));
        let add = self.seconds(ew(ElementwiseOp::Add, t * h, 3.0));
        let attention_sublayer = layer + norm + add + all_reduce;
        // Two layer norms, two residual adds.
        layer += 2.0 * norm;
        layer += 2.0 * add;
        layer += 2.0 * all_reduce;
        let (activation, passes) = if m.gated {
            (ElementwiseOp::GatedActivation, 3.0)
        } else {
            (ElementwiseOp::Activation, 2.0)
        };
        let ffn = m.ffn as u64 / tp;
        let dense_mlp = quantize(t * h)
            + quantize(t * ffn)
            + self.seconds(gemm(t, m.up_width() / tp, h))
            + self.seconds(gemm(t, h, ffn))
            + self.seconds(ew(activation, t * ffn, passes));
        let skipped = (m.layers - m.attention_layers()) as f64;
        let mut total = m.layers as f64 * layer + m.dense_layers() as f64 * dense_mlp
            - skipped * attention_sublayer;
        if let Some(moe) = m.moe.clone() {
            // Routed experts, balanced: t x top_k assignments over the experts a batch touches
            // (expected distinct experts of t tokens choosing top_k of E at random:
            // E (1 - (1 - k/E)^t)), each a GEMM of its tokens against its own weights (a batched
            // GEMM, so that a small batch reads only the experts it uses); shared experts as a
            // dense MLP; the router's scores.
            let e = moe.experts as f64;
            let k = moe.top_k as f64;
            let touched = (e * (1.0 - (1.0 - k / e).powf(t as f64)))
                .ceil()
                .clamp(1.0, e) as u64;
            let per_expert = ((t as f64 * k) / touched as f64).ceil() as u64;
            let expert_ffn = moe.expert_ffn as u64 / tp;
            let batched = |n: u64, kk: u64| Kernel::Gemm {
                m: per_expert,
                n,
                k: kk,
                batch: touched,
                dtype: w,
            };
            let mut mlp = self.seconds(gemm(t, moe.experts as u64, h));
            mlp += quantize(t * h) + quantize(t * moe.top_k as u64 * expert_ffn);
            mlp += self.seconds(batched(m.expert_up_width() / tp, h));
            mlp += self.seconds(batched(h, expert_ffn));
            mlp += self.seconds(ew(activation, t * moe.top_k as u64 * expert_ffn, passes));
            if moe.shared_experts > 0 {
                let width = moe.shared_experts as u64;
                mlp += quantize(t * width * expert_ffn);
                mlp += self.seconds(gemm(t, width * m.expert_up_width() / tp, h));
                mlp += self.seconds(gemm(t, h, width * expert_ffn));
                mlp += self.seconds(ew(activation, t * width * expert_ffn, passes));
            }
            total += m.moe_layers() as f64 * mlp;
        }
        if batch.sampling > 0 {
            total += self.seconds(gemm(batch.sampling as u64, m.vocab as u64 / tp, h));
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gpu;
    use crate::model::preset;
    use crate::net::topology::spec::TopologySpec;

    fn cost(name: &str, dtype: Dtype) -> IterationCost {
        let mut model = preset::find(name).unwrap();
        model.dtype = dtype;
        let compute = ComputeModel::new(gpu::find("H100-SXM5-80GB").unwrap().clone());
        let topology = Topology::build(&TopologySpec::new(1, 8)).unwrap();
        IterationCost::new(
            model,
            compute,
            1,
            (topology, Tier::Analytical, false),
            dtype,
        )
    }

    #[test]
    fn an_fp8_model_quantizes_each_linear_layers_input() {
        let batch = Batch {
            prefill: vec![(512, 0)],
            decodes: 3,
            decode_context: 3000,
            sampling: 4,
        };
        let t = batch.tokens();
        let mut fp8 = cost("llama-3-8b", Dtype::Fp8);
        let mut unquantized = fp8.clone();
        unquantized.quantize_activations = false;
        let m = fp8.model.clone();
        let h = m.hidden as u64;
        // QKV, attention output, MLP up and down, each a pass of 2 + 1 bytes an element.
        let widths = [h, m.q_width(), h, m.ffn as u64];
        let pass = |elements: u64| {
            fp8.compute
                .cost(&Kernel::Memory {
                    bytes: 3.0 * elements as f64,
                    flops: 2.0 * elements as f64,
                })
                .unwrap()
                .seconds
        };
        let per_layer: f64 = widths.iter().map(|&w| pass(t * w)).sum();
        let added = fp8.iteration(&batch) - unquantized.iteration(&batch);
        let expected = m.layers as f64 * per_layer;
        assert!(
            (added - expected).abs() < 1e-9 * expected,
            "{added} {expected}"
        );
        // A 16-bit model takes its activations as they are.
        let bf16 = cost("llama-3-8b", Dtype::Bf16);
        assert_eq!(bf16.quantize_seconds(t * h), 0.0);
    }
}
