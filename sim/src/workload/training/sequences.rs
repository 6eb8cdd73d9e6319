//! A training step over sequences of unlike lengths (`[sequences]`): the step's sequences (a
//! list, or a seeded sample of a distribution), how a packing policy turns them into
//! micro-batches of unlike shapes, and what each micro-batch costs and holds.
//!
//! Policies (`policy::Packing`):
//! - `fixed`: batch-level pipelining at one shape. Whole sequences packed first-fit decreasing
//!   into micro-batches of exactly `micro_batch_tokens` (the rest padding); every micro-batch's
//!   GEMMs run the padded length, its attention only over its own sequences (masked per document).
//! - `sequence-parallel`: whole sequences packed the same way, unpadded, each micro-batch split
//!   over the context-parallel ranks (ring attention or all-gather, `parallel.cp`); the baseline
//!   InfiniPipe compares against.
//! - `elastic` (InfiniPipe's elastic pipeline parallelism): a sequence longer than
//!   `micro_batch_tokens` is split into equal chunks (token-level pipelining; chunk k attends to
//!   its own tokens causally and to the k chunks before it in full), the rest packed whole
//!   (batch-level); sequences go to `micro_batches` micro-batches dearest first onto the cheapest
//!   micro-batch with room (cost: GEMM FLOPs linear in tokens, attention FLOPs quadratic in each
//!   sequence's length, a chunk's with the keys before it), the chunks of a sequence on
//!   successive micro-batches in order. Then, per pipeline stage, each micro-batch is
//!   kept or recomputed in full (chunk-level adaptive checkpointing): while the stage's
//!   in-flight micro-batches do not fit, the kept one that frees the most bytes per recomputed
//!   FLOP is recomputed, so stages that hold more micro-batches (the first, under 1F1B)
//!   recompute more, and short packed micro-batches (cheap to rerun) go before long chunks.
//!
//! Each micro-batch is priced by its own shape: GEMMs and elementwise kernels by its tokens,
//! attention as the sum of one kernel per sequence or chunk (`Shape::attention`), so a packed
//! micro-batch of short sequences costs far less attention than one long sequence of the same
//! tokens. Memory holds, per stage, the worst run of consecutive micro-batches its schedule
//! keeps in flight, with the keys and values of the earlier chunks of the sequences they
//! continue (kept on the same stage, so nothing is sent). Ignored: the dependence of chunk k's backward on
//! chunk k + 1's (the gradient of its keys and values; each chunk's backward runs in micro-batch
//! order here); the cost of the packing solver; data-parallel
//! replicas drawing different samples (every replica is assumed to get a sample like this one).

use super::layer::{LayerKinds, gemm};
use super::memory;
use super::policy::{ContextAlgorithm, Packing, Recompute};
use super::schedule;
use super::setup::Training;
use crate::engine::RngStreams;
use crate::hw::{ComputeModel, Kernel, KernelCost};
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::sequences::SequenceLengths;
use crate::scenario::serving::DistributionKind;
use crate::stats::math::{exp, ln};
use crate::stats::variate::normal;
use rand::RngExt;
use serde_json::{Value, json};

/// Part of one sequence in a micro-batch: `tokens` of it, after `offset` tokens of the same
/// sequence that earlier chunks carried.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub sequence: u32,
    pub tokens: u64,
    pub offset: u64,
}

/// One micro-batch: its sequences or chunks, and the tokens its GEMMs run (with padding).
#[derive(Clone, Debug, PartialEq)]
pub struct MicroBatch {
    pub segments: Vec<Segment>,
    pub tokens: u64,
}

impl MicroBatch {
    /// Tokens of real sequences (no padding).
    pub fn real_tokens(&self) -> u64 {
        self.segments.iter().map(|s| s.tokens).sum()
    }
}

/// The step's sequences and micro-batches.
#[derive(Clone, Debug)]
pub struct Sequences {
    pub packing: Packing,
    /// Lengths of one data-parallel replica's sequences this step.
    pub lengths: Vec<u64>,
    pub micro_batch_tokens: u64,
    pub micro_batches: Vec<MicroBatch>,
    /// Per stage and micro-batch: recomputed in full in the backward (true) or kept. Filled by
    /// [`choose_recompute`].
    pub recompute: Vec<Vec<bool>>,
}

