//! What the Metrics tab plots, read from a report into plain numbers (tested without a window):
//! a training step's parts and one GPU's memory, serving latency percentiles, a diffusion video's
//! phases. Anything the report lacks is left out, never invented.

use crate::fleet_plots::OverTime;
use crate::timeline::kind_color;
use clustersim::exec::OpKind;
use clustersim::report::any::Report;
use clustersim::report::diffusion::Breakdown;
use clustersim::report::percentiles::Percentiles as Figures;
use clustersim::report::training::{Breakdown as StepBreakdown, MemoryParts};
use egui::Color32;
use serde_json::Value;

/// A named part of a whole (seconds or bytes) with its colour.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub name: String,
    pub value: f64,
    pub color: Color32,
}

/// One latency figure's summary from the report: `(fraction, seconds)` of its percentiles.
#[derive(Clone, Debug, PartialEq)]
pub struct Percentiles {
    pub name: String,
    pub mean: Option<f64>,
    /// `(0.5, p50)`, `(0.9, p90)`, `(0.99, p99)`: those the report has, in that order.
    pub points: Vec<(f64, f64)>,
    /// The distribution from the report's histogram (`histograms`), when it has one:
    /// `[seconds, fraction of requests at or below]` at each bucket's upper edge.
    pub cdf: Vec<[f64; 2]>,
}

/// What the Metrics tab plots for one report.
#[derive(Clone, Debug, PartialEq)]
pub enum Metrics {
    Training {
        step: Vec<Part>,
        iteration_s: Option<f64>,
        memory: Vec<Part>,
        capacity_bytes: Option<f64>,
        peak_bytes: Option<f64>,
    },
    Serving {
        latencies: Vec<Percentiles>,
        /// The report's averages over the run (`throughput.*`), drawn over the time series.
        tokens_per_s: Option<f64>,
        requests_per_s: Option<f64>,
        /// Queue, batch and KV cache per replica over the run (`over_time`).
        over_time: Option<OverTime>,
    },
    Diffusion {
        phases: Vec<Part>,
        latency_s: Option<f64>,
        /// Latency percentiles of a served stream of videos, when the scenario has one.
        served: Vec<Percentiles>,
    },
    /// A report of a kind this tab does not know.
    Unknown,
}

const BUBBLE: Color32 = Color32::from_rgb(150, 150, 150);
/// Memory parts' colours, in `memory_breakdown`'s order (the last for any further part).
pub(crate) const MEMORY_COLORS: [Color32; 7] = [
    Color32::from_rgb(95, 110, 200),
    Color32::from_rgb(150, 90, 190),
    Color32::from_rgb(200, 90, 140),
    Color32::from_rgb(70, 160, 170),
    Color32::from_rgb(210, 170, 60),
    Color32::from_rgb(130, 130, 130),
    Color32::from_rgb(100, 100, 100),
];

/// A diffusion video's phase: its seconds in the report's breakdown, label and colour.
#[derive(Clone, Copy)]
pub(crate) struct Phase {
    pub seconds: fn(&Breakdown) -> f64,
    pub name: &'static str,
    pub color: Color32,
    /// Runs beside the other phases (all of a video's communication), so it is not one of the
    /// parts its latency adds up from.
    pub beside: bool,
}

impl Phase {
    const fn part(seconds: fn(&Breakdown) -> f64, name: &'static str, color: Color32) -> Phase {
        Phase {
            seconds,
            name,
            color,
            beside: false,
        }
    }
}

/// A diffusion video's phases, in the order they happen.
pub(crate) const DIFFUSION_PHASES: [Phase; 6] = [
    Phase::part(
        |b| b.text_encode,
        "text encode",
        Color32::from_rgb(150, 90, 190),
    ),
    Phase::part(
        |b| b.denoise_compute,
        "denoise compute",
        Color32::from_rgb(66, 133, 244),
    ),
    Phase {
        beside: true,
        ..Phase::part(
            |b| b.communication,
            "communication (total)",
            Color32::from_rgb(250, 200, 130),
        )
    },
    Phase::part(
        |b| b.exposed_communication,
        "exposed communication",
        Color32::from_rgb(240, 150, 30),
    ),
    Phase::part(|b| b.pipeline_wait, "pipeline wait", BUBBLE),
    Phase::part(
        |b| b.vae_decode,
        "VAE decode",
        Color32::from_rgb(60, 170, 90),
    ),
];

