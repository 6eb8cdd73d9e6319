//! `clustersim plan`: the planner's table, or its JSON.

use clap::Args;
use clustersim::plan::{self, Flags, Objective};
use clustersim::scenario::Scenario;
use clustersim::uncertainty::Interval;
use serde_json::Value;
use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct PlanArgs {
    scenario: PathBuf,
    /// Configurations to print, best first.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Training: best-ranked configurations to simulate in full (in parallel; default 16); the
    /// rest are ranked by the closed-form estimate only. Serving and diffusion plans simulate
    /// every valid candidate.
    #[arg(long)]
    simulate: Option<usize>,
    /// What to rank by: fastest, cheapest (GPU-seconds per token or video) or fewest-gpus
    /// (serving: meets --slo-attainment; diffusion: meets --max-latency).
    #[arg(long, default_value = "fastest", value_parser = Objective::parse)]
    objective: Objective,
    /// Serving, --objective fewest-gpus: the fraction of requests that must meet the scenario's
    /// [slo] (default 0.9).
    #[arg(long, value_name = "FRACTION")]
    slo_attainment: Option<f64>,
    /// Diffusion, --objective fewest-gpus: the latency one video must meet, e.g. "60 s".
    #[arg(long, value_name = "DURATION", value_parser = plan::flags::latency_s)]
    max_latency: Option<f64>,
    /// Training and diffusion: memory kept free on every GPU beyond the modelled peak (CUDA
    /// context, allocator fragmentation), e.g. "4 GiB" (default none).
    #[arg(long, value_name = "SIZE", value_parser = plan::flags::headroom_bytes)]
    memory_headroom: Option<f64>,
    /// Override a key of the scenario before planning (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &PlanArgs) -> ExitCode {
    let flags = Flags {
        top: args.top,
        simulate: args.simulate,
        objective: args.objective,
        slo_attainment: args.slo_attainment,
        max_latency_s: args.max_latency,
        headroom_bytes: args.memory_headroom,
    };
    if let Err(e) = flags.check() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let started = Instant::now();
    let scenario = match Scenario::load(&args.scenario, &args.sets) {
        Ok(s) => s,
        Err(e) => return super::bad_input(&e),
    };
    let options = match flags.options(scenario.kind) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut result = match plan::plan(&scenario, &options) {
        Ok(r) => r,
        Err(e) => return super::bad_input(&e),
    };
    result["sim"] = serde_json::json!({ "wall_s": started.elapsed().as_secs_f64() });
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&result).expect("a plan serialises")
        );
    } else {
        print!("{}", render(&result));
    }
    ExitCode::SUCCESS
}

fn render(p: &Value) -> String {
    match p["workload"].as_str() {
        Some("serving") => render_serving(p),
        Some("diffusion") => render_diffusion(p),
        _ => render_training(p),
    }
}

