//! The "Metrics" tab: the report's figures as plots (egui_plot), one set per kind of scenario.
//!
//! - Training: the step broken into compute, exposed communication and pipeline bubble (a bar
//!   each, `breakdown_s`), and the memory of one GPU at its peak by purpose (`memory.breakdown_bytes`
//!   stacked into one column) with the GPU's capacity as a horizontal line.
//! - Serving: TTFT, TPOT and end-to-end latency as cumulative-distribution points. The report
//!   holds only the mean and the 50th, 90th and 99th percentiles, not each request, so each curve
//!   is those three points (latency on x, fraction of requests on y) joined by straight lines, the
//!   mean as a dashed vertical line; the plots say so. Video serving plots its latency the same way.
//! - Diffusion: one video's time by phase (`breakdown_s`: text encoding, denoising compute,
//!   communication in total and the part of it left exposed, pipeline waits, VAE decoding).
//!
//! `metrics` reads the report into plain numbers (tested without a window); every
//! plot has its numbers written under it as labels too, which is what the headless tests query.
//! - Serving, over time: output tokens per second and requests completed per second in each time
//!   bucket (`throughput`, counted from the trace), each with the report's average over the run as
//!   a dashed line.
//!
//! Deliberately left out: per-request CDFs (the report has no per-request data), and anything the report lacks (never invented).

use crate::metrics::{Metrics, Part, Percentiles};
use crate::throughput::Throughput;
use crate::units;
use egui::{Color32, RichText, Ui};
use egui_plot::{Bar, BarChart, HLine, Legend, Line, LineStyle, Plot, PlotPoints, Points, VLine};

const CAPACITY: Color32 = Color32::from_rgb(220, 60, 60);
/// Colours of the series a plot draws side by side (latencies, throughputs, replicas), in order.
pub(crate) const SERIES_COLORS: [Color32; 6] = [
    Color32::from_rgb(66, 133, 244),
    Color32::from_rgb(240, 150, 30),
    Color32::from_rgb(60, 170, 90),
    Color32::from_rgb(200, 90, 140),
    Color32::from_rgb(150, 90, 190),
    Color32::from_rgb(70, 160, 170),
];

const PLOT_H: f32 = 260.0;

/// Lays out the plots for one report (and a serving run's throughput over time, when known).
pub fn show(ui: &mut Ui, m: &Metrics, throughput: Option<&Throughput>) {
    egui::ScrollArea::vertical()
        .id_salt("metrics")
        .auto_shrink([false, false])
        .show(ui, |ui| match m {
            Metrics::Training {
                step,
                iteration_s,
                memory,
                capacity_bytes,
                peak_bytes,
            } => {
                ui.columns(2, |cols| {
                    step_plot(&mut cols[0], step, *iteration_s);
                    memory_plot(&mut cols[1], memory, *capacity_bytes, *peak_bytes);
                });
            }
            Metrics::Serving {
                latencies,
                tokens_per_s,
                requests_per_s,
                over_time,
            } => {
                throughput_plots(ui, throughput, *tokens_per_s, *requests_per_s);
                if let Some(o) = over_time {
                    ui.add_space(8.0);
                    crate::fleet_plots::show(ui, o, PLOT_H * 0.6);
                }
                ui.add_space(8.0);
                ui.strong("Latency");
                percentile_note(ui, latencies);
                latency_plots(ui, latencies);
            }
            Metrics::Diffusion {
                phases,
                latency_s,
                served,
            } => {
                diffusion_plot(ui, phases, *latency_s);
                if !served.is_empty() {
                    ui.add_space(8.0);
                    ui.strong("Served videos");
                    percentile_note(ui, served);
                    latency_plots(ui, served);
                }
            }
            Metrics::Unknown => {
                ui.weak("This report's kind has no plots.");
            }
        });
}

fn percentile_note(ui: &mut Ui, series: &[Percentiles]) {
    let text = if series.iter().all(|s| !s.cdf.is_empty()) {
        "Every request counted in the report's histogram (buckets about 12% wide): each curve is \
         the fraction of requests done within that time, the dots the 50th, 90th and 99th \
         percentiles, the dashed line the mean."
    } else {
        "The report gives only the mean and the 50th, 90th and 99th percentiles: a curve without \
         a histogram is those three points joined by straight lines, not a per-request \
         distribution."
    };
    ui.label(RichText::new(text).small().weak());
}

