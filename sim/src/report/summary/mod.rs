//! The readable summary `clustersim run` prints without `--json`, read from the report JSON.

mod cluster;
mod collective;
mod diffusion;
mod federated;
mod kernels;
mod serving;

use crate::uncertainty::{Interval, headline};
use cluster::render_cluster;
use collective::render_collective;
use diffusion::render_diffusion;
use federated::render_federated;
use kernels::render_kernels;
use serde_json::Value;
use serving::render_serving;
use std::fmt::Write;

fn num(v: &Value, path: &str) -> f64 {
    path.split('.')
        .try_fold(v, |v, p| v.get(p))
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN)
}

/// "1 node of 8", "8 nodes of 8": the report's cluster shape.
fn nodes_of(r: &Value) -> String {
    let nodes = num(r, "cluster.nodes");
    let noun = if nodes == 1.0 { "node" } else { "nodes" };
    format!("{nodes} {noun} of {}", num(r, "cluster.gpus_per_node"))
}

fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / (1u64 << 30) as f64)
}

fn seconds(s: f64) -> String {
    match s {
        0.0 => "0 s".to_string(),
        s if s >= 7200.0 => format!("{:.1} h", s / 3600.0),
        s if s >= 120.0 => format!("{:.1} min", s / 60.0),
        s if s >= 1.0 => format!("{s:.3} s"),
        s if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
        s => format!("{:.3} us", s * 1e6),
    }
}

