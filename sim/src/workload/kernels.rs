//! `kind = "kernels"`: the same bandwidth-bound work done by many tiny kernel launches or by fewer
//! consolidated ones (workload consolidation for GPU dynamic parallelism: parent threads launch
//! child grids of a few blocks each; a compiler merges the children of a warp, a block or the
//! whole grid into one launch).
//!
//! Each launch is priced by the roofline (`hw::roofline::ComputeModel::cost_on_grid`): it pays
//! the launch overhead whole and gets the share of the GPU's multiprocessors its grid occupies.
//! A consolidated launch does `consolidate` children's work with their blocks together (the last
//! one the remainder). Launches run one after another on one stream. Reported: both versions'
//! time, launches, the share of the time spent launching and the multiprocessor share of a
//! launch, and the speed-up.
//!
//! Deliberately ignored: children of different parents running side by side (the hardware runs
//! up to 32-128 grids at once, which would shorten the naive version's work, though not its
//! launch overheads, which a device-side launch queue serialises), the parents' own work, the
//! pending-launch limit and the consolidated kernel's extra indexing work.

use crate::engine::SimTime;
use crate::exec::{Graph, Op, OpKind};
use crate::hw::{ComputeModel, Kernel};
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use serde_json::{Value, json};
use std::borrow::Cow;

/// One way of launching the work, priced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Launches {
    pub launches: u64,
    pub seconds: f64,
    pub overhead_seconds: f64,
    /// Share of the multiprocessors a full launch occupies.
    pub sm_share: f64,
    /// Seconds of one full launch.
    pub launch_seconds: f64,
}

/// The most children a scenario launches: every launch of the unconsolidated run is a span of
/// the trace (about 160 bytes of graph each).
const MAX_CHILDREN: u64 = 1 << 22;

/// `children` children of `blocks` blocks and `bytes`/`flops` each, `per_launch` of them a
/// launch, each launch paying `overhead` seconds (the roofline's own when `None`).
pub fn price(
    compute: &ComputeModel,
    (children, blocks, bytes, flops): (u64, u64, f64, f64),
    per_launch: u64,
    overhead: Option<f64>,
) -> Launches {
    let roofline_overhead = compute.efficiency.kernel_overhead_s;
    let overhead = overhead.unwrap_or(roofline_overhead);
    let launch = |n: u64| {
        let kernel = Kernel::Memory {
            bytes: bytes * n as f64,
            flops: flops * n as f64,
        };
        let c = compute
            .cost_on_grid(&kernel, blocks * n)
            .expect("memory-bound kernels price on every device");
        c.seconds - roofline_overhead + overhead
    };
    let full = children / per_launch;
    let rest = children % per_launch;
    let launches = full + u64::from(rest > 0);
    let launch_seconds = launch(per_launch);
    let seconds = full as f64 * launch_seconds + if rest > 0 { launch(rest) } else { 0.0 };
    let sms = compute.gpu.multiprocessors.max(1) as f64;
    Launches {
        launches,
        seconds,
        overhead_seconds: launches as f64 * overhead,
        sm_share: ((blocks * per_launch) as f64).min(sms) / sms,
        launch_seconds,
    }
}

fn row(l: &Launches) -> Value {
    json!({
        "time_s": l.seconds,
        "launches": l.launches,
        "launch_overhead_s": l.overhead_seconds,
        "launch_overhead_share": l.overhead_seconds / l.seconds,
        "sm_share": l.sm_share,
    })
}

