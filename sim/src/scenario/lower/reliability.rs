//! `[reliability]` read into `workload::training::reliability::Reliability`: at least one MTBF,
//! the checkpoint write and restart times required (they dominate the answer, so no silent
//! default), the rejoin time, regrouping stall and checkpoint interval defaulted and recorded;
//! and its stragglers (one slow GPU, one server's slow links), 1 when absent.

use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::workload::training::reliability::Reliability;

/// Reads `[reliability]`; None when the scenario has none. MTBFs: at least one; checkpoint
/// write and restart times are required (no silent defaults: they dominate the answer).
pub fn reliability(
    s: &Scenario,
    assumptions: &mut Vec<String>,
) -> Result<Option<Reliability>, ScenarioError> {
    let Some(r) = &s.file.reliability else {
        return Ok(None);
    };
    let secs = |d: Option<crate::scenario::quantity::Period>| d.map(|d| d.0);
    let (gpu, node) = (secs(r.gpu_mtbf), secs(r.node_mtbf));
    if gpu.is_none() && node.is_none() {
        return Err(s
            .error_at(
                "reliability",
                "[reliability] needs gpu_mtbf, node_mtbf or both",
            )
            .with_help("e.g. gpu_mtbf = \"50000 h\" (one GPU's mean time between failures)"));
    }
    for (value, key) in [
        (gpu, "reliability.gpu_mtbf"),
        (node, "reliability.node_mtbf"),
        (secs(r.restart), "reliability.restart"),
        // Daly's optimal interval goes to zero with the write time: checkpointing every
        // instant.
        (secs(r.checkpoint_write), "reliability.checkpoint_write"),
        (secs(r.rejoin), "reliability.rejoin"),
        (
            secs(r.checkpoint_interval),
            "reliability.checkpoint_interval",
        ),
    ] {
        if value == Some(0.0) {
            return Err(s.error_at(key, format!("`{key}` must be longer than zero")));
        }
    }
    let Some(checkpoint_write_s) = secs(r.checkpoint_write) else {
        return Err(s
            .error_at("reliability", "[reliability] needs checkpoint_write")
            .with_help(
                "how long the job stalls to write a checkpoint, e.g. checkpoint_write = \"60 s\"",
            ));
    };
    let Some(restart_s) = secs(r.restart) else {
        return Err(s
            .error_at("reliability", "[reliability] needs restart")
            .with_help("detection, re-queue, restart and reload after a failure, e.g. restart = \"10 min\""));
    };
    let rejoin_s = match secs(r.rejoin) {
        Some(j) => j,
        None => {
            assumptions.push(
                "a failed replica rejoins fault-tolerant training after the restart time".into(),
            );
            restart_s
        }
    };
    let stall_s = match secs(r.stall) {
        Some(x) => x,
        None => {
            assumptions.push(
                "fault-tolerant training loses only the step in flight when a replica fails (no regrouping stall)"
                    .into(),
            );
            0.0
        }
    };
    let checkpoint_interval_s = secs(r.checkpoint_interval);
    if checkpoint_interval_s.is_none() {
        assumptions
            .push("checkpoint interval: the Young/Daly optimum for the cluster's MTBF".into());
    }
    Ok(Some(Reliability {
        gpu_mtbf_s: gpu,
        node_mtbf_s: node,
        checkpoint_write_s,
        checkpoint_interval_s,
        restart_s,
        rejoin_s,
        stall_s,
    }))
}

/// `[reliability]`'s stragglers: how many times slower one GPU of the last pipeline stage
/// computes, and how many times slower its server's network links run (1 when absent).
pub(crate) fn stragglers(
    s: &Scenario,
    assumptions: &mut Vec<String>,
) -> Result<(f64, f64), ScenarioError> {
    let r = s.file.reliability.as_ref();
    let straggler_slowdown = slowdown(
        s,
        r.and_then(|r| r.straggler_slowdown),
        "reliability.straggler_slowdown",
        "a straggler is 1 or more times slower than its peers",
        "e.g. straggler_slowdown = 1.2 for one GPU 20% slower",
    )?;
    let link_slowdown = slowdown(
        s,
        r.and_then(|r| r.straggler_link_slowdown),
        "reliability.straggler_link_slowdown",
        "a slow link is 1 or more times slower than the others",
        "e.g. straggler_link_slowdown = 4 for a NIC at a quarter of its speed",
    )?;
    if straggler_slowdown > 1.0 {
        assumptions.push(format!(
            "one GPU of the last pipeline stage computes {straggler_slowdown}x slower; its stage runs at its pace"
        ));
    }
    Ok((straggler_slowdown, link_slowdown))
}

/// A slowdown at `path`: 1 when absent, else finite and at least 1 (`what` says why).
fn slowdown(
    s: &Scenario,
    v: Option<f64>,
    path: &str,
    what: &str,
    help: &str,
) -> Result<f64, ScenarioError> {
    match v {
        None => Ok(1.0),
        Some(x) if x.is_finite() && x >= 1.0 => Ok(x),
        Some(x) => Err(s.error_at(path, format!("{what}, not {x}")).with_help(help)),
    }
}
