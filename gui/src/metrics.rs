//! What the Metrics tab plots, read from a report into plain numbers (tested without a window):
//! a training step's parts and one GPU's memory, serving latency percentiles, a diffusion video's
//! phases. Anything the report lacks is left out, never invented.

use crate::fleet_plots::OverTime;
use crate::timeline::kind_color;
use clustersim::exec::OpKind;
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
const MEMORY_ORDER: [&str; 6] = [
    "weights",
    "gradients",
    "optimizer",
    "activations",
    "logits",
    "buffers",
];

/// `(report key, label, colour)` of a diffusion video's phases, in the order they happen.
pub(crate) const DIFFUSION_PHASES: [(&str, &str, Color32); 6] = [
    (
        "text_encode",
        "text encode",
        Color32::from_rgb(150, 90, 190),
    ),
    (
        "denoise_compute",
        "denoise compute",
        Color32::from_rgb(66, 133, 244),
    ),
    (
        "communication",
        "communication (total)",
        Color32::from_rgb(250, 200, 130),
    ),
    (
        "exposed_communication",
        "exposed communication",
        Color32::from_rgb(240, 150, 30),
    ),
    ("pipeline_wait", "pipeline wait", BUBBLE),
    ("vae_decode", "VAE decode", Color32::from_rgb(60, 170, 90)),
];

/// A training report's memory at peak by purpose (`memory.breakdown_bytes`), weights first,
/// then gradients, optimizer, activations, logits, buffers, and parts of other names last.
pub(crate) fn memory_breakdown(r: &Value) -> Vec<(String, f64)> {
    let mut parts: Vec<(String, f64)> = r
        .pointer("/memory/breakdown_bytes")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    parts.sort_by_key(|(k, _)| {
        MEMORY_ORDER
            .iter()
            .position(|o| o == k)
            .unwrap_or(MEMORY_ORDER.len())
    });
    parts
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

fn percentiles(r: &Value, prefix: &str, name: &str) -> Option<Percentiles> {
    let numbers = |v: Option<&Value>| -> Vec<f64> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    let key = prefix.trim_start_matches('/');
    let cdf = cdf(
        &numbers(r.pointer("/histograms/edges_s")),
        &numbers(r.pointer("/histograms").and_then(|h| h.get(key))),
    );
    let t = r.pointer(prefix)?;
    let f = |k: &str| t.get(k).and_then(Value::as_f64);
    let points: Vec<(f64, f64)> = [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")]
        .into_iter()
        .filter_map(|(q, k)| Some((q, f(k)?)))
        .collect();
    if points.is_empty() && f("mean").is_none() {
        return None;
    }
    Some(Percentiles {
        name: name.to_string(),
        mean: f("mean"),
        points,
        cdf,
    })
}

impl Metrics {
    pub fn from_report(r: &Value) -> Metrics {
        let f = |p: &str| r.pointer(p).and_then(Value::as_f64);
        match r.get("kind").and_then(Value::as_str) {
            Some("training") => {
                let step = [
                    (
                        "compute",
                        "/breakdown_s/compute",
                        kind_color(OpKind::Compute),
                    ),
                    (
                        "exposed communication",
                        "/breakdown_s/exposed_communication",
                        kind_color(OpKind::Communication),
                    ),
                    ("pipeline bubble", "/breakdown_s/pipeline_bubble", BUBBLE),
                ]
                .into_iter()
                .filter_map(|(name, p, color)| {
                    Some(Part {
                        name: name.into(),
                        value: f(p)?,
                        color,
                    })
                })
                .collect();
                let memory = memory_breakdown(r);
                Metrics::Training {
                    step,
                    iteration_s: f("/iteration_time_s"),
                    memory: memory
                        .into_iter()
                        .enumerate()
                        .map(|(i, (name, value))| Part {
                            name,
                            value,
                            color: MEMORY_COLORS[i.min(MEMORY_COLORS.len() - 1)],
                        })
                        .collect(),
                    capacity_bytes: f("/memory/capacity_bytes"),
                    peak_bytes: f("/memory/peak_bytes_per_gpu"),
                }
            }
            Some("serving") => Metrics::Serving {
                latencies: [
                    ("/ttft_s", "TTFT"),
                    ("/tpot_s", "TPOT"),
                    ("/e2e_s", "end-to-end"),
                ]
                .into_iter()
                .filter_map(|(p, name)| percentiles(r, p, name))
                .collect(),
                tokens_per_s: f("/throughput/output_tokens_per_s"),
                requests_per_s: f("/throughput/requests_per_s"),
                over_time: OverTime::from_report(r),
            },
            Some("diffusion") => Metrics::Diffusion {
                phases: DIFFUSION_PHASES
                    .iter()
                    .filter_map(|&(k, name, color)| {
                        Some(Part {
                            name: name.into(),
                            value: r.pointer(&format!("/breakdown_s/{k}"))?.as_f64()?,
                            color,
                        })
                    })
                    .collect(),
                latency_s: f("/latency_s"),
                served: [
                    ("/serving/latency_s", "video latency"),
                    ("/serving/queueing_s", "queueing"),
                ]
                .into_iter()
                .filter_map(|(p, name)| percentiles(r, p, name))
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

    pub(crate) fn training() -> Value {
        json!({
            "kind": "training",
            "iteration_time_s": 1.0,
            "breakdown_s": {"compute": 0.8, "exposed_communication": 0.15, "pipeline_bubble": 0.05},
            "memory": {
                "peak_bytes_per_gpu": 3.0 * 1073741824.0, "capacity_bytes": 80.0 * 1073741824.0,
                "breakdown_bytes": {"activations": 1073741824.0, "weights": 2.0 * 1073741824.0}
            }
        })
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
    }

    #[test]
    fn serving_reads_the_percentiles_in_order() {
        let r = json!({"kind": "serving",
            "ttft_s": {"mean": 0.2, "p50": 0.1, "p90": 0.3, "p99": 0.9},
            "tpot_s": {"p50": 0.01}});
        let Metrics::Serving { latencies, .. } = Metrics::from_report(&r) else {
            panic!("a serving report")
        };
        assert_eq!(latencies.len(), 2, "no e2e in the report, no e2e plot");
        assert_eq!(latencies[0].points, [(0.5, 0.1), (0.9, 0.3), (0.99, 0.9)]);
        assert_eq!(latencies[1].mean, None);
    }

    #[test]
    fn a_histogram_becomes_the_fraction_done_within_each_edge() {
        let r = json!({"kind": "serving",
            "ttft_s": {"p50": 0.15},
            "tpot_s": {"p50": 0.01},
            "histograms": {"edges_s": [0.1, 0.2, 0.4],
                           "ttft_s": [0, 1, 3, 0],
                           "tpot_s": [0, 0, 0]}});
        let Metrics::Serving { latencies, .. } = Metrics::from_report(&r) else {
            panic!("a serving report")
        };
        // One request in [0.1, 0.2), three in [0.2, 0.4): from 0 at 0.1 s to all at 0.4 s.
        assert_eq!(latencies[0].cdf, [[0.1, 0.0], [0.2, 0.25], [0.4, 1.0]]);
        // Counts that do not match the edges draw nothing rather than a wrong curve.
        assert!(latencies[1].cdf.is_empty());
    }

    #[test]
    fn a_real_serving_report_draws_every_request() {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/serving/llama-3-70b-tp4-poisson-slo.toml");
        let s = clustersim::Scenario::load(&path, &["workload.requests=200".into()]).unwrap();
        let r = clustersim::run(&s).unwrap().report;
        let Metrics::Serving { latencies, .. } = Metrics::from_report(&r) else {
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
