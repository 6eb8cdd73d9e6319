//! Packing the step's sequences into micro-batches: whole sequences first-fit decreasing, or
//! InfiniPipe's elastic split of long sequences into chunks balanced by forward FLOPs.

use super::{MicroBatch, Segment};

/// Whole sequences, longest first, each into the first micro-batch with room for it (first-fit
/// decreasing) of `cap` tokens; `pad` gives every micro-batch `cap` tokens.
pub(crate) fn pack_whole(lengths: &[u64], cap: u64, pad: bool) -> Vec<MicroBatch> {
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
pub(super) fn segment_flops(m: &crate::model::Transformer, tokens: u64, offset: u64) -> f64 {
    let c = tokens as f64;
    2.0 * c * m.layer_params() as f64 + 4.0 * c * (offset as f64 + c / 2.0) * m.q_width() as f64
}

/// InfiniPipe's sequence processor: sequences longer than `cap` split into equal chunks, then
/// every sequence, dearest first, placed on the cheapest of `count` micro-batches with room (a
/// new one at the end when none has room): a split sequence's chunks one after another, each on
/// a later micro-batch than the chunk before it and priced with the keys before it; the whole
/// ones after, by the longest-processing-time rule.
pub(crate) fn elastic(
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

#[cfg(test)]
mod tests {
    use super::*;

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
