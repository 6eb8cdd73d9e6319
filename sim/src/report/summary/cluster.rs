//! The summary of a cluster run: what sharing cost each job (a training step, a fleet's
//! latency, a video's), and the links they shared.

use super::*;

pub(super) fn render_cluster(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [cluster]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    row(
        &mut out,
        "GPUs",
        format!(
            "{} x {} ({} nodes, {})",
            num(r, "cluster.gpus"),
            r["cluster"]["gpu"].as_str().unwrap_or("?"),
            num(r, "cluster.nodes"),
            r["cluster"]["topology"].as_str().unwrap_or("?")
        ),
    );
    for job in r["jobs"].as_array().into_iter().flatten() {
        let servers = &job["servers"];
        row(
            &mut out,
            &format!("job {}", job["name"].as_str().unwrap_or("?")),
            format!(
                "servers {}-{} ({} GPUs): {}",
                servers[0],
                servers[1],
                num(job, "gpus"),
                job_line(job)
            ),
        );
    }
    let links = &r["links"];
    row(
        &mut out,
        "links",
        format!(
            "{} links carried traffic between servers, {} of them for more than one job",
            num(links, "used"),
            num(links, "shared_by_jobs")
        ),
    );
    for (i, l) in links["busiest"]
        .as_array()
        .into_iter()
        .flatten()
        .take(3)
        .enumerate()
    {
        let jobs: Vec<&str> = l["jobs"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        row(
            &mut out,
            if i == 0 { "busiest" } else { "" },
            format!(
                "{} -> {}: busy {:.0}% of the run ({})",
                l["from"].as_str().unwrap_or("?"),
                l["to"].as_str().unwrap_or("?"),
                100.0 * num(l, "busy"),
                jobs.join(", ")
            ),
        );
    }
    row(
        &mut out,
        "fidelity",
        format!(
            "network {}; {}",
            r["fidelity"]["network"].as_str().unwrap_or("?"),
            r["fidelity"]["sharing"].as_str().unwrap_or("?")
        ),
    );
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} events, {} of cluster time, {} steps per job counted",
            num(r, "sim.events"),
            seconds(num(r, "sim.simulated_s")),
            num(r, "sim.steps")
        ),
    );
    out
}

/// What sharing cost one job, in its kind's terms.
fn job_line(job: &Value) -> String {
    let change = 100.0 * (num(job, "slowdown") - 1.0);
    match job["kind"].as_str() {
        Some("serving") => format!(
            "mean end-to-end {} alone, {} beside the others ({change:+.1}%); KV transfer {} -> {}",
            seconds(num(job, "latency.alone.e2e_s.mean")),
            seconds(num(job, "latency.shared.e2e_s.mean")),
            seconds(num(job, "latency.alone.kv_transfer_s.mean")),
            seconds(num(job, "latency.shared.kv_transfer_s.mean")),
        ),
        Some("diffusion") => format!(
            "video {} (inside its servers: shares no link)",
            seconds(num(job, "report.latency_s"))
        ),
        _ => format!(
            "step {} alone, {} beside the others ({change:+.1}%)",
            seconds(num(job, "step_s.alone")),
            seconds(num(job, "step_s.shared")),
        ),
    }
}
