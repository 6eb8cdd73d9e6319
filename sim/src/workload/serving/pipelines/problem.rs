//! The placement problem of a fleet placed layer by layer: each server's speed by the number of
//! layers it holds, for the traffic's request lengths, and the rate of the links between
//! servers.

use super::super::cost::{Batch, Sends};
use super::super::placement::Problem;
use super::super::request::Request;
use super::{Engine, ServerGroup};

/// The requests' lengths, as the placement sees them.
#[derive(Clone, Copy, Debug)]
pub struct Lengths {
    pub mean_prompt: f64,
    pub mean_output: f64,
    /// The longest request, prompt and output tokens.
    pub longest: u32,
}

impl Lengths {
    pub fn of(requests: &[Request]) -> Lengths {
        let n = requests.len().max(1) as f64;
        Lengths {
            mean_prompt: requests.iter().map(|r| r.prompt_tokens as f64).sum::<f64>() / n,
            mean_output: requests
                .iter()
                .map(|r| r.output_tokens.max(1) as f64)
                .sum::<f64>()
                / n,
            longest: requests
                .iter()
                .map(|r| r.prompt_tokens + r.output_tokens.max(1))
                .max()
                .unwrap_or(1),
        }
    }
}

/// A server's steady iteration for the traffic's lengths: as many requests as its KV cache
/// holds at their mean length (at most the batch size) each decode a token at half their output
/// generated, beside the prompt tokens that keep the mix (mean prompt over mean output prefill
/// tokens for every decode, within the token budget). None when not one request fits.
fn steady_batch(kv_tokens: f64, engine: &Engine, l: Lengths) -> Option<Batch> {
    let length = l.mean_prompt + l.mean_output;
    let resident = ((kv_tokens / length).floor() as u32).min(engine.max_batch_size);
    if resident == 0 {
        return None;
    }
    let context = l.mean_prompt + l.mean_output / 2.0;
    let prefill = ((resident as f64 * l.mean_prompt / l.mean_output).round() as u32)
        .min(engine.max_batch_tokens.saturating_sub(resident));
    Some(Batch {
        prefill: if prefill > 0 {
            vec![(prefill, 0)]
        } else {
            Vec::new()
        },
        decodes: resident,
        decode_context: (resident as f64 * context) as u64,
        sampling: 0,
    })
}

/// A transfer large enough that its rate is the route's sustained bandwidth (latency a rounding
/// error), bytes.
const BULK_BYTES: u64 = 1 << 30;

/// The placement problem of `groups` on `engine` for traffic of `lengths`: each server's speed
/// by layer count (tokens a second of its steady iteration, [`steady_batch`], on those layers)
/// up to the most layers it can hold with room for the longest request's KV cache, and the
/// links between servers: the rate `between` (server i at GPU i) sends a bulk transfer at.
pub fn problem(
    groups: &[ServerGroup],
    engine: &Engine,
    between: &mut Sends,
    lengths: Lengths,
) -> Problem {
    let layers = engine.model.layers;
    let mut speed = Vec::new();
    let mut group = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let mut by_count = Vec::new();
        for k in 1..=layers {
            // Priced as layers 1..=k, past the embedding table (0..k when k is every layer).
            let start = u32::from(k < layers);
            let mut kind = engine.kind(g, (start, start + k));
            let kv_tokens = kind.blocks as f64 * engine.memory.block_tokens as f64;
            let Some(batch) = steady_batch(kv_tokens, engine, lengths)
                .filter(|_| kv_tokens >= lengths.longest as f64)
            else {
                break;
            };
            by_count.push(batch.tokens() as f64 / kind.iteration(&batch));
        }
        for _ in 0..g.servers {
            speed.push(by_count.clone());
            group.push(gi);
        }
    }
    let n = speed.len();
    let token_bytes = engine.model.hidden as f64 * 2.0;
    let mut link = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            if i != j {
                let rate = BULK_BYTES as f64 / between.seconds(i as u32, j as u32, BULK_BYTES);
                link[i * n + j] = rate / token_bytes;
            }
        }
    }
    Problem {
        layers,
        speed,
        group,
        link,
    }
}