/// Reads `[sequences]` (None without it). `pp` and `cp` are the scenario's degrees; the
/// micro-batches follow from the lengths and the policy.
pub fn resolve(
    s: &Scenario,
    model: &crate::model::Transformer,
    pp: u32,
    cp: u32,
    assumptions: &mut Vec<String>,
) -> Result<Option<Sequences>, ScenarioError> {
    let Some(q) = &s.file.sequences else {
        return Ok(None);
    };
    let p = &s.file.parallel;
    s.refuse_set(
        &[
            (p.micro_batch.is_some(), "parallel.micro_batch"),
            (p.global_batch.is_some(), "parallel.global_batch"),
        ],
        |_| "with [sequences] the micro-batches come from packing the step's sequences".into(),
        "remove this key; [sequences] count (or its list of lengths) is the batch, \
         micro_batch_tokens the micro-batch",
    )?;
    if s.file.model.attention_kernel == Some(crate::hw::attention_kernel::AttentionKernel::Unfused)
    {
        return Err(s
            .error_at(
                "model.attention_kernel",
                "sequences of unlike lengths are modelled with fused (varlen) attention",
            )
            .with_help("remove attention_kernel, or use \"flash2\" or \"flash3\""));
    }
    if matches!(p.recompute, Some(Recompute::Adaptive | Recompute::Op)) {
        return Err(s
            .error_at(
                "parallel.recompute",
                "adaptive and per-operator recomputation are modelled for one micro-batch shape; \
                 [sequences] has many",
            )
            .with_help("use packing = \"elastic\" (it chooses recomputation per micro-batch and stage), or none, selective or full"));
    }
    let seed = s.file.sim.seed.unwrap_or(1);
    let lengths: Vec<u64> = match &q.lengths {
        None => {
            return Err(s
                .error_at("sequences", "[sequences] needs `lengths`")
                .with_help("a list, lengths = [65536, 4096, 900], or a distribution, lengths = { dist = \"lognormal\", mean = 8000, sigma = 1.2, max = 131072 } with count"));
        }
        Some(SequenceLengths::List(list)) => {
            if q.count.is_some() {
                return Err(s
                    .error_at(
                        "sequences.count",
                        "a list of lengths is the step's sequences; count is for a distribution",
                    )
                    .with_help("remove count"));
            }
            if list.is_empty() {
                return Err(s.error_at("sequences.lengths", "the list of lengths is empty"));
            }
            if let Some(i) = list.iter().position(|&l| l == 0) {
                return Err(s.error_at(
                    &format!("sequences.lengths.{i}"),
                    format!("sequence {i} has no tokens; a length is at least 1"),
                ));
            }
            list.iter().map(|&l| l as u64).collect()
        }
        Some(SequenceLengths::Distribution(d)) => {
            let count = match q.count {
                Some(0) => {
                    return Err(s
                        .error_at("sequences.count", "a step has at least one sequence")
                        .with_help("e.g. count = 64"));
                }
                Some(n) => n,
                None => {
                    return Err(s
                        .error_at("sequences.count", "a distribution of lengths needs `count`: sequences per replica and step")
                        .with_help("e.g. count = 64"));
                }
            };
            sample(s, d, count, seed)?
        }
    };
    let packing = match q.packing {
        Some(k) => k,
        None => {
            return Err(s
                .error_at("sequences.packing", "[sequences] needs `packing`")
                .with_help("\"fixed\" (padded micro-batches), \"sequence-parallel\" (split over cp ranks) or \"elastic\" (InfiniPipe: split long, pack short)"));
        }
    };
    let longest = *lengths.iter().max().expect("at least one sequence");
    let cap = match q.micro_batch_tokens {
        Some(0) => {
            return Err(s.error_at(
                "sequences.micro_batch_tokens",
                "a micro-batch holds at least one token",
            ));
        }
        Some(c) => c as u64,
        None => {
            assumptions.push(format!(
                "micro-batches of up to {longest} tokens (the longest sequence; sequences.micro_batch_tokens)"
            ));
            longest
        }
    };
    match packing {
        Packing::Fixed | Packing::SequenceParallel if cap < longest => {
            return Err(s
                .error_at(
                    "sequences.micro_batch_tokens",
                    format!(
                        "{} packing keeps sequences whole, and the longest has {longest} tokens, more than {cap}",
                        packing.name()
                    ),
                )
                .with_help(format!("micro_batch_tokens = {longest} or more, or packing = \"elastic\" (which splits long sequences)")));
        }
        Packing::SequenceParallel if cp < 2 => {
            return Err(s
                .error_at(
                    "sequences.packing",
                    "the sequence-parallel baseline splits each micro-batch over context-parallel ranks, and cp = 1",
                )
                .with_help("set [parallel] cp = 2 or more"));
        }
        Packing::Fixed | Packing::Elastic if cp > 1 => {
            return Err(s
                .error_at(
                    "parallel.cp",
                    format!(
                        "{} packing is modelled without context parallelism",
                        packing.name()
                    ),
                )
                .with_help("use cp = 1, or packing = \"sequence-parallel\""));
        }
        _ => {}
    }
    if packing == Packing::SequenceParallel && !cap.is_multiple_of(cp as u64) {
        return Err(s
            .error_at(
                "sequences.micro_batch_tokens",
                format!("{cap} tokens do not split evenly over cp = {cp} ranks"),
            )
            .with_help(format!(
                "use a multiple of {cp}, e.g. {}",
                cap.next_multiple_of(cp as u64)
            )));
    }
    if q.micro_batches.is_some() && packing != Packing::Elastic {
        return Err(s
            .error_at(
                "sequences.micro_batches",
                "micro_batches is the elastic policy's; the other policies pack as many as the tokens need",
            )
            .with_help("remove it, or use packing = \"elastic\""));
    }
    // Every micro-batch is built: at least the tokens over the cap of them (or as many as asked).
    let at_least =
        (lengths.iter().sum::<u64>().div_ceil(cap)).max(q.micro_batches.unwrap_or(0) as u64);
    let most = super::layout::MAX_ACCUMULATION as u64;
    if at_least > most {
        let (key, help) = match q.micro_batches {
            Some(n) if n as u64 > most => (
                "sequences.micro_batches",
                format!("micro_batches = {most} or fewer"),
            ),
            _ => (
                "sequences.micro_batch_tokens",
                "raise micro_batch_tokens, or draw fewer sequences".to_string(),
            ),
        };
        return Err(s
            .error_at(
                key,
                format!(
                    "the sequences make {at_least} micro-batches or more a step; each is \
                     simulated, at most {most}"
                ),
            )
            .with_help(help));
    }
    let micro_batches = match packing {
        Packing::Fixed => pack_whole(&lengths, cap, true),
        Packing::SequenceParallel => pack_whole(&lengths, cap, false),
        Packing::Elastic => {
            let chunks_needed = lengths.iter().map(|l| l.div_ceil(cap)).max().unwrap_or(1);
            let total: u64 = lengths.iter().sum();
            let count = match q.micro_batches {
                Some(0) => {
                    return Err(s.error_at(
                        "sequences.micro_batches",
                        "a step has at least one micro-batch",
                    ));
                }
                Some(n) if (n as u64) < chunks_needed => {
                    return Err(s
                        .error_at(
                            "sequences.micro_batches",
                            format!("the longest sequence splits into {chunks_needed} chunks of at most {cap} tokens, each in a micro-batch of its own, and micro_batches = {n}"),
                        )
                        .with_help(format!("micro_batches = {chunks_needed} or more")));
                }
                Some(n) => n as u64,
                None => {
                    let n = total.div_ceil(cap).max(chunks_needed).max(pp as u64);
                    assumptions.push(format!(
                        "{n} elastic micro-batches (the tokens over micro_batch_tokens, at least pp and the longest sequence's chunks; sequences.micro_batches)"
                    ));
                    n
                }
            };
            elastic(&lengths, cap, count as usize, model)
        }
    };
    assumptions.push(format!(
        "{} sequences per replica and step ({} tokens) in {} micro-batches of unlike shapes ({} packing); every data-parallel replica assumed to draw a like sample",
        lengths.len(),
        lengths.iter().sum::<u64>(),
        micro_batches.len(),
        packing.name()
    ));
    Ok(Some(Sequences {
        packing,
        lengths,
        micro_batch_tokens: cap,
        micro_batches,
        recompute: Vec::new(),
    }))
}

