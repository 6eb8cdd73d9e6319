//! Reading `[sequences]`: the step's lengths (a list, or a seeded sample of a distribution),
//! the packing policy's checks, and the micro-batches it packs.

use crate::engine::RngStreams;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::sequences::{SequenceLengths, SequencesSection};
use crate::scenario::serving::DistributionKind;
use crate::stats::variate::{lognormal, lognormal_mu};
use crate::workload::training::policy::{Packing, Recompute};
use crate::workload::training::sequences::Sequences;
use crate::workload::training::sequences::packing::{elastic, pack_whole};
use rand::RngExt;

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
    let lengths = read_lengths(s, q, seed)?;
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
    check_packing(s, q, packing, &lengths, longest, cap, cp)?;
    let micro_batches = match packing {
        Packing::Fixed => pack_whole(&lengths, cap, true),
        Packing::SequenceParallel => pack_whole(&lengths, cap, false),
        Packing::Elastic => {
            let count = elastic_count(s, q, &lengths, cap, pp, assumptions)?;
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

/// The most sequences a step may draw from a distribution (per replica).
pub const MAX_SEQUENCES: u32 = 1 << 20;

/// The step's lengths: the list, or `count` drawn from the distribution with `seed`.
fn read_lengths(s: &Scenario, q: &SequencesSection, seed: u64) -> Result<Vec<u64>, ScenarioError> {
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
                Some(n) if n > MAX_SEQUENCES => {
                    return Err(s
                        .error_at(
                            "sequences.count",
                            format!("count = {n} is more than {MAX_SEQUENCES} sequences a step"),
                        )
                        .with_help(
                            "each sequence's length is drawn and packed; a step of more is \
                             beyond what the packing simulates",
                        ));
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
    Ok(lengths)
}

/// Refuses a packing policy that cannot run these lengths at `cap` tokens and `cp` ranks, and
/// more micro-batches than are simulated.
fn check_packing(
    s: &Scenario,
    q: &SequencesSection,
    packing: Packing,
    lengths: &[u64],
    longest: u64,
    cap: u64,
    cp: u32,
) -> Result<(), ScenarioError> {
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
    let most = crate::workload::training::layout::MAX_ACCUMULATION as u64;
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
    Ok(())
}

/// The elastic policy's micro-batches: as asked, or the tokens over `cap`, at least `pp` and
/// the longest sequence's chunks (recorded as an assumption).
fn elastic_count(
    s: &Scenario,
    q: &SequencesSection,
    lengths: &[u64],
    cap: u64,
    pp: u32,
    assumptions: &mut Vec<String>,
) -> Result<u64, ScenarioError> {
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
    Ok(count)
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
            let mu = lognormal_mu(mean, sigma);
            Ok((0..count)
                .map(|_| lognormal(&mut rng, mu, sigma).round().clamp(lo, hi) as u64)
                .collect())
        }
        DistributionKind::Empirical => Err(s
            .error_at(key, "an empirical file of lengths is not read for training")
            .with_help("write the lengths as a list: lengths = [65536, 4096, 900]")),
    }
}

#[cfg(test)]
mod tests;