fn render_training(p: &Value) -> String {
    let mut out = String::new();
    let c = &p["candidates"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let _ = writeln!(out, "plan: {}", p["scenario"].as_str().unwrap_or(""));
    let _ = writeln!(
        out,
        "  objective: {}",
        p["objective_means"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        out,
        "  {} candidates considered; {} invalid, {} do not fit in memory; {} ranked by estimate, {} simulated ({:.1} s)",
        n(&c["considered"]),
        n(&c["pruned"]["invalid"]),
        n(&c["pruned"]["does_not_fit"]),
        n(&c["ranked"]),
        n(&c["simulated"]),
        p["sim"]["wall_s"].as_f64().unwrap_or(0.0)
    );
    if let Some(reasons) = c["pruned"]["invalid_by_reason"].as_object() {
        for (reason, count) in reasons {
            let _ = writeln!(out, "    {:>8}  {reason}", n(count));
        }
    }
    let row = |out: &mut String, label: &str, r: &Value| {
        let _ = writeln!(
            out,
            "  {label:>5}  {:>9.3} s  {:>6.1} TFLOP/s  MFU {:>5.1}%  {:>5.1} GiB  {}",
            r["iteration_time_s"].as_f64().unwrap_or(f64::NAN),
            r["tflops_per_gpu"].as_f64().unwrap_or(f64::NAN),
            100.0 * r["mfu"].as_f64().unwrap_or(f64::NAN),
            r["memory"]["peak_bytes_per_gpu"]
                .as_f64()
                .unwrap_or(f64::NAN)
                / 1073741824.0,
            r["layout"].as_str().unwrap_or("")
        );
    };
    table(
        &mut out,
        p,
        "   rank       step     per GPU              memory  layout",
        row,
    );
    if let Some(best) = p["top"].get(0) {
        let _ = writeln!(out, "  best: {}", best["why"].as_str().unwrap_or(""));
        out.push_str(&within_best(p, best));
        if let Some(h) = best["gpu_hours_per_million_tokens"].as_f64() {
            let _ = writeln!(out, "  cost: {h:.3} GPU-hours per million tokens");
        }
        let sets: Vec<String> = best["set"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(|s| format!("--set {s}")))
            .collect();
        let _ = writeln!(
            out,
            "  reproduce: clustersim run SCENARIO {}",
            sets.join(" ")
        );
    }
    let r = &p["ranking"];
    if let (Some(median), Some(worst)) = (
        r["estimate_error_median"].as_f64(),
        r["estimate_error_worst"].as_f64(),
    ) {
        let _ = writeln!(
            out,
            "  estimate vs simulation on the simulated candidates: median {:+.1}%, worst {:+.1}%",
            100.0 * median,
            100.0 * worst
        );
    }
    out
}

/// A serving or diffusion plan's first lines: the scenario, the objective and its target, and
/// how the candidates were accounted for.
/// The table of a plan: its header, a row per top configuration, and the scenario's own.
fn table(out: &mut String, p: &Value, header: &str, row: impl Fn(&mut String, &str, &Value)) {
    let _ = writeln!(out, "{header}");
    for t in p["top"].as_array().into_iter().flatten() {
        row(out, &t["rank"].as_u64().unwrap_or(0).to_string(), t);
    }
    row(out, "yours", &p["reference"]["result"]);
}

fn head(out: &mut String, p: &Value) {
    let c = &p["candidates"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let _ = writeln!(
        out,
        "plan: {}  [{}]",
        p["scenario"].as_str().unwrap_or(""),
        p["workload"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        out,
        "  objective: {}",
        p["objective_means"].as_str().unwrap_or("")
    );
    let t = &p["target"];
    if let Some(a) = t["slo_attainment"].as_f64() {
        let _ = writeln!(out, "  target: SLO attainment >= {:.0}%", 100.0 * a);
    }
    if let Some(l) = t["max_latency_s"].as_f64() {
        let _ = writeln!(out, "  target: latency <= {l:.1} s");
    }
    let _ = writeln!(
        out,
        "  {} candidates on {} x {}; {} invalid, {} do not fit; {} simulated in full ({:.1} s)",
        n(&c["considered"]),
        n(&p["cluster"]["gpus"]),
        p["cluster"]["gpu"].as_str().unwrap_or(""),
        n(&c["pruned"]["invalid"]),
        n(&c["pruned"]["does_not_fit"]),
        n(&c["simulated"]),
        p["sim"]["wall_s"].as_f64().unwrap_or(0.0)
    );
    for key in ["invalid_by_reason", "does_not_fit_by_reason"] {
        if let Some(reasons) = c["pruned"][key].as_object() {
            for (reason, count) in reasons {
                let _ = writeln!(out, "    {:>8}  {reason}", n(count));
            }
        }
    }
}

/// The ranks whose step time lies inside the best's 80% interval: layouts the simulator cannot
/// tell apart from the best. Empty without an interval.
fn within_best(p: &Value, best: &Value) -> String {
    let Some(Interval { low, high, .. }) = Interval::within(best, "iteration_time_s_80") else {
        return String::new();
    };
    let close: Vec<String> = p["top"]
        .as_array()
        .into_iter()
        .flatten()
        .skip(1)
        .filter(|r| {
            r["iteration_time_s"]
                .as_f64()
                .is_some_and(|t| low <= t && t <= high)
        })
        .filter_map(|r| r["rank"].as_u64().map(|k| k.to_string()))
        .collect();
    if close.is_empty() {
        return format!("  the best's 80% interval ({low:.3}-{high:.3} s) holds no other rank\n");
    }
    format!(
        "  rank {} inside the best's 80% interval ({low:.3}-{high:.3} s): within the simulator's \
         uncertainty on an absolute step time (layouts on one stack share much of their error, so \
         the ranking is surer); measure the close ones before choosing\n",
        close.join(", ")
    )
}

/// The best's `--set` options as a command, or why nothing is listed.
fn tail(out: &mut String, p: &Value) {
    match p["top"].get(0) {
        Some(best) => {
            let sets: Vec<String> = best["set"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(|s| format!("--set {s}")))
                .collect();
            let _ = writeln!(
                out,
                "  reproduce: clustersim run SCENARIO {}",
                sets.join(" ")
            );
        }
        None if p["target"]["met"] == false => {
            let _ = writeln!(
                out,
                "  no candidate meets the target; the best of each GPU count is in --json's by_gpus"
            );
        }
        None => {
            let _ = writeln!(out, "  no candidate fits");
        }
    }
}

fn render_serving(p: &Value) -> String {
    let mut out = String::new();
    head(&mut out, p);
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let row = |out: &mut String, label: &str, r: &Value| {
        let _ = writeln!(
            out,
            "  {label:>5}  {:>4}  {:>10.0}  {:>6.2}  {:>8.3} s  {:>7.1} ms  {:>8.2} s  {:>5.1}%  {:>9.3}  {}",
            r["gpus"].as_u64().unwrap_or(0),
            f(&r["throughput"]["output_tokens_per_s"]),
            f(&r["throughput"]["requests_per_s"]),
            f(&r["ttft_s"]["p50"]),
            1e3 * f(&r["tpot_s"]["p50"]),
            f(&r["e2e_s"]["p90"]),
            100.0 * f(&r["slo"]["attainment"]),
            f(&r["gpu_hours_per_million_output_tokens"]),
            r["layout"].as_str().unwrap_or("")
        );
    };
    table(
        &mut out,
        p,
        "   rank  GPUs  out tok/s   req/s  TTFT p50    TPOT p50   e2e p90    SLO  GPU-h/Mtok  layout",
        row,
    );
    tail(&mut out, p);
    out
}

fn render_diffusion(p: &Value) -> String {
    let mut out = String::new();
    head(&mut out, p);
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let row = |out: &mut String, label: &str, r: &Value| {
        let _ = writeln!(
            out,
            "  {label:>5}  {:>4}  {:>9.2} s  {:>7.3} s  {:>8.1}  {:>6.1} GiB  {:>8.4}  {}",
            r["gpus"].as_u64().unwrap_or(0),
            f(&r["latency_s"]),
            f(&r["denoise_step_s"]),
            f(&r["videos_per_hour"]),
            f(&r["memory"]["peak_bytes_per_gpu"]) / 1073741824.0,
            f(&r["gpu_hours_per_video"]),
            r["layout"].as_str().unwrap_or("")
        );
    };
    table(
        &mut out,
        p,
        "   rank  GPUs      latency       step  videos/h      memory  GPU-h/video  layout",
        row,
    );
    tail(&mut out, p);
    out
}