/// `count` lengths drawn from `d` with the stream "sequence lengths" of `seed`.
fn sample(
    s: &Scenario,
    d: &crate::scenario::serving::LengthDistribution,
    count: u32,
    seed: u64,
) -> Result<Vec<u64>, ScenarioError> {
    let key = "sequences.lengths";
    let lo = d.min.unwrap_or(1).max(1) as f64;
    let hi = d.max.map_or(f64::MAX, |m| m as f64);
    if d.max == Some(0) || lo > hi {
        return Err(s.error_at(key, "min is above max, or max is 0").with_help(
            "e.g. { dist = \"lognormal\", mean = 8000, sigma = 1.2, min = 256, max = 131072 }",
        ));
    }
    let mut rng = RngStreams::new(seed).stream("sequence lengths");
    match d.dist {
        DistributionKind::Uniform => {
            let (Some(min), Some(max)) = (d.min, d.max) else {
                return Err(s
                    .error_at(key, "dist = \"uniform\" needs min and max")
                    .with_help("e.g. { dist = \"uniform\", min = 1024, max = 65536 }"));
            };
            Ok((0..count)
                .map(|_| rng.random_range(min.max(1)..=max) as u64)
                .collect())
        }
        DistributionKind::Lognormal => {
            let (Some(mean), Some(sigma)) = (d.mean, d.sigma) else {
                return Err(s
                    .error_at(key, "dist = \"lognormal\" needs mean and sigma")
                    .with_help(
                        "e.g. { dist = \"lognormal\", mean = 8000, sigma = 1.2, max = 131072 }",
                    ));
            };
            if !(mean.is_finite() && mean > 0.0 && sigma.is_finite() && sigma >= 0.0) {
                return Err(s.error_at(
                    key,
                    format!("mean must be positive and sigma non-negative, not {mean} and {sigma}"),
                ));
            }
            let mu = ln(mean) - sigma * sigma / 2.0;
            Ok((0..count)
                .map(|_| exp(mu + sigma * normal(&mut rng)).round().clamp(lo, hi) as u64)
                .collect())
        }
        DistributionKind::Empirical => Err(s
            .error_at(key, "an empirical file of lengths is not read for training")
            .with_help("write the lengths as a list: lengths = [65536, 4096, 900]")),
    }
}

/// Whole sequences, longest first, each into the first micro-batch with room for it (first-fit
/// decreasing) of `cap` tokens; `pad` gives every micro-batch `cap` tokens.
pub fn pack_whole(lengths: &[u64], cap: u64, pad: bool) -> Vec<MicroBatch> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(lengths[i]), i));
    let mut bins: Vec<MicroBatch> = Vec::new();
    for i in order {
        let seg = Segment {
            sequence: i as u32,
            tokens: lengths[i],
            offset: 0,
        };
        match bins.iter_mut().find(|b| b.tokens + lengths[i] <= cap) {
            Some(b) => {
                b.tokens += lengths[i];
                b.segments.push(seg);
            }
            None => bins.push(MicroBatch {
                segments: vec![seg],
                tokens: lengths[i],
            }),
        }
    }
    if pad {
        for b in &mut bins {
            b.tokens = cap;
        }
    }
    bins
}

/// Forward FLOPs of one layer over a part of a sequence (the balancing cost): the layer's
/// GEMMs, linear in tokens, and causal attention against its own and the earlier tokens.
fn segment_flops(m: &crate::model::Transformer, tokens: u64, offset: u64) -> f64 {
    let c = tokens as f64;
    2.0 * c * m.layer_params() as f64 + 4.0 * c * (offset as f64 + c / 2.0) * m.q_width() as f64
}