/// Prices the scenario's launches both ways: the report, and a graph with a lane for each.
pub fn simulate(s: &Scenario) -> Result<(Value, Graph), ScenarioError> {
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
        Some(d) => Some(d.secs()),
        None => {
            assumptions.push(format!(
                "launch overhead {} us a launch (the roofline's kernel overhead, host launches)",
                compute.efficiency.kernel_overhead_s * 1e6
            ));
            None
        }
    };
    assumptions.push("launches one after another on one stream".into());
    let work = (k.children, k.blocks, k.bytes.0 as f64, flops);
    let naive = price(&compute, work, 1, overhead);
    let consolidated = price(&compute, work, k.consolidate, overhead);

    let mut graph = Graph::new();
    for (lane, l, per) in [
        ("one launch a child", &naive, 1),
        ("consolidated", &consolidated, k.consolidate),
    ] {
        let lane = graph.add_lane(lane, "GPU 0");
        let mut left = k.children;
        while left > 0 {
            let n = left.min(per);
            left -= n;
            let seconds = if n == per {
                l.launch_seconds
            } else {
                price(
                    &compute,
                    (n, k.blocks, k.bytes.0 as f64, flops),
                    n,
                    overhead,
                )
                .seconds
            };
            graph.add(
                Op {
                    name: Cow::Owned(format!("{n} children")),
                    lane,
                    kind: OpKind::Memory,
                    duration: SimTime::from_secs_f64(seconds),
                    flops: flops * n as f64,
                    bytes: k.bytes.0 as f64 * n as f64,
                    tier: "roofline",
                    layer: None,
                    micro_batch: None,
                    model_flops: false,
                },
                &[],
            );
        }
    }
    let report = json!({
        "kind": "kernels",
        "scenario": s.name(),
        "cluster": { "gpu": setup.gpu.name, "gpus": 1, "multiprocessors": setup.gpu.multiprocessors },
        "children": k.children,
        "consolidate": k.consolidate,
        "time_s": consolidated.seconds,
        "launches": consolidated.launches,
        "launch_overhead_s": consolidated.overhead_seconds,
        "launch_overhead_share": consolidated.overhead_seconds / consolidated.seconds,
        "sm_share": consolidated.sm_share,
        "unconsolidated": row(&naive),
        "speedup": naive.seconds / consolidated.seconds,
        "fidelity": {
            "compute": "roofline (small grids get their share of the multiprocessors)",
            "symmetry": "identical launches priced once",
        },
        "assumptions": assumptions,
        "sim": { "events": 0 },
    });
    Ok((report, graph))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gpu;

    #[test]
    fn tiny_launches_pay_overhead_and_small_grids_consolidation_saves_both() {
        let compute = ComputeModel::new(gpu::find("V100").unwrap());
        let work = (4096, 1, 2048.0, 0.0);
        let naive = price(&compute, work, 1, None);
        assert_eq!(naive.launches, 4096);
        // Nearly all launching: 2 us a launch against a fraction of a microsecond of work.
        assert!(naive.overhead_seconds / naive.seconds > 0.85);
        assert_eq!(naive.sm_share, 1.0 / 80.0);
        let warp = price(&compute, work, 32, None);
        let grid = price(&compute, work, 4096, None);
        assert_eq!((warp.launches, grid.launches), (128, 1));
        assert_eq!(grid.sm_share, 1.0);
        assert!(naive.seconds > warp.seconds && warp.seconds > grid.seconds);
        // One grid: one overhead and the bytes at the full bandwidth fraction.
        let expected = 2e-6 + 4096.0 * 2048.0 / (900e9 * 0.85);
        assert!((grid.seconds - expected).abs() < 1e-12, "{}", grid.seconds);
        // A remainder is a smaller last launch (grids past the SM count take longer with their
        // work; below it, a grid's time does not depend on its size).
        let uneven = price(&compute, (500, 1, 2048.0, 0.0), 200, None);
        assert_eq!(uneven.launches, 3);
        assert!(uneven.seconds < 3.0 * uneven.launch_seconds);
        let small = price(&compute, (100, 1, 2048.0, 0.0), 32, None);
        assert_eq!(small.launches, 4);
        assert!((small.seconds - 4.0 * small.launch_seconds).abs() < 1e-15);
    }

    #[test]
    fn a_slower_launch_widens_the_gap() {
        let compute = ComputeModel::new(gpu::find("V100").unwrap());
        let work = (1024, 1, 4096.0, 0.0);
        let speedup = |o: Option<f64>| {
            price(&compute, work, 1, o).seconds / price(&compute, work, 1024, o).seconds
        };
        assert!(speedup(Some(10e-6)) > speedup(None));
    }
}