/// A training step's time on its critical stage as `(name, seconds, colour)`: compute, exposed
/// communication and pipeline bubble.
pub(crate) fn step_parts(b: &StepBreakdown) -> [(&'static str, f64, Color32); 3] {
    [
        ("compute", b.compute, kind_color(OpKind::Compute)),
        (
            "exposed communication",
            b.exposed_communication,
            kind_color(OpKind::Communication),
        ),
        ("pipeline bubble", b.pipeline_bubble, BUBBLE),
    ]
}

/// A training report's memory at peak by purpose (`memory.breakdown_bytes`): weights,
/// gradients, optimizer, activations, logits, buffers, then error feedback and the outer
/// optimizer.
pub(crate) fn memory_breakdown(m: &MemoryParts) -> Vec<(String, f64)> {
    [
        ("weights", m.weights),
        ("gradients", m.gradients),
        ("optimizer", m.optimizer),
        ("activations", m.activations),
        ("logits", m.logits),
        ("buffers", m.buffers),
        ("error_feedback", m.error_feedback),
        ("outer_optimizer", m.outer_optimizer),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v as f64))
    .collect()
}

/// The cumulative distribution of `counts` over buckets bounded by `edges` (one more count
/// than edges: below the first, between each pair, at or above the last), as points at each
/// bucket's upper edge from the first bucket with a count to the last. Empty when there is
/// nothing counted or the lengths do not match.
fn cdf(edges: &[f64], counts: &[f64]) -> Vec<[f64; 2]> {
    let total: f64 = counts.iter().sum();
    if total <= 0.0 || counts.len() != edges.len() + 1 {
        return Vec::new();
    }
    let first = counts.iter().position(|&c| c > 0.0).unwrap_or(0);
    let last = counts.iter().rposition(|&c| c > 0.0).unwrap_or(0);
    let mut seen = 0.0;
    let mut out = Vec::new();
    for (i, &c) in counts.iter().enumerate().take(last + 1) {
        seen += c;
        if i < first {
            continue;
        }
        // The lower edge of the first bucket with a count starts the curve at 0.
        if i == first && i > 0 {
            out.push([edges[i - 1], 0.0]);
        }
        let upper = edges.get(i).copied().unwrap_or(edges[edges.len() - 1]);
        out.push([upper, seen / total]);
    }
    out
}

/// A latency's summary `p` named `name`, with the distribution of `histograms[key]` when the
/// report has one; none when the report has no figure for it (nothing completed).
fn percentiles(p: &Figures, histograms: &Value, key: &str, name: &str) -> Option<Percentiles> {
    let numbers = |v: Option<&Value>| -> Vec<f64> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    let cdf = cdf(
        &numbers(histograms.get("edges_s")),
        &numbers(histograms.get(key)),
    );
    let points: Vec<(f64, f64)> = [(0.5, p.p50), (0.9, p.p90), (0.99, p.p99)]
        .into_iter()
        .filter_map(|(q, v)| Some((q, v?)))
        .collect();
    if points.is_empty() && p.mean.is_none() {
        return None;
    }
    Some(Percentiles {
        name: name.to_string(),
        mean: p.mean,
        points,
        cdf,
    })
}

