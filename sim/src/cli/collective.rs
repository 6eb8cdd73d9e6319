//! `clustersim collective`: price one collective, or a nccl-tests-style sweep of sizes, on a
//! cluster described by flags (`clustersim::collective_bench`), and print nccl-tests' columns
//! (size, time, algbw, busbw) or the JSON.

use clap::Args;
use clustersim::collective_bench::Bench;
use serde_json::{Value, json};
use std::fmt::Write;

#[derive(Args)]
pub struct CollectiveArgs {
    #[command(flatten)]
    bench: Bench,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs the command; Err is bad input (exit 2).
pub fn run(a: &CollectiveArgs) -> Result<String, String> {
    let started = std::time::Instant::now();
    let mut report = a.bench.run()?;
    if a.json {
        report["sim"] = json!({ "wall_s": started.elapsed().as_secs_f64() });
        return Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&report).expect("serialises")
        ));
    }
    Ok(table(&report))
}

/// nccl-tests' columns, one line a size.
fn table(r: &Value) -> String {
    let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
    let nodes = r["nodes"].as_u64().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} over {} x {} ({nodes} node{} of {}), {}, {} tier",
        text(&r["op"]),
        r["ranks"],
        text(&r["gpu"]),
        if nodes == 1 { "" } else { "s" },
        r["gpus_per_node"],
        text(&r["topology"]),
        text(&r["fidelity"]["network"])
    );
    let _ = writeln!(
        out,
        "# {:>12} {:>12} {:>12} {:>12}  {:<16} {:<8} {:>6}",
        "size(B)", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm", "protocol", "steps"
    );
    for row in r["results"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {:>12} {:>12.2} {:>12.2} {:>12.2}  {:<16} {:<8} {:>6}",
            row["size_bytes"].as_u64().unwrap_or(0),
            num(&row["time_s"]) * 1e6,
            num(&row["algbw_GBps"]),
            num(&row["busbw_GBps"]),
            text(&row["algorithm"]),
            text(&row["protocol"]),
            row["steps"].as_u64().unwrap_or(0)
        );
    }
    out
}