/// `x` with three significant digits (at least none after the point): 0.00312, 4.52, 1234.
fn significant(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// " (80%: low to high)" for the interval `uncertainty.<path>` of a report, each bound shown
/// as `show` shows the figure; empty when the report has none.
fn band(r: &Value, path: &str, show: impl Fn(f64) -> String) -> String {
    Interval::at(r, path).map_or(String::new(), |i| {
        format!(
            " ({:.0}%: {} to {})",
            100.0 * i.level,
            show(i.low),
            show(i.high)
        )
    })
}

/// Where the report's intervals come from (every figure's share one band): one row, or none
/// without `uncertainty`.
fn uncertainty_row(out: &mut String, r: &Value) {
    let Some(own) = r["uncertainty"]["regime"].as_str() else {
        return;
    };
    let kind = r["kind"].as_str().unwrap_or("");
    let first = headline(kind)
        .iter()
        .find_map(|(path, _)| Interval::at(r, path));
    if let Some(i) = first {
        let from = i.regime.as_deref().unwrap_or(own);
        row(
            out,
            "intervals",
            format!(
                "80% from the errors on {} published cases of {} sources in {from}{} \
                 (docs/UNCERTAINTY.md)",
                i.cases.unwrap_or(0),
                i.sources.unwrap_or(0),
                if from == own {
                    String::new()
                } else {
                    format!("; {own} has too few")
                }
            ),
        );
    }
}

/// One labelled row of the summary.
fn row(out: &mut String, label: &str, value: String) {
    let _ = writeln!(out, "  {label:<22}{value}");
}

/// Where the intervals come from, then one row per assumption the run made, the first labelled
/// "assumed".
fn assumption_rows(out: &mut String, r: &Value) {
    uncertainty_row(out, r);
    let items = r["assumptions"].as_array().into_iter().flatten();
    for (i, item) in items.enumerate() {
        row(
            out,
            if i == 0 { "assumed" } else { "" },
            item.as_str().unwrap_or("").to_string(),
        );
    }
}

pub fn render(r: &Value) -> String {
    if r["kind"] == "serving" {
        return render_serving(r);
    }
    if r["kind"] == "diffusion" {
        return render_diffusion(r);
    }
    if r["kind"] == "collective" {
        return render_collective(r);
    }
    if r["kind"] == "federated" {
        return render_federated(r);
    }
    if r["kind"] == "cluster" {
        return render_cluster(r);
    }
    if r["kind"] == "kernels" {
        return render_kernels(r);
    }
    let mut out = String::new();
    let name = r["scenario"].as_str().unwrap_or("scenario");
    let kind = r["kind"].as_str().unwrap_or("?");
    let _ = writeln!(out, "{name}  [{kind}]");
    row(
        &mut out,
        "GPUs",
        format!(
            "{} x {} ({})",
            num(r, "cluster.gpus"),
            r["cluster"]["gpu"].as_str().unwrap_or("?"),
            nodes_of(r)
        ),
    );
    row(
        &mut out,
        "model",
        format!(
            "{} ({:.2} B parameters)",
            r["model"]["name"].as_str().unwrap_or("?"),
            num(r, "model.params") / 1e9
        ),
    );
    let p = &r["parallel"];
    row(
        &mut out,
        "parallel",
        format!(
            "dp {} tp {} pp {} cp {} ep {}{}{}, micro-batch {}, global batch {} ({} accumulation steps), recompute {}, ZeRO {}",
            p["dp"],
            p["tp"],
            p["pp"],
            p["cp"],
            p["ep"],
            if p["sequence_parallel"] == true {
                " (sequence parallel)"
            } else {
                ""
            },
            if p["pp"].as_u64().unwrap_or(1) > 1 {
                format!(
                    ", {} schedule with {} virtual stages",
                    p["schedule"].as_str().unwrap_or("?"),
                    p["virtual_stages"]
                )
            } else {
                String::new()
            },
            p["micro_batch"],
            p["global_batch"],
            p["accumulation_steps"],
            p["recompute"].as_str().unwrap_or("?"),
            p["zero"]
        ),
    );
    row(
        &mut out,
        "iteration time",
        format!(
            "{}{}",
            seconds(num(r, "iteration_time_s")),
            band(r, "iteration_time_s", seconds)
        ),
    );
    row(
        &mut out,
        "tokens/s",
        format!(
            "{:.0}{}",
            num(r, "tokens_per_s"),
            band(r, "tokens_per_s", |x| format!("{x:.0}"))
        ),
    );
    row(
        &mut out,
        "TFLOP/s per GPU",
        format!(
            "{:.1}{} model ({:.1}% MFU), {:.1} hardware ({:.1}% HFU)",
            num(r, "tflops_per_gpu"),
            band(r, "tflops_per_gpu", |x| format!("{x:.1}")),
            100.0 * num(r, "mfu"),
            num(r, "hardware_tflops_per_gpu"),
            100.0 * num(r, "hfu")
        ),
    );
    row(
        &mut out,
        "step breakdown",
        format!(
            "compute {} ({} of it from collectives slowing the kernels beside them), exposed \
             communication {}, pipeline bubble {}",
            seconds(num(r, "breakdown_s.compute")),
            seconds(num(r, "contention.compute_s")),
            seconds(num(r, "breakdown_s.exposed_communication")),
            seconds(num(r, "breakdown_s.pipeline_bubble"))
        ),
    );
    let fits = r["memory"]["fits"].as_bool().unwrap_or(false);
    row(
        &mut out,
        "memory per GPU",
        format!(
            "{} of {} ({})",
            gib(num(r, "memory.peak_bytes_per_gpu")),
            gib(num(r, "memory.capacity_bytes")),
            if fits { "fits" } else { "DOES NOT FIT" }
        ),
    );
    capacity_rows(&mut out, r);
    let f = &r["fidelity"];
    row(
        &mut out,
        "fidelity",
        format!(
            "compute {}, network {}; {}",
            f["compute"].as_str().unwrap_or("?"),
            f["network"].as_str().unwrap_or("?"),
            f["symmetry"].as_str().unwrap_or("")
        ),
    );
    rank_rows(&mut out, r);
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} events in {}",
            num(r, "sim.events"),
            seconds(num(r, "sim.wall_s"))
        ),
    );
    out
}