/// InfiniPipe's sequence processor: sequences longer than `cap` split into equal chunks, then
/// every sequence, dearest first, placed on the cheapest of `count` micro-batches with room (a
/// new one at the end when none has room): a split sequence's chunks one after another, each on
/// a later micro-batch than the chunk before it and priced with the keys before it; the whole
/// ones after, by the longest-processing-time rule.
pub fn elastic(
    lengths: &[u64],
    cap: u64,
    count: usize,
    m: &crate::model::Transformer,
) -> Vec<MicroBatch> {
    let empty = || MicroBatch {
        segments: Vec::new(),
        tokens: 0,
    };
    let mut bins: Vec<(MicroBatch, f64)> = (0..count).map(|_| (empty(), 0.0)).collect();
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by(|&a, &b| {
        let cost = |i: usize| segment_flops(m, lengths[i], 0);
        cost(b).total_cmp(&cost(a)).then(a.cmp(&b))
    });
    for i in order {
        let l = lengths[i];
        let n = l.div_ceil(cap);
        let mut offset = 0;
        // The first micro-batch this piece may take.
        let mut from = 0;
        for k in 0..n {
            // Equal chunks, the first ones one token longer when it does not divide.
            let tokens = l / n + u64::from(k < l % n);
            let cost = segment_flops(m, tokens, offset);
            // Leave room after it for the chunks still to come.
            let to = bins.len().saturating_sub((n - 1 - k) as usize);
            let best = (from..to)
                .filter(|&j| bins[j].0.tokens + tokens <= cap)
                .min_by(|&a, &b| bins[a].1.total_cmp(&bins[b].1).then(a.cmp(&b)));
            let j = best.unwrap_or_else(|| {
                bins.push((empty(), 0.0));
                bins.len() - 1
            });
            bins[j].0.tokens += tokens;
            bins[j].0.segments.push(Segment {
                sequence: i as u32,
                tokens,
                offset,
            });
            bins[j].1 += cost;
            offset += tokens;
            from = j + 1;
        }
    }
    bins.into_iter()
        .map(|(b, _)| b)
        .filter(|b| b.tokens > 0)
        .collect()
}

/// The shape of one micro-batch as the step builder prices it.
pub(super) struct Shape {
    /// Tokens one GPU's GEMMs see (the micro-batch's, over the context-parallel ranks).
    pub t: u64,
    /// Bytes of the micro-batch's activations at a tensor-parallel synchronisation.
    pub act: f64,
    /// Bytes a stage sends to the next.
    pub p2p: f64,
    pub output: Kernel,
    pub kinds: LayerKinds,
    /// Attention as one kernel per sequence or chunk (forward; one ring block under
    /// context parallelism); empty: the layer's own attention kernel prices it.
    pub attention: Vec<Kernel>,
    /// Bytes one rank exchanges in an expert-parallel all-to-all.
    pub routed_bytes: f64,
}

impl Shape {
    /// Every micro-batch alike: `micro_batch` sequences of the model's length.
    pub(super) fn uniform(s: &Training) -> Shape {
        let m = &s.model;
        let tokens = s.micro_batch as u64 * m.seq_len as u64;
        Shape::of(s, m.clone(), s.micro_batch as u64, tokens, Vec::new())
    }

    /// A packed micro-batch of [`Sequences`], priced by its own segments.
    pub(super) fn packed(s: &Training, mb: &MicroBatch) -> Shape {
        let mut m = s.model.clone();
        m.seq_len = u32::try_from(mb.tokens).expect("a micro-batch's tokens fit in u32");
        let heads = s.model.heads as u64 / s.tp as u64;
        let cp = s.cp as u64;
        let attention = |q_len, kv_len| Kernel::Attention {
            batch_heads: heads,
            q_len,
            kv_len,
            head_dim: s.model.head_dim(),
            causal: true,
            backward: false,
            dtype: s.model.dtype,
        };
        let mut parts = Vec::new();
        for seg in &mb.segments {
            if cp > 1 {
                let local = seg.tokens.div_ceil(cp);
                parts.push(match s.cp_algorithm {
                    ContextAlgorithm::Ring => attention(local, local),
                    ContextAlgorithm::AllGather => attention(local, seg.tokens),
                });
            } else {
                parts.push(attention(seg.tokens, seg.tokens));
                if seg.offset > 0 {
                    let mut earlier = attention(seg.tokens, seg.offset);
                    if let Kernel::Attention { causal, .. } = &mut earlier {
                        *causal = false;
                    }
                    parts.push(earlier);
                }
            }
        }
        Shape::of(s, m, 1, mb.tokens, parts)
    }

    fn of(
        s: &Training,
        m: crate::model::Transformer,
        mb: u64,
        tokens: u64,
        attention: Vec<Kernel>,
    ) -> Shape {
        let (tp, cp) = (s.tp as u64, s.cp as u64);
        let t = tokens / cp;
        let h = m.hidden as u64;
        let act = (t * h) as f64 * m.dtype.bytes();
        let kinds = LayerKinds::new(
            &m,
            mb,
            (cp, tp, s.ep as u64),
            s.sequence_parallel,
            s.gemm_dtype,
            s.eager,
        );
        Shape {
            t,
            act,
            p2p: act / tp as f64,
            output: gemm(t, m.vocab as u64 / tp, h, m.dtype),
            kinds,
            attention,
            routed_bytes: m.moe.as_ref().map_or(0.0, |moe| {
                t as f64 * moe.top_k as f64 * h as f64 * m.dtype.bytes()
            }),
        }
    }
}

