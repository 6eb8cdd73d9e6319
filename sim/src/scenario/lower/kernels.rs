//! `kind = "kernels"` lowered: the `[kernels]` table checked at its keys (counts of at least 1,
//! at most `MAX_CHILDREN` children, `consolidate` at most `children`), on the cluster's GPU;
//! the launch overhead the roofline's unless given, recorded.

use crate::hw::ComputeModel;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::workload::kernels::{KernelsConfig, MAX_CHILDREN};

/// The scenario's launches, every key checked.
pub fn lower(s: &Scenario) -> Result<KernelsConfig, ScenarioError> {
    let mut assumptions = Vec::new();
    let k = s.file.kernels.as_ref().ok_or_else(|| {
        s.error_at("kernels", "a kernels scenario needs a [kernels] table")
            .with_help("add [kernels] with children, blocks, bytes and consolidate")
    })?;
    let setup = cluster::resolve(
        s,
        &mut assumptions,
        Needs {
            sizes: false,
            inter_node: false,
        },
    )?;
    for (value, key) in [
        (k.children, "children"),
        (k.blocks, "blocks"),
        (k.consolidate, "consolidate"),
    ] {
        if value == 0 {
            return Err(s.error_at(
                &format!("kernels.{key}"),
                format!("`{key}` must be at least 1"),
            ));
        }
    }
    if k.children > MAX_CHILDREN {
        return Err(s
            .error_at(
                "kernels.children",
                format!(
                    "{} children; each launch is a span of the trace, for at most {MAX_CHILDREN}",
                    k.children
                ),
            )
            .with_help(format!("at most {MAX_CHILDREN} children")));
    }
    if k.consolidate > k.children {
        return Err(s
            .error_at(
                "kernels.consolidate",
                format!(
                    "consolidate = {} is more than the {} children",
                    k.consolidate, k.children
                ),
            )
            .with_help("at most `children`: one launch for all of them"));
    }
    let flops = k.flops.unwrap_or(0.0);
    if !(flops.is_finite() && flops >= 0.0) {
        return Err(s.error_at("kernels.flops", "`flops` is a count of 0 or more"));
    }
    let compute = ComputeModel::new(setup.gpu);
    let overhead = match k.launch_overhead {
        Some(d) => d.secs(),
        None => {
            let roofline = compute.efficiency.kernel_overhead_s;
            assumptions.push(format!(
                "launch overhead {} us a launch (the roofline's kernel overhead, host launches)",
                roofline * 1e6
            ));
            roofline
        }
    };
    Ok(KernelsConfig {
        scenario: s.name(),
        compute,
        children: k.children,
        blocks: k.blocks,
        bytes: k.bytes.0,
        flops,
        consolidate: k.consolidate,
        launch_overhead: overhead,
        assumptions,
    })
}