/// Every rank simulated: who finished when, and whom the others waited for.
fn rank_rows(out: &mut String, r: &Value) {
    let k = &r["ranks"];
    if !k.is_object() {
        return;
    }
    let held: Vec<String> = k["held_up_by"]
        .as_array()
        .into_iter()
        .flatten()
        .take(3)
        .map(|h| {
            format!(
                "GPU {} ({})",
                h["gpu"],
                seconds(h["others_waited_s"].as_f64().unwrap_or(0.0))
            )
        })
        .collect();
    row(
        out,
        "ranks",
        format!(
            "pipelines finish between {} and {}; GPUs waited {} at collectives ({} a GPU){}",
            seconds(num(r, "ranks.finish_s.first")),
            seconds(num(r, "ranks.finish_s.last")),
            seconds(num(r, "ranks.waited_s.total")),
            seconds(num(r, "ranks.waited_s.per_gpu")),
            if held.is_empty() {
                String::new()
            } else {
                format!(", mostly for {}", held.join(", "))
            }
        ),
    );
}

/// Training's energy, goodput, cost and time to train, where the scenario asked for them.
fn capacity_rows(out: &mut String, r: &Value) {
    if r["energy"].is_object() {
        row(
            out,
            "energy",
            format!(
                "{:.0} W per GPU ({:.0}% busy), {} kWh per million tokens",
                num(r, "energy.board_watts_per_gpu"),
                100.0 * num(r, "energy.gpu_busy_fraction"),
                significant(num(r, "energy.kwh_per_million_tokens"))
            ),
        );
    }
    if r["power"].is_object() {
        let limit = if r["power"]["limited"] == true {
            format!(
                "; held to {:.0} W, GEMMs at {:.0}% of their clock",
                num(r, "power.limit_watts"),
                100.0 * num(r, "power.gemm_clock")
            )
        } else {
            String::new()
        };
        row(
            out,
            "power",
            format!(
                "{:.0} W peak, {:.0} W mean, {:.0} W while waiting (per GPU, by kernel){limit}",
                num(r, "power.peak_watts"),
                num(r, "power.mean_watts"),
                num(r, "power.p1_watts"),
            ),
        );
    }
    if r["reliability"].is_object() {
        row(
            out,
            "goodput",
            format!(
                "{:.1}% with synchronous restart, {:.1}% fault-tolerant ({} replicas); {:.1} failures a day, checkpoint every {}",
                100.0 * num(r, "reliability.synchronous_restart.goodput"),
                100.0 * num(r, "reliability.fault_tolerant.goodput"),
                num(r, "reliability.fault_tolerant.replicas"),
                num(r, "reliability.failures_per_day"),
                seconds(num(r, "reliability.checkpoint_interval_s"))
            ),
        );
    }
    if r["cost"].is_object() && r["cost"]["usd_per_million_tokens"].is_number() {
        row(
            out,
            "cost",
            format!(
                "${:.2} of GPU time per million tokens",
                num(r, "cost.usd_per_million_tokens")
            ),
        );
    }
    if r["capacity"].is_object() {
        let c = &r["capacity"];
        let usd = c["cost_usd"]["total"]
            .as_f64()
            .map_or(String::new(), |u| format!(", ${:.2} M", u / 1e6));
        row(
            out,
            "to train",
            format!(
                "{:.3e} tokens in {:.1} days, {:.0} GPU-hours, {:.0} MWh{usd}",
                num(c, "tokens"),
                num(c, "time_to_train_days"),
                num(c, "gpu_hours"),
                num(c, "energy_kwh") / 1e3
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_figures_keep_three_significant_digits() {
        assert_eq!(significant(0.0030012), "0.00300");
        assert_eq!(significant(4.5219), "4.52");
        assert_eq!(significant(1234.4), "1234");
        assert_eq!(significant(0.0), "0");
        assert_eq!(seconds(0.0), "0 s");
        assert_eq!(seconds(0.0021849), "2.185 ms");
    }
}