/// The price of an attention kernel `kernel` given as `parts` (one per sequence or chunk, in the
/// forward): each part priced in `kernel`'s pass and the times, FLOPs and bytes added (one
/// varlen launch: the launch overheads of all but one are not taken back, a small overestimate).
pub(super) fn parts_cost(compute: &ComputeModel, parts: &[Kernel], kernel: &Kernel) -> KernelCost {
    let backward = matches!(kernel, Kernel::Attention { backward: true, .. });
    let mut total: Option<KernelCost> = None;
    let mut energy = 0.0;
    for part in parts {
        let mut k = *part;
        if let Kernel::Attention { backward: b, .. } = &mut k {
            *b = backward;
        }
        let c = compute
            .cost(&k)
            .expect("the set-up checked that the GPU computes in the model's format");
        energy += c.watts * c.seconds;
        total = Some(match total {
            None => c,
            Some(t) => KernelCost {
                seconds: t.seconds + c.seconds,
                flops: t.flops + c.flops,
                bytes: t.bytes + c.bytes,
                memory_bound: t.memory_bound && c.memory_bound,
                ..t
            },
        });
    }
    let mut total = total.expect("a micro-batch has at least one sequence");
    if total.seconds > 0.0 {
        total.watts = energy / total.seconds;
    }
    total
}

impl Training {
    /// Whether the backward of micro-batch `micro` on pipeline stage `stage` recomputes its
    /// forward: the elastic policy's choice per stage and micro-batch, else full recomputation.
    pub fn recomputes(&self, stage: u32, micro: u32) -> bool {
        match &self.sequences {
            Some(q) if !q.recompute.is_empty() => {
                // (an asynchronous pipeline's steady state runs the step's micro-batches twice)
                let row = &q.recompute[stage as usize];
                row[micro as usize % row.len()]
            }
            _ => self.recompute == Recompute::Full,
        }
    }
}

/// Activation bytes one layer keeps for micro-batch `mb` (its tokens before context
/// parallelism), kept or recomputed.
fn held(s: &Training, mb: &MicroBatch, recomputed: bool) -> f64 {
    let m = &s.model;
    let t = mb.tokens as f64 / s.cp as f64;
    if recomputed {
        let input = t * m.hidden as f64 * m.dtype.bytes();
        if s.sequence_parallel {
            input / s.tp as f64
        } else {
            input
        }
    } else {
        memory::layer_activations_tokens(s, t)
    }
}

/// Bytes one layer keeps of the keys and values of the earlier chunks of the sequences that
/// micro-batches `window` continue: for each such sequence, everything before its latest chunk
/// in the window (kept once, whichever of its chunks reads it).
fn earlier_keys(s: &Training, q: &Sequences, window: std::ops::Range<usize>) -> f64 {
    let m = &s.model;
    let mut latest: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    for mb in &q.micro_batches[window] {
        for g in mb.segments.iter().filter(|g| g.offset > 0) {
            let e = latest.entry(g.sequence).or_default();
            *e = (*e).max(g.offset);
        }
    }
    let tokens: u64 = latest.values().sum();
    2.0 * tokens as f64 * (m.kv_heads as u64 * m.head_dim()) as f64 * m.dtype.bytes() / s.tp as f64
}

/// The `in_flight` consecutive micro-batches that hold the most on stage `stage` (of `layers`
/// layers each), and their bytes: each kept or recomputed as chosen, with the keys and values
/// of earlier chunks their sequences need.
fn worst_window(
    s: &Training,
    q: &Sequences,
    stage: u32,
    layers: f64,
    in_flight: usize,
) -> (f64, std::ops::Range<usize>) {
    let n = q.micro_batches.len();
    let w = in_flight.clamp(1, n);
    let bytes: Vec<f64> = q
        .micro_batches
        .iter()
        .enumerate()
        .map(|(i, mb)| layers * held(s, mb, s.recomputes(stage, i as u32)))
        .collect();
    (0..=n - w)
        .map(|start| {
            let window = start..start + w;
            let held: f64 = bytes[window.clone()].iter().sum();
            (held + layers * earlier_keys(s, q, window.clone()), window)
        })
        .fold((f64::NEG_INFINITY, 0..w), |best, next| {
            if next.0 > best.0 { next } else { best }
        })
}

/// Activation bytes of stage `stage` that holds `in_flight` micro-batches of `layers` layers
/// each: its worst run of `in_flight` consecutive micro-batches (schedule order) as they are
/// kept, with the earlier chunks' keys and values, and while one is recomputed, one layer of the
/// largest recomputed one in full.
pub fn stage_activations(
    s: &Training,
    q: &Sequences,
    stage: u32,
    layers: f64,
    in_flight: usize,
) -> f64 {
    let (window, _) = worst_window(s, q, stage, layers, in_flight);
    let rebuilt = q
        .micro_batches
        .iter()
        .enumerate()
        .filter(|(i, _)| s.recomputes(stage, *i as u32))
        .map(|(_, mb)| held(s, mb, false))
        .fold(0.0, f64::max);
    window + rebuilt
}

/// Micro-batches a stage keeps in flight under the schedule.
pub fn in_flight(s: &Training, stage: u32) -> usize {
    let total = s.accumulation * s.virtual_stages;
    if s.pp > 1 {
        (schedule::warmup(s.schedule, s.pp, s.virtual_stages, s.accumulation, stage) + 1).min(total)
            as usize
    } else {
        1
    }
}

/// Tokens of the largest micro-batch (its logits are the largest).
pub fn largest_tokens(q: &Sequences) -> u64 {
    q.micro_batches.iter().map(|m| m.tokens).max().unwrap_or(0)
}

