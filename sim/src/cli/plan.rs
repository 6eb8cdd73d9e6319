//! `clustersim plan`: the planner's table, or its JSON.

use clap::Args;
use clustersim::plan::{self, Options};
use clustersim::scenario::Scenario;
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
    /// Best-ranked configurations to simulate in full (in parallel); the rest are ranked by the
    /// closed-form estimate only.
    #[arg(long, default_value_t = 16)]
    simulate: usize,
    /// Override a key of the scenario before planning (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &PlanArgs) -> ExitCode {
    if args.top == 0 || args.simulate == 0 {
        eprintln!("error: --top and --simulate must be at least 1");
        return ExitCode::from(2);
    }
    let started = Instant::now();
    let scenario = match Scenario::load(&args.scenario, &args.sets) {
        Ok(s) => s,
        Err(e) => return super::bad_input(&e),
    };
    let options = Options {
        top: args.top,
        simulate: args.simulate.max(args.top),
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
    let mut out = String::new();
    let c = &p["candidates"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let _ = writeln!(out, "plan: {}", p["scenario"].as_str().unwrap_or(""));
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
    let _ = writeln!(
        out,
        "   rank       step     per GPU              memory  layout"
    );
    for t in p["top"].as_array().into_iter().flatten() {
        row(&mut out, &format!("{}", n(&t["rank"])), t);
    }
    row(&mut out, "yours", &p["reference"]["result"]);
    if let Some(best) = p["top"].get(0) {
        let _ = writeln!(out, "  best: {}", best["why"].as_str().unwrap_or(""));
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