/// The step's parts as bars, in seconds.
fn step_plot(ui: &mut Ui, step: &[Part], iteration_s: Option<f64>) {
    ui.strong("Step breakdown");
    if step.is_empty() {
        ui.weak("The report has no step breakdown.");
        return;
    }
    let names: Vec<String> = step.iter().map(|p| p.name.clone()).collect();
    let charts: Vec<BarChart> = step
        .iter()
        .enumerate()
        .map(|(i, p)| {
            BarChart::new(
                p.name.clone(),
                vec![Bar::new(i as f64, p.value).width(0.6).name(format!(
                    "{}: {}",
                    p.name,
                    units::duration(p.value)
                ))],
            )
            .color(p.color)
        })
        .collect();
    Plot::new("step_breakdown")
        .height(PLOT_H)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .include_y(0.0)
        .y_axis_label("seconds")
        .x_axis_formatter(move |mark, _| category(&names, mark.value))
        .y_axis_formatter(|mark, _| units::duration(mark.value))
        .show(ui, |plot| {
            for c in charts {
                plot.bar_chart(c);
            }
        });
    let total = iteration_s.unwrap_or_else(|| step.iter().map(|p| p.value).sum());
    values(ui, step, Some(total), units::duration);
    if let Some(t) = iteration_s {
        ui.label(RichText::new(format!("iteration {}", units::duration(t))).small());
    }
}

/// Memory of one GPU by purpose, stacked, with the capacity as a line; in GiB.
fn memory_plot(ui: &mut Ui, memory: &[Part], capacity: Option<f64>, peak: Option<f64>) {
    ui.strong("Memory per GPU at peak");
    if memory.is_empty() {
        ui.weak("The report has no memory breakdown.");
        return;
    }
    const GIB: f64 = 1073741824.0;
    let mut charts: Vec<BarChart> = Vec::new();
    for p in memory {
        let chart = BarChart::new(
            p.name.clone(),
            vec![Bar::new(0.0, p.value / GIB).width(0.5).name(format!(
                "{}: {}",
                p.name,
                units::bytes(p.value)
            ))],
        )
        .color(p.color);
        let below: Vec<&BarChart> = charts.iter().collect();
        let chart = chart.stack_on(&below);
        charts.push(chart);
    }
    let mut plot = Plot::new("memory_per_gpu")
        .height(PLOT_H)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .include_y(0.0)
        .include_x(-1.0)
        .include_x(1.0)
        .show_axes([false, true])
        .y_axis_label("GiB")
        .legend(Legend::default());
    if let Some(c) = capacity {
        plot = plot.include_y(c / GIB * 1.05);
    }
    plot.show(ui, |plot| {
        for c in charts {
            plot.bar_chart(c);
        }
        if let Some(c) = capacity {
            plot.hline(
                HLine::new(format!("capacity {}", units::bytes(c)), c / GIB)
                    .color(CAPACITY)
                    .width(2.0)
                    .style(LineStyle::dashed_loose()),
            );
        }
    });
    let total = peak.unwrap_or_else(|| memory.iter().map(|p| p.value).sum());
    values(ui, memory, Some(total), units::bytes);
    match (peak, capacity) {
        (Some(p), Some(c)) => {
            let fits = p <= c;
            ui.label(
                RichText::new(format!(
                    "peak {} of {} capacity{}",
                    units::bytes(p),
                    units::bytes(c),
                    if fits { "" } else { ": does not fit" }
                ))
                .small()
                .color(if fits {
                    ui.visuals().text_color()
                } else {
                    CAPACITY
                }),
            );
        }
        (Some(p), None) => {
            ui.label(RichText::new(format!("peak {}", units::bytes(p))).small());
        }
        _ => {}
    }
}

/// One plot per latency figure: its cumulative distribution from the report's histogram (or,
/// without one, its percentiles joined), the percentiles as points.
fn latency_plots(ui: &mut Ui, series: &[Percentiles]) {
    if series.is_empty() {
        ui.weak("The report has no latency percentiles.");
        return;
    }
    let n = series.len();
    ui.columns(n, |cols| {
        for (i, s) in series.iter().enumerate() {
            let ui = &mut cols[i];
            let color = SERIES_COLORS[i % SERIES_COLORS.len()];
            ui.strong(&s.name);
            let pts: Vec<[f64; 2]> = s.points.iter().map(|&(q, v)| [v, q]).collect();
            Plot::new(("latency", i))
                .height(PLOT_H * 0.8)
                .allow_scroll(false)
                .allow_zoom(false)
                .allow_drag(false)
                .include_y(0.0)
                .include_y(1.0)
                .include_x(0.0)
                .x_axis_label("seconds")
                .y_axis_label("fraction of requests")
                .x_axis_formatter(|mark, _| units::duration(mark.value))
                .show(ui, |plot| {
                    let curve = if s.cdf.is_empty() {
                        pts.clone()
                    } else {
                        s.cdf.clone()
                    };
                    plot.line(
                        Line::new(s.name.clone(), PlotPoints::from(curve))
                            .color(color)
                            .width(1.5),
                    );
                    plot.points(
                        Points::new(format!("{} percentiles", s.name), PlotPoints::from(pts))
                            .color(color)
                            .radius(4.0),
                    );
                    if let Some(m) = s.mean {
                        plot.vline(
                            VLine::new(format!("mean {}", units::duration(m)), m)
                                .color(color)
                                .style(LineStyle::dashed_dense()),
                        );
                    }
                });
            let mut line: Vec<String> = s
                .points
                .iter()
                .map(|&(q, v)| format!("p{:.0} {}", q * 100.0, units::duration(v)))
                .collect();
            if let Some(m) = s.mean {
                line.insert(0, format!("mean {}", units::duration(m)));
            }
            ui.label(RichText::new(format!("{}: {}", s.name, line.join(" · "))).small());
        }
    });
}