impl Metrics {
    /// What the tab plots for report `r`; nothing for a report that does not read as one of
    /// its kind (the cards say why).
    pub fn from_report(r: &Value) -> Metrics {
        match Report::from_value(r) {
            Ok(Report::Training(t)) => {
                let step = step_parts(&t.breakdown_s)
                    .into_iter()
                    .map(|(name, value, color)| Part {
                        name: name.into(),
                        value,
                        color,
                    })
                    .collect();
                Metrics::Training {
                    step,
                    iteration_s: Some(t.iteration_time_s),
                    memory: memory_breakdown(&t.memory.breakdown_bytes)
                        .into_iter()
                        .enumerate()
                        .map(|(i, (name, value))| Part {
                            name,
                            value,
                            color: MEMORY_COLORS[i.min(MEMORY_COLORS.len() - 1)],
                        })
                        .collect(),
                    capacity_bytes: Some(t.memory.capacity_bytes as f64),
                    peak_bytes: Some(t.memory.peak_bytes_per_gpu as f64),
                }
            }
            Ok(Report::Serving(s)) => Metrics::Serving {
                latencies: [
                    (&s.ttft_s, "ttft_s", "TTFT"),
                    (&s.tpot_s, "tpot_s", "TPOT"),
                    (&s.e2e_s, "e2e_s", "end-to-end"),
                ]
                .into_iter()
                .filter_map(|(p, key, name)| percentiles(p, &s.histograms, key, name))
                .collect(),
                tokens_per_s: Some(s.throughput.output_tokens_per_s),
                requests_per_s: Some(s.throughput.requests_per_s),
                over_time: OverTime::from_report(r),
            },
            Ok(Report::Diffusion(d)) => Metrics::Diffusion {
                phases: DIFFUSION_PHASES
                    .iter()
                    .map(|p| Part {
                        name: p.name.into(),
                        value: (p.seconds)(&d.breakdown_s),
                        color: p.color,
                    })
                    .collect(),
                latency_s: Some(d.latency_s),
                served: d
                    .serving
                    .iter()
                    .flat_map(|q| [(&q.latency_s, "video latency"), (&q.queueing_s, "queueing")])
                    .filter_map(|(p, name)| percentiles(p, &Value::Null, "", name))
                    .collect(),
            },
            _ => Metrics::Unknown,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// The report of a shipped scenario with `sets`.
    pub(crate) fn shipped(file: &str, sets: &[&str]) -> Value {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(file);
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        clustersim::run(&clustersim::Scenario::load(&path, &sets).unwrap())
            .unwrap()
            .report
    }

    /// Writes `value` at each of `at` (JSON pointers the report already has).
    pub(crate) fn with(mut r: Value, at: &[(&str, Value)]) -> Value {
        for (pointer, value) in at {
            *r.pointer_mut(pointer)
                .unwrap_or_else(|| panic!("no {pointer}")) = value.clone();
        }
        r
    }

    /// A real training report with round figures: a 1 s step of 0.8 s compute, 0.15 s exposed
    /// communication and 0.05 s bubble; 2 GiB of weights and 1 GiB of activations of 80 GiB.
    pub(crate) fn training() -> Value {
        const GIB: u64 = 1 << 30;
        let mut r = shipped("training/gpt3-1.3b-8xh100.toml", &[]);
        for part in r["memory"]["breakdown_bytes"]
            .as_object_mut()
            .unwrap()
            .values_mut()
        {
            *part = json!(0);
        }
        with(
            r,
            &[
                ("/iteration_time_s", json!(1.0)),
                ("/breakdown_s/compute", json!(0.8)),
                ("/breakdown_s/exposed_communication", json!(0.15)),
                ("/breakdown_s/pipeline_bubble", json!(0.05)),
                ("/memory/peak_bytes_per_gpu", json!(3 * GIB)),
                ("/memory/capacity_bytes", json!(80 * GIB)),
                ("/memory/breakdown_bytes/weights", json!(2 * GIB)),
                ("/memory/breakdown_bytes/activations", json!(GIB)),
            ],
        )
    }

    /// A real serving report of 200 requests.
    pub(crate) fn serving() -> Value {
        shipped(
            "serving/llama-3-70b-tp4-poisson-slo.toml",
            &["workload.requests=200"],
        )
    }

    #[test]
    fn training_reads_step_and_memory() {
        let Metrics::Training {
            step,
            memory,
            capacity_bytes,
            ..
        } = Metrics::from_report(&training())
        else {
            panic!("a training report")
        };
        let names: Vec<_> = step.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["compute", "exposed communication", "pipeline bubble"]
        );
        assert_eq!(memory[0].name, "weights");
        assert_eq!(capacity_bytes, Some(80.0 * 1073741824.0));
        assert_eq!(
            Metrics::from_report(&json!({"kind": "training"})),
            Metrics::Unknown
        );
    }

    #[test]
    fn serving_reads_the_percentiles_in_order() {
        let r = with(
            serving(),
            &[(
                "/ttft_s",
                json!({"mean": 0.2, "p50": 0.1, "p90": 0.3, "p99": 0.9}),
            )],
        );
        let Metrics::Serving { latencies, .. } = Metrics::from_report(&r) else {
            panic!("a serving report")
        };
        let names: Vec<_> = latencies.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["TTFT", "TPOT", "end-to-end"]);
        assert_eq!(latencies[0].points, [(0.5, 0.1), (0.9, 0.3), (0.99, 0.9)]);
        assert_eq!(latencies[0].mean, Some(0.2));
    }

    #[test]
    fn a_histogram_becomes_the_fraction_done_within_each_edge() {
        // One request in [0.1, 0.2), three in [0.2, 0.4): from 0 at 0.1 s to all at 0.4 s.
        let edges = [0.1, 0.2, 0.4];
        assert_eq!(
            cdf(&edges, &[0.0, 1.0, 3.0, 0.0]),
            [[0.1, 0.0], [0.2, 0.25], [0.4, 1.0]]
        );
        // Counts that do not match the edges draw nothing rather than a wrong curve.
        assert!(cdf(&edges, &[0.0, 0.0, 0.0]).is_empty());
    }

    #[test]
    fn a_real_serving_report_draws_every_request() {
        let Metrics::Serving { latencies, .. } = Metrics::from_report(&serving()) else {
            panic!("a serving report")
        };
        assert_eq!(latencies.len(), 3);
        for l in &latencies {
            let last = l.cdf.last().expect("a curve");
            assert_eq!(last[1], 1.0, "{}", l.name);
            assert!(
                l.cdf
                    .windows(2)
                    .all(|w| w[0][0] < w[1][0] && w[0][1] <= w[1][1])
            );
            // The median lies where the curve crosses one half.
            let p50 = l.points[0].1;
            let below = l
                .cdf
                .iter()
                .rev()
                .find(|p| p[0] <= p50)
                .map_or(0.0, |p| p[1]);
            let above = l.cdf.iter().find(|p| p[0] > p50).map_or(1.0, |p| p[1]);
            assert!(below <= 0.5 && above >= 0.5, "{}: {below} {above}", l.name);
        }
    }
}
