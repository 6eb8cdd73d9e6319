//! The training report's `power` section: each simulated stage GPU's board power over the step,
//! from the step graph's board-power counters (idle between kernels, each kernel's own draw
//! while it runs, `hw::clock`), and the clock the layer's MLP GEMM sustains under the power limit.
//!
//! The figures are time-weighted over one step from an empty pipeline (fill and drain included):
//! the peak is the largest kernel draw, the mean the energy over the step, `p1_watts` the floor the
//! GPU falls to while it waits (pipeline bubbles, exposed communication). The series averages the
//! critical stage's power over equal buckets of the step, which is how a power meter sampling
//! slower than the kernels would read it. Only the compute stream draws above idle: NCCL's
//! kernels and the links are not priced apart (their few SMs and the NICs are left at idle power).

use super::setup::TrainingConfig;
use crate::exec::{Graph, Timeline};
use crate::hw::{ComputeModel, Kernel, power};
use serde_json::{Value, json};

/// Buckets of the `series`.
const BUCKETS: usize = 100;

/// The `power` section for a step of `graph` as it ran in `timeline`, and its mean board power
/// of a GPU over the step (watts, the energy section's); `critical` is the index of the stage
/// whose compute stream is busiest.
pub fn report(
    setup: &TrainingConfig,
    compute: &ComputeModel,
    graph: &Graph,
    timeline: &Timeline,
    critical: usize,
) -> (Value, f64) {
    let end = timeline.makespan();
    let summaries: Vec<_> = graph
        .counters
        .iter()
        .map(|c| c.summary(graph, timeline, end))
        .collect();
    let stages: Vec<Value> = summaries
        .iter()
        .enumerate()
        .map(|(stage, s)| {
            json!({
                "stage": stage,
                "peak_watts": s.peak,
                "mean_watts": s.mean,
                "p99_watts": s.p99,
                "p1_watts": s.p1,
            })
        })
        .collect();
    let crit = summaries[critical];
    let peak = summaries.iter().map(|s| s.peak).fold(f64::MIN, f64::max);
    let mean = summaries.iter().map(|s| s.mean).sum::<f64>() / summaries.len() as f64;
    let gemm = Kernel::Gemm {
        m: (setup.micro_batch * setup.model.seq_len / setup.cp) as u64,
        n: (setup.model.ffn / setup.tp) as u64,
        k: setup.model.hidden as u64,
        batch: 1,
        dtype: setup.gemm_dtype,
    };
    let gemm = compute
        .cost(&gemm)
        .expect("the set-up checked that the GPU computes in the model's format");
    let limit = compute.power_limit_watts.unwrap_or(setup.gpu.tdp_watts);
    let section = json!({
        "limit_watts": limit,
        "tdp_watts": setup.gpu.tdp_watts,
        "idle_watts": power::idle_watts(&setup.gpu),
        "limited": compute.power_limit_watts.is_some(),
        "gemm_clock": gemm.clock,
        "gemm_watts": gemm.watts,
        "peak_watts": peak,
        "mean_watts": mean,
        "p99_watts": crit.p99,
        "p1_watts": crit.p1,
        "swing_watts": crit.peak - crit.p1,
        "stages": stages,
        "series": {
            "stage": critical,
            "bucket_s": end.as_secs_f64() / BUCKETS as f64,
            "watts": graph.counters[critical].buckets(graph, timeline, end, BUCKETS),
        },
        "model": format!(
            "per kernel: idle {:.0} W plus the math units' draw (clock cubed) and the memory \
             system's; a compute-bound GEMM draws the TDP at the clock the board holds under \
             sustained load (gemm_clock at the TDP), a memory-bound kernel {:.0}% of it; under \
             a limit a kernel runs at the highest clock that fits (hw::clock); no thermal model",
            power::idle_watts(&setup.gpu),
            crate::hw::clock::MEMORY_BOUND_FRACTION * 100.0
        ),
    });
    (section, mean)
}