/// Output tokens/s and requests completed/s per time bucket, with the report's averages dashed.
fn throughput_plots(
    ui: &mut Ui,
    t: Option<&Throughput>,
    tokens_avg: Option<f64>,
    requests_avg: Option<f64>,
) {
    ui.strong("Throughput over time");
    let Some(t) = t else {
        ui.weak("No per-request trace for this run: no throughput over time.");
        return;
    };
    ui.label(
        RichText::new(format!(
            "Counted from the trace in buckets of {}: each request's first token at the end of \
             its prefill, then the decodes of each iteration as it ends (last pipeline stage \
             only); a request counts as completed when its last token is out.",
            units::duration(t.bucket_s)
        ))
        .small()
        .weak(),
    );
    let series = [
        (
            "output tokens/s",
            t.tokens_per_s(),
            tokens_avg,
            SERIES_COLORS[0],
        ),
        (
            "requests completed/s",
            t.requests_per_s(),
            requests_avg,
            SERIES_COLORS[2],
        ),
    ];
    let bucket = t.bucket_s;
    ui.columns(2, |cols| {
        for (i, (name, points, avg, color)) in series.into_iter().enumerate() {
            let ui = &mut cols[i];
            let bars: Vec<Bar> = points
                .iter()
                .map(|&(x, y)| Bar::new(x + 0.5 * bucket, y).width(bucket))
                .collect();
            Plot::new(("throughput", i))
                .height(PLOT_H * 0.8)
                .allow_scroll(false)
                .allow_zoom(false)
                .allow_drag(false)
                .include_y(0.0)
                .include_x(0.0)
                .x_axis_label("simulated time")
                .y_axis_label(name)
                .x_axis_formatter(|mark, _| units::duration(mark.value))
                .legend(Legend::default())
                .show(ui, |plot| {
                    plot.bar_chart(BarChart::new(name, bars).color(color));
                    if let Some(a) = avg {
                        plot.hline(
                            HLine::new(format!("run average {a:.1}/s"), a)
                                .color(CAPACITY)
                                .style(LineStyle::dashed_dense()),
                        );
                    }
                });
            let peak = points.iter().map(|p| p.1).fold(0.0, f64::max);
            let total = if i == 0 {
                t.total_tokens()
            } else {
                t.total_requests()
            };
            let mut line = format!("{name}: peak {peak:.1}/s · {total} in all");
            if let Some(a) = avg {
                line.push_str(&format!(" · run average {a:.1}/s"));
            }
            ui.label(RichText::new(line).small());
        }
    });
}

/// One video's phases as horizontal bars, in seconds.
fn diffusion_plot(ui: &mut Ui, phases: &[Part], latency_s: Option<f64>) {
    ui.strong("One video, by phase");
    if phases.is_empty() {
        ui.weak("The report has no breakdown.");
        return;
    }
    ui.label(
        RichText::new(
            "Communication (total) overlaps the denoising compute; only its exposed part adds to \
             the video's latency.",
        )
        .small()
        .weak(),
    );
    let names: Vec<String> = phases.iter().map(|p| p.name.clone()).collect();
    let n = phases.len();
    let charts: Vec<BarChart> = phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // First phase on top.
            let y = (n - 1 - i) as f64;
            BarChart::new(
                p.name.clone(),
                vec![Bar::new(y, p.value).width(0.6).name(format!(
                    "{}: {}",
                    p.name,
                    units::duration(p.value)
                ))],
            )
            .color(p.color)
            .horizontal()
        })
        .collect();
    Plot::new("diffusion_phases")
        .height(PLOT_H)
        .allow_scroll(false)
        .allow_drag(false)
        .allow_zoom(false)
        .include_x(0.0)
        .x_axis_label("seconds")
        .x_axis_formatter(|mark, _| units::duration(mark.value))
        .y_axis_formatter(move |mark, _| {
            let i = n as f64 - 1.0 - mark.value;
            category(&names, i)
        })
        .y_axis_min_width(140.0)
        .show(ui, |plot| {
            for c in charts {
                plot.bar_chart(c);
            }
        });
    values(ui, phases, latency_s, units::duration);
    if let Some(t) = latency_s {
        ui.label(RichText::new(format!("latency {}", units::duration(t))).small());
    }
}