/// Fills `s.sequences.recompute`: the scenario's recomputation for every micro-batch under the
/// fixed and sequence-parallel policies, and under the elastic one with recompute = "full";
/// otherwise under the elastic one, per stage, kept unless the
/// stage's memory (its capacity less what is not activations) cannot hold its in-flight
/// micro-batches, the kept micro-batch freeing the most bytes per recomputed FLOP recomputed
/// first until they fit (or all are recomputed).
pub fn choose_recompute(s: &mut Training) {
    let Some(q) = s.sequences.clone() else {
        return;
    };
    let n = q.micro_batches.len();
    let uniform = s.recompute == Recompute::Full;
    let mut choice = vec![vec![uniform; n]; s.pp as usize];
    if q.packing == Packing::Elastic && !uniform {
        s.assumptions.push(
            "elastic packing: each stage keeps or recomputes each micro-batch to fit its memory \
             (chunk-level checkpointing; recompute = \"full\" recomputes them all)"
                .into(),
        );
        choice = vec![vec![false; n]; s.pp as usize];
        for stage in 0..s.pp {
            if let Some(seq) = s.sequences.as_mut() {
                seq.recompute = choice.clone();
            }
            let mem = memory::stage_memory(s, stage);
            let budget = s.memory_cap - (mem.peak() - mem.activations);
            let layers = per_chunk_layers(s, stage);
            let window = in_flight(s, stage);
            loop {
                if let Some(seq) = s.sequences.as_mut() {
                    seq.recompute = choice.clone();
                }
                if stage_activations(s, &q, stage, layers, window) <= budget {
                    break;
                }
                // The kept micro-batch of the worst window that frees the most bytes per FLOP
                // rerun.
                let (_, worst) = worst_window(s, &q, stage, layers, window);
                let best = worst
                    .filter(|&i| !choice[stage as usize][i])
                    .map(|i| {
                        let mb = &q.micro_batches[i];
                        let freed = held(s, mb, false) - held(s, mb, true);
                        let flops: f64 = mb
                            .segments
                            .iter()
                            .map(|g| segment_flops(&s.model, g.tokens, g.offset))
                            .sum::<f64>()
                            + 2.0
                                * (mb.tokens - mb.real_tokens()) as f64
                                * s.model.layer_params() as f64;
                        (i, freed / flops.max(1.0))
                    })
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
                match best {
                    Some((i, _)) => choice[stage as usize][i] = true,
                    None => break,
                }
            }
        }
    }
    if let Some(seq) = s.sequences.as_mut() {
        seq.recompute = choice;
    }
}

/// Layers of the stage's largest model chunk.
pub fn per_chunk_layers(s: &Training, stage: u32) -> f64 {
    (0..s.virtual_stages)
        .map(|c| s.chunk_layers(c * s.pp + stage).len())
        .max()
        .unwrap_or(0) as f64
}

/// Model FLOPs of one step (the module convention of `mod.rs`: GEMMs of real tokens, attention
/// non-causal, 4 s^2 h per layer and sequence, backward twice the forward), over every replica.
pub fn model_flops(s: &Training, q: &Sequences) -> f64 {
    let m = &s.model;
    let h = m.hidden as f64;
    let layer_weights = (m.active_params() - m.embedding_params()) as f64;
    let per_replica: f64 = q
        .lengths
        .iter()
        .map(|&l| {
            let l = l as f64;
            2.0 * l * (layer_weights + m.vocab as f64 * h) + m.layers as f64 * 4.0 * l * l * h
        })
        .sum();
    3.0 * s.dp as f64 * per_replica
}

/// FLOPs of the recomputed forwards, every stage and replica: each recomputed micro-batch's
/// forward over the stage's layers (padding included, attention non-causal as in the model
/// FLOPs).
pub fn recomputed_flops(s: &Training, q: &Sequences) -> f64 {
    let m = &s.model;
    let per_layer_weights = (m.active_params() - m.embedding_params()) as f64 / m.layers as f64;
    let h = m.hidden as f64;
    let mut total = 0.0;
    for stage in 0..s.pp {
        let layers = s.stage_layers(stage) as f64;
        for (i, mb) in q.micro_batches.iter().enumerate() {
            if s.recomputes(stage, i as u32) {
                let attention: f64 = mb
                    .segments
                    .iter()
                    .map(|g| 4.0 * g.tokens as f64 * (g.offset + g.tokens) as f64 * h)
                    .sum();
                total += layers * (2.0 * mb.tokens as f64 * per_layer_weights + attention);
            }
        }
    }
    s.dp as f64 * total
}

/// Tokens of real sequences per step, every replica.
pub fn tokens(s: &Training, q: &Sequences) -> f64 {
    s.dp as f64 * q.lengths.iter().sum::<u64>() as f64
}

