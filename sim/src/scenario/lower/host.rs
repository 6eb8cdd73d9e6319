//! `[cluster.host]` resolved to the servers' host (`hw::host`): each figure checked at its key,
//! each default recorded as an assumption. Only workloads that keep or compute something on the
//! host call it, so that other runs list no host assumptions.

use crate::hw::host::HostSpec;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;

/// The host `[cluster.host]` describes, its missing figures from [`HostSpec::DEFAULT`].
pub fn resolve(s: &Scenario, assumptions: &mut Vec<String>) -> Result<HostSpec, ScenarioError> {
    let section = s.file.cluster.host.clone().unwrap_or_default();
    let d = HostSpec::DEFAULT;
    let mut figure = |value: Option<f64>, key: &str, default: f64, what: &str| match value {
        Some(v) if v.is_finite() && v > 0.0 => Ok(v),
        Some(_) => Err(s
            .error_at(
                &format!("cluster.host.{key}"),
                format!("{key} must be positive"),
            )
            .with_help("state the figure of all the server's CPU sockets together")),
        None => {
            assumptions.push(format!(
                "host {what} (dual-socket Xeon Platinum 8480C with 2 TB, DGX H100's host)"
            ));
            Ok(default)
        }
    };
    let flops = figure(
        section.cpu_flops.map(|t| t.0),
        "cpu_flops",
        d.flops,
        "CPUs at 14.3 TFLOP/s (AVX-512 fp32)",
    )?;
    let memory_bandwidth = figure(
        section.memory_bandwidth.map(|b| b.0),
        "memory_bandwidth",
        d.memory_bandwidth,
        "memory at 614 GB/s (16 channels of DDR5-4800)",
    )?;
    let memory_bytes = figure(
        section.memory.map(|b| b.0 as f64),
        "memory",
        d.memory_bytes,
        "memory of 2 TB",
    )?;
    Ok(HostSpec {
        flops,
        memory_bandwidth,
        memory_bytes,
    })
}
