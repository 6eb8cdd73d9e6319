//! Pipeline schedules: the order in which each stage runs the forward and backward passes of its
//! micro-batches ([`order`]; warm-up forwards: [`warmup`]).
//!
//! - GPipe: every forward, then every backward; a stage keeps all micro-batches' activations.
//! - 1F1B (Megatron-LM's default): stage s runs pp - s - 1 warm-up forwards, then alternates one
//!   forward and one backward, then drains; at most pp - s micro-batches in flight.
//! - Interleaved 1F1B: each GPU holds v model chunks; micro-batches go through chunk groups of pp
//!   at a time, shrinking the bubble by v for v times the point-to-point messages (the
//!   micro-batch count must be a multiple of pp). Chunk c of stage s is the model's chunk
//!   c x pp + s, so a forward visits stages 0 to pp - 1 and wraps around for the next chunk.
//! - Asynchronous 1F1B: the 1F1B order with every micro-batch a mini-batch of its own (weights
//!   updated after each backward, never flushed). Weight staleness is the algorithm's business
//!   (stashing: `memory.rs`); convergence is outside a performance model.
//!
//! Sources: docs/TRAINING.md#schedules

use super::policy::Schedule;

/// Forward or backward pass.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Pass {
    Forward,
    Backward,
}

/// One unit of a stage's work: a pass of one micro-batch through one of its chunks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Work {
    pub pass: Pass,
    pub micro: u32,
    /// The stage's own chunk index, 0..v.
    pub chunk: u32,
}

/// Forwards a stage runs before its first backward.
pub fn warmup(schedule: Schedule, pp: u32, v: u32, micro_batches: u32, stage: u32) -> u32 {
    let total = micro_batches * v;
    match schedule {
        Schedule::Gpipe => total,
        Schedule::OneFOneB | Schedule::Async1F1B => (pp - stage - 1).min(total),
        Schedule::Interleaved1F1B => ((pp - stage - 1) * 2 + (v - 1) * pp).min(total),
    }
}

/// The micro-batch and chunk of the k-th forward (or backward) of a stage.
fn nth(schedule: Schedule, pp: u32, v: u32, k: u32, pass: Pass) -> Work {
    match schedule {
        Schedule::Gpipe | Schedule::OneFOneB | Schedule::Async1F1B => Work {
            pass,
            micro: k,
            chunk: 0,
        },
        Schedule::Interleaved1F1B => {
            let group = k / (pp * v);
            let within = k % (pp * v);
            let chunk = within / pp;
            Work {
                pass,
                micro: group * pp + within % pp,
                chunk: if pass == Pass::Forward {
                    chunk
                } else {
                    v - 1 - chunk
                },
            }
        }
    }
}

/// The order of a stage's work.
pub fn order(schedule: Schedule, pp: u32, v: u32, micro_batches: u32, stage: u32) -> Vec<Work> {
    let total = micro_batches * v;
    let warm = warmup(schedule, pp, v, micro_batches, stage);
    let f = |k| nth(schedule, pp, v, k, Pass::Forward);
    let b = |k| nth(schedule, pp, v, k, Pass::Backward);
    let mut out: Vec<Work> = (0..warm).map(f).collect();
    for i in 0..total - warm {
        out.push(f(warm + i));
        out.push(b(i));
    }
    out.extend((total - warm..total).map(b));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(w: &[Work]) -> String {
        w.iter()
            .map(|w| match w.pass {
                Pass::Forward => format!("F{}", w.micro),
                Pass::Backward => format!("B{}", w.micro),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn one_f_one_b_warms_up_by_stage() {
        let first = order(Schedule::OneFOneB, 4, 1, 6, 0);
        assert_eq!(passes(&first), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
        let last = order(Schedule::OneFOneB, 4, 1, 6, 3);
        assert_eq!(passes(&last), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
    }

    #[test]
    fn async_1f1b_keeps_the_1f1b_order() {
        for stage in 0..4 {
            assert_eq!(
                order(Schedule::Async1F1B, 4, 1, 6, stage),
                order(Schedule::OneFOneB, 4, 1, 6, stage)
            );
        }
        assert_eq!(warmup(Schedule::Async1F1B, 4, 1, 6, 1), 2);
    }

    #[test]
    fn gpipe_runs_all_forwards_first() {
        let w = order(Schedule::Gpipe, 4, 1, 3, 1);
        assert_eq!(passes(&w), "F0 F1 F2 B0 B1 B2");
    }

    #[test]
    fn interleaved_visits_every_chunk_of_every_micro_batch_once_each_way() {
        let (pp, v, m) = (4, 2, 8);
        for stage in 0..pp {
            let w = order(Schedule::Interleaved1F1B, pp, v, m, stage);
            assert_eq!(w.len() as u32, 2 * m * v);
            for pass in [Pass::Forward, Pass::Backward] {
                let mut seen: Vec<(u32, u32)> = w
                    .iter()
                    .filter(|x| x.pass == pass)
                    .map(|x| (x.micro, x.chunk))
                    .collect();
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len() as u32, m * v);
            }
            // Chunks run forward in order and backward in reverse for each micro-batch.
            let first_fwd = w.iter().find(|x| x.pass == Pass::Forward).unwrap();
            assert_eq!((first_fwd.micro, first_fwd.chunk), (0, 0));
            let first_bwd = w.iter().find(|x| x.pass == Pass::Backward).unwrap();
            assert_eq!((first_bwd.micro, first_bwd.chunk), (0, v - 1));
        }
        assert_eq!(warmup(Schedule::Interleaved1F1B, 4, 2, 8, 0), 10);
    }
}
