//! The readable summary `clustersim run` prints without `--json`, read from the report JSON.

mod cluster;
mod collective;
mod diffusion;
mod federated;
mod kernels;
mod serving;
mod training;

use crate::report::any::Report;
use crate::uncertainty::{Interval, headline};
use cluster::render_cluster;
use collective::render_collective;
use diffusion::render_diffusion;
use federated::render_federated;
use kernels::render_kernels;
use serde_json::Value;
use serving::render_serving;
use std::fmt::Write;
use training::render_training;

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

/// The summary of report `r`, or why it does not read as a report of its kind.
pub fn render(r: &Value) -> String {
    match Report::from_value(r) {
        Ok(Report::Training(t)) => render_training(&t, r),
        Ok(Report::Serving(s)) => render_serving(&s, r),
        Ok(Report::Diffusion(d)) => render_diffusion(&d, r),
        Ok(Report::Collective(c)) => render_collective(&c, r),
        Ok(Report::Kernels(k)) => render_kernels(&k, r),
        Ok(Report::Federated(f)) => render_federated(&f, r),
        Ok(Report::Cluster(c)) => render_cluster(&c, r),
        Err(e) => format!("{e}\n"),
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
