//! `[cluster] power_limit`: a sustained board power limit below the TDP (`nvidia-smi -pl`, a
//! facility's cap), applied to a workload's compute model so that kernels that would draw more
//! run at a lower clock (`hw::clock`). Without the key the limit is the TDP, recorded as an
//! assumption: nothing throttles on a board that holds its rated clock there, and matrix kernels
//! run at the sustained clock on one that does not (`GpuSpec::sustained_clock`, Hopper SXM).
//!
//! Refused at the key: a limit above the TDP (boards cannot be set above it) and one below what a
//! memory-bound kernel draws (`hw::clock::lowest_limit`: the model lowers the SM clock only,
//! never the memory system's power).

use crate::hw::{ComputeModel, GpuSpec, clock};
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;

/// Sets `compute`'s power limit from `[cluster] power_limit`; the TDP, recorded, when absent.
/// `sustained`: the workload runs kernels back to back for long stretches (training, diffusion),
/// so matrix kernels hold the GPU's sustained clock at the TDP (`ComputeModel::sustained_load`).
pub fn apply(
    s: &Scenario,
    compute: &mut ComputeModel,
    sustained: bool,
    assumptions: &mut Vec<String>,
) -> Result<(), ScenarioError> {
    let gpu = compute.gpu.clone();
    compute.sustained_load = sustained;
    let Some(limit) = s.file.cluster.power_limit else {
        assumptions.push(if gpu.sustained_clock < 1.0 && sustained {
            format!(
                "board power limit: the TDP ({:.0} W), at which back-to-back GEMMs hold {:.1}% of \
                 the clock isolated kernels run at (the {}'s sustained clock)",
                gpu.tdp_watts,
                100.0 * gpu.sustained_clock,
                gpu.name
            )
        } else if gpu.sustained_clock < 1.0 {
            format!(
                "board power limit: the TDP ({:.0} W); kernels priced at the clock isolated \
                 kernels run at (the board's power window averages prefill GEMMs with \
                 memory-bound decode and idle gaps)",
                gpu.tdp_watts
            )
        } else {
            format!(
                "board power limit: the TDP ({:.0} W), so kernels run at their rated clock",
                gpu.tdp_watts
            )
        });
        return Ok(());
    };
    let watts = limit.0;
    check(s, "cluster.power_limit", watts, &gpu)?;
    compute.power_limit_watts = (watts < gpu.tdp_watts).then_some(watts);
    Ok(())
}

/// Refuses at `path` a limit of `watts` the model cannot run the `gpu` at: above its TDP or below
/// what a memory-bound kernel draws.
pub fn check(s: &Scenario, path: &str, watts: f64, gpu: &GpuSpec) -> Result<(), ScenarioError> {
    let lowest = clock::lowest_limit(gpu);
    if (lowest..=gpu.tdp_watts).contains(&watts) {
        return Ok(());
    }
    Err(s
        .error_at(
            path,
            format!(
                "power_limit {watts} W is outside what the model allows for the {}: {:.0} W \
                 (what a memory-bound kernel draws) to {:.0} W (its TDP)",
                gpu.name, lowest, gpu.tdp_watts
            ),
        )
        .with_help(format!(
            "give a limit between {:.0} W and {:.0} W, e.g. power_limit = \"{:.0} W\", or \
             remove the key to run at the TDP",
            lowest.ceil(),
            gpu.tdp_watts,
            (0.75 * gpu.tdp_watts).max(lowest).ceil()
        )))
}