/// The report's `sequences` section.
pub fn report(s: &Training, q: &Sequences) -> Value {
    let tokens: Vec<u64> = q.micro_batches.iter().map(|m| m.tokens).collect();
    let real: u64 = q.micro_batches.iter().map(|m| m.real_tokens()).sum();
    let padded: u64 = tokens.iter().sum::<u64>() - real;
    let split = q
        .lengths
        .iter()
        .filter(|&&l| l > q.micro_batch_tokens)
        .count();
    json!({
        "packing": q.packing.name(),
        "sequences": q.lengths.len(),
        "tokens": q.lengths.iter().sum::<u64>(),
        "longest": q.lengths.iter().max(),
        "mean_length": q.lengths.iter().sum::<u64>() as f64 / q.lengths.len() as f64,
        "micro_batch_tokens": q.micro_batch_tokens,
        "micro_batches": q.micro_batches.len(),
        "micro_batch_tokens_min": tokens.iter().min(),
        "micro_batch_tokens_max": tokens.iter().max(),
        "padding_tokens": padded,
        "split_sequences": split,
        "recomputed_micro_batches_by_stage": (0..s.pp)
            .map(|st| (0..q.micro_batches.len()).filter(|&i| s.recomputes(st, i as u32)).count())
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A Llama 2 7B scenario on 4 A100 in 4 stages with `extra` appended (a `[sequences]`
    /// table, or `[parallel]` batch keys).
    fn text(parallel: &str, extra: &str) -> String {
        format!(
            r#"
kind = "training"
[cluster]
gpu = "A100-80GB"
nodes = 1
gpus_per_node = 4
[model]
preset = "llama-2-7b"
seq_len = 8192
[parallel]
pp = 4
schedule = "1f1b"
recompute = "full"
{parallel}
{extra}
"#
        )
    }

    fn report(text: &str) -> Value {
        let s = Scenario::parse(Path::new("t.toml"), text.to_string(), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        crate::workload::training::simulate(&s)
            .unwrap_or_else(|e| panic!("{e}"))
            .report
    }

    fn error(text: &str) -> String {
        let s = Scenario::parse(Path::new("t.toml"), text.to_string(), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        match crate::workload::training::simulate(&s) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn like_lengths_give_the_fixed_path_to_the_picosecond() {
        let fixed = report(&text("micro_batch = 1\nglobal_batch = 8", ""));
        let list = report(&text(
            "",
            "[sequences]\nlengths = [8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192]\npacking = \"fixed\"\nmicro_batch_tokens = 8192",
        ));
        for key in ["iteration_time_s", "tokens_per_s", "tflops_per_gpu", "hfu"] {
            assert_eq!(fixed[key], list[key], "{key}");
        }
        assert_eq!(fixed["breakdown_s"], list["breakdown_s"]);
        assert_eq!(
            fixed["memory"]["peak_bytes_per_gpu"],
            list["memory"]["peak_bytes_per_gpu"]
        );
        assert_eq!(list["sequences"]["micro_batches"], 8);
    }

    #[test]
    fn attention_is_priced_by_each_sequence_not_the_packed_length() {
        // Four micro-batches of 32,768 tokens each: one long sequence, or eight of 4,096.
        let long = report(&text(
            "",
            "[sequences]\nlengths = [32768, 32768, 32768, 32768]\npacking = \"fixed\"",
        ));
        let short = format!(
            "[sequences]\nlengths = [{}]\npacking = \"fixed\"\nmicro_batch_tokens = 32768",
            ["4096"; 32].join(", ")
        );
        let short = report(&text("", &short));
        assert_eq!(
            long["sequences"]["micro_batches"],
            short["sequences"]["micro_batches"]
        );
        assert_eq!(
            long["tokens_per_s"].as_f64().unwrap() * long["iteration_time_s"].as_f64().unwrap(),
            short["tokens_per_s"].as_f64().unwrap() * short["iteration_time_s"].as_f64().unwrap()
        );
        let it = |r: &Value| r["iteration_time_s"].as_f64().unwrap();
        // Attention is most of a 32K sequence's work at 7B; a eighth of it leaves the GEMMs.
        assert!(
            it(&short) < 0.7 * it(&long),
            "{} vs {}",
            it(&short),
            it(&long)
        );
        // Model FLOPs count each sequence's own quadratic attention.
        let flops = |r: &Value| r["flops"]["model_per_step"].as_f64().unwrap();
        assert!(flops(&short) < flops(&long));
    }

    #[test]
    fn each_micro_batch_flows_through_the_pipeline_with_its_own_durations() {
        // One 32K sequence, then four micro-batches of eight 4K sequences (2 ranks each).
        let lengths = format!("[32768, {}]", ["4096"; 32].join(", "));
        let t = text(
            "cp = 2\ncp_algorithm = \"ring\"",
            &format!("[sequences]\nlengths = {lengths}\npacking = \"sequence-parallel\"\nmicro_batch_tokens = 32768"),
        )
        .replace("pp = 4", "pp = 2");
        let s = Scenario::parse(Path::new("t.toml"), t, &[]).unwrap_or_else(|e| panic!("{e}"));
        let run = crate::workload::training::simulate(&s).unwrap_or_else(|e| panic!("{e}"));
        // Forward attention time of the first stage's first layer, per micro-batch.
        let mut by_micro = std::collections::BTreeMap::new();
        for op in &run.graph.ops {
            if op.name == "attention" && op.layer == Some(0) && op.model_flops {
                *by_micro.entry(op.micro_batch.unwrap()).or_insert(0.0) +=
                    op.duration.as_secs_f64();
            }
        }
        let times: Vec<f64> = by_micro.values().copied().collect();
        assert_eq!(times.len(), 5);
        // The long sequence's micro-batch (packed first: longest first) costs about eight of the
        // others' attention (32K^2 against 8 x 4K^2).
        let ratio = times[0] / times[1];
        assert!((5.0..10.0).contains(&ratio), "{times:?}");
        assert!(
            times[1..]
                .iter()
                .all(|&x| (x - times[1]).abs() < 1e-9 * times[1])
        );
        assert!(
            run.report["breakdown_s"]["pipeline_bubble"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }

    #[test]
    fn elastic_splits_what_fixed_cannot_hold_and_recomputes_by_stage() {
        let lengths = "lengths = [65536, 2048, 2048, 2048, 2048, 1024, 1024, 512, 8192, 4096]";
        let elastic = report(
            &text(
                "",
                &format!(
                    "[sequences]\n{lengths}\npacking = \"elastic\"\nmicro_batch_tokens = 8192"
                ),
            )
            .replace("recompute = \"full\"", "recompute = \"none\""),
        );
        assert_eq!(elastic["sequences"]["split_sequences"], 1);
        assert!(
            elastic["sequences"]["micro_batch_tokens_max"]
                .as_u64()
                .unwrap()
                <= 8192
        );
        let by_stage = elastic["sequences"]["recomputed_micro_batches_by_stage"]
            .as_array()
            .unwrap();
        let n = |i: usize| by_stage[i].as_u64().unwrap();
        assert!(n(0) >= n(3), "{by_stage:?}");
        assert_eq!(elastic["memory"]["fits"], true);
        let e = error(&text(
            "",
            &format!("[sequences]\n{lengths}\npacking = \"fixed\"\nmicro_batch_tokens = 8192"),
        ));
        assert!(e.contains("t.toml:") && e.contains("65536"), "{e}");
    }

    #[test]
    fn bad_values_are_located() {
        let e = error(&text(
            "micro_batch = 2",
            "[sequences]\nlengths = [100]\npacking = \"fixed\"",
        ));
        assert!(e.contains("t.toml:14:") && e.contains("micro_batch"), "{e}");
        let e = error(&text(
            "",
            "[sequences]\nlengths = [100, 0]\npacking = \"fixed\"",
        ));
        assert!(e.contains("sequence 1 has no tokens"), "{e}");
        let e = error(&text(
            "",
            "[sequences]\nlengths = [100]\npacking = \"sequence-parallel\"",
        ));
        assert!(e.contains("cp = 1"), "{e}");
        let e = error(&text(
            "",
            "[sequences]\nlengths = { dist = \"lognormal\", mean = 100, sigma = 1 }\npacking = \"fixed\"",
        ));
        assert!(e.contains("count"), "{e}");
        let s = Scenario::parse(
            Path::new("t.toml"),
            text("", "[sequences]\nlengths = [1]\npacking = \"packed\""),
            &[],
        );
        assert!(s.is_err());
        // Five micro-batches for an interleaved schedule over 4 stages: said at [sequences].
        let t = text(
            "virtual_stages = 2",
            "[sequences]\nlengths = [100, 100, 100, 100, 100]\npacking = \"fixed\"",
        )
        .replace("\"1f1b\"", "\"interleaved-1f1b\"");
        let e = error(&t);
        assert!(
            e.contains("t.toml:") && e.contains("[sequences] packed"),
            "{e}"
        );
    }

    #[test]
    fn an_asynchronous_pipeline_repeats_the_step_s_micro_batches() {
        let lengths = "lengths = [16384, 2048, 2048, 4096, 8192, 1024]";
        let t = text(
            "",
            &format!("[sequences]\n{lengths}\npacking = \"elastic\"\nmicro_batch_tokens = 8192"),
        );
        let flushed = report(&t);
        let steady = report(&t.replace("\"1f1b\"", "\"async-1f1b\""));
        let it = |r: &Value| r["iteration_time_s"].as_f64().unwrap();
        // No flush between steps: the steady state is shorter than a step from empty.
        assert!(it(&steady) > 0.0 && it(&steady) < it(&flushed));
    }

    #[test]
    fn samples_are_deterministic_by_seed() {
        let t = text(
            "",
            "[sequences]\nlengths = { dist = \"lognormal\", mean = 2000, sigma = 1.2, max = 32768 }\ncount = 32\npacking = \"elastic\"\nmicro_batch_tokens = 8192\n[sim]\nseed = 3",
        );
        let a = report(&t);
        let b = report(&t);
        assert_eq!(a.to_string(), b.to_string());
        let c = report(&t.replace("seed = 3", "seed = 4"));
        assert_ne!(a["sequences"]["tokens"], c["sequences"]["tokens"]);
    }

    #[test]
    fn first_fit_decreasing_packs_whole_sequences() {
        let bins = pack_whole(&[100, 30, 60, 40, 70], 100, false);
        let tokens: Vec<u64> = bins.iter().map(|b| b.tokens).collect();
        assert_eq!(tokens, vec![100, 100, 100]);
        let padded = pack_whole(&[50, 20], 100, true);
        assert_eq!(padded.len(), 1);
        assert_eq!((padded[0].tokens, padded[0].real_tokens()), (100, 70));
    }

    #[test]
    fn elastic_splits_long_sequences_into_ordered_chunks_and_packs_short_ones() {
        let m = crate::model::preset::find("llama-2-7b").expect("a preset");
        let bins = elastic(&[1000, 100, 100, 100, 100], 400, 4, &m);
        // The long one in three chunks on distinct micro-batches, each after the one before.
        let mut chunks: Vec<Segment> = bins
            .iter()
            .flat_map(|b| b.segments.iter().copied())
            .filter(|g| g.sequence == 0)
            .collect();
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks.iter().map(|g| g.tokens).sum::<u64>(), 1000);
        chunks.sort_by_key(|g| g.offset);
        assert_eq!(chunks[0].offset, 0);
        assert_eq!(chunks[1].offset, chunks[0].tokens);
        assert!(bins.iter().all(|b| b.tokens <= 400));
        let all: u64 = bins.iter().map(|b| b.real_tokens()).sum();
        assert_eq!(all, 1400);
    }
}
