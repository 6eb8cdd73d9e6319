//! The summary of a cluster run: what sharing cost each job (a training step, a fleet's
//! latency, a video's), and the links they shared; read from the typed report
//! (`report::cluster`; a fleet's latency figures and each job's own report are JSON).

use super::*;
use crate::report::cluster::{ClusterReport, Job};

/// The summary of a cluster scenario; `r` is its JSON, for the sections kept untyped.
pub(super) fn render_cluster(c: &ClusterReport, r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  [cluster]", c.scenario);
    row(
        &mut out,
        "GPUs",
        format!(
            "{} x {} ({} nodes, {})",
            c.cluster.gpus, c.cluster.gpu, c.cluster.nodes, c.cluster.topology
        ),
    );
    for job in &c.jobs {
        row(
            &mut out,
            &format!("job {}", job.name),
            format!(
                "servers {}-{} ({} GPUs): {}",
                job.servers[0],
                job.servers[1],
                job.gpus,
                job_line(job)
            ),
        );
    }
    let links = &c.links;
    row(
        &mut out,
        "links",
        format!(
            "{} links carried traffic between servers, {} of them for more than one job",
            links.used, links.shared_by_jobs
        ),
    );
    for (i, l) in links.busiest.iter().take(3).enumerate() {
        let jobs: Vec<&str> = l.jobs.keys().map(String::as_str).collect();
        row(
            &mut out,
            if i == 0 { "busiest" } else { "" },
            format!(
                "{} -> {}: busy {:.0}% of the run ({})",
                l.from,
                l.to,
                100.0 * l.busy,
                jobs.join(", ")
            ),
        );
    }
    row(
        &mut out,
        "fidelity",
        format!("network {}; {}", c.fidelity.network, c.fidelity.sharing),
    );
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} events, {} of cluster time, {} steps per job counted",
            c.sim.events,
            seconds(c.sim.simulated_s.unwrap_or(f64::NAN)),
            c.sim.steps.map_or(f64::NAN.to_string(), |s| s.to_string())
        ),
    );
    out
}

/// What sharing cost one job, in its kind's terms.
fn job_line(job: &Job) -> String {
    let change = 100.0 * (job.slowdown - 1.0);
    match (job.kind.as_str(), &job.latency, &job.step_s) {
        ("serving", Some(l), _) => format!(
            "mean end-to-end {} alone, {} beside the others ({change:+.1}%); KV transfer {} -> {}",
            seconds(num(&l.alone, "e2e_s.mean")),
            seconds(num(&l.shared, "e2e_s.mean")),
            seconds(num(&l.alone, "kv_transfer_s.mean")),
            seconds(num(&l.shared, "kv_transfer_s.mean")),
        ),
        ("diffusion", _, _) => format!(
            "video {} (inside its servers: shares no link)",
            seconds(num(&job.report, "latency_s"))
        ),
        (_, _, step) => format!(
            "step {} alone, {} beside the others ({change:+.1}%)",
            seconds(step.as_ref().map_or(f64::NAN, |s| s.alone)),
            seconds(step.as_ref().map_or(f64::NAN, |s| s.shared)),
        ),
    }
}