/// The name of the category at an integer axis position, blank between them.
fn category(names: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    names.get(i as usize).cloned().unwrap_or_default()
}

/// The plotted numbers as labels: "compute 1.081 s (99.8%)".
fn values(ui: &mut Ui, parts: &[Part], total: Option<f64>, fmt: fn(f64) -> String) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        for p in parts {
            let (r, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
            ui.painter().rect_filled(r, 2.0, p.color);
            let share = match total {
                Some(t) if t > 0.0 => format!(" ({})", units::percent(p.value / t)),
                _ => String::new(),
            };
            ui.label(RichText::new(format!("{} {}{share}", p.name, fmt(p.value))).small());
            ui.add_space(6.0);
        }
    });
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::{serving, shipped, training, with};
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use serde_json::json;

    #[test]
    fn the_training_panel_shows_the_bars_and_the_capacity() {
        let m = Metrics::from_report(&training());
        let mut h = Harness::new_ui(|ui| show(ui, &m, None));
        h.set_size(egui::vec2(1000.0, 700.0));
        h.run();
        h.get_by_label("Step breakdown");
        h.get_by_label("compute 800.0 ms (80.0%)");
        h.get_by_label("exposed communication 150.0 ms (15.0%)");
        h.get_by_label("pipeline bubble 50.0 ms (5.0%)");
        h.get_by_label("weights 2.0 GiB (66.7%)");
        h.get_by_label("peak 3.0 GiB of 80.0 GiB capacity");
    }

    #[test]
    fn the_serving_panel_says_it_plots_percentiles_only() {
        let m = Metrics::from_report(&with(
            serving(),
            &[
                (
                    "/ttft_s",
                    json!({"mean": 0.2, "p50": 0.1, "p90": 0.3, "p99": 0.9}),
                ),
                ("/histograms", json!({})),
            ],
        ));
        let mut h = Harness::new_ui(|ui| show(ui, &m, None));
        h.set_size(egui::vec2(1000.0, 600.0));
        h.run();
        h.get_by_label_contains("not a per-request distribution");
        h.get_by_label("TTFT: mean 200.0 ms · p50 100.0 ms · p90 300.0 ms · p99 900.0 ms");
        h.get_by_label("No per-request trace for this run: no throughput over time.");
    }

    /// Throughput over time: both plots, their totals and the report's averages under them.
    #[test]
    fn the_serving_panel_plots_throughput_over_time() {
        let m = Metrics::from_report(&with(
            serving(),
            &[
                ("/throughput/output_tokens_per_s", json!(150.0)),
                ("/throughput/requests_per_s", json!(1.5)),
            ],
        ));
        let t = Throughput {
            bucket_s: 1.0,
            tokens: vec![100, 200],
            requests: vec![1, 2],
        };
        let mut h = Harness::new_ui(|ui| show(ui, &m, Some(&t)));
        h.set_size(egui::vec2(1000.0, 900.0));
        h.run();
        h.get_by_label("Throughput over time");
        h.get_by_label_contains("in buckets of 1.0 s");
        h.get_by_label("output tokens/s: peak 200.0/s · 300 in all · run average 150.0/s");
        h.get_by_label("requests completed/s: peak 2.0/s · 3 in all · run average 1.5/s");
    }

    #[test]
    fn the_diffusion_panel_lists_every_phase() {
        let video = shipped("diffusion/hunyuanvideo-720p-8xh100-ulysses.toml", &[]);
        let m = Metrics::from_report(&with(
            video,
            &[
                ("/latency_s", json!(10.0)),
                (
                    "/breakdown_s",
                    json!({"text_encode": 0.5, "denoise": 9.0, "denoise_compute": 8.0,
                        "communication": 2.0, "exposed_communication": 1.0,
                        "pipeline_wait": 0.0, "vae_decode": 0.5, "offload": 0.0}),
                ),
            ],
        ));
        let mut h = Harness::new_ui(|ui| show(ui, &m, None));
        h.set_size(egui::vec2(1000.0, 600.0));
        h.run();
        h.get_by_label("denoise compute 8.0 s (80.0%)");
        h.get_by_label("VAE decode 500.0 ms (5.0%)");
        h.get_by_label("latency 10.0 s");
    }
}
