//! `kind = "kernels"` (read by `scenario/lower/kernels.rs`): the same bandwidth-bound work done by many tiny kernel launches or by fewer
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
use crate::report::kernels::{Cluster, Fidelity, KernelsReport, Launched};
use crate::report::typed::{Sim, TypedReport};
use serde_json::Value;
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
pub const MAX_CHILDREN: u64 = 1 << 22;

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

fn row(l: &Launches) -> Launched {
    Launched {
        time_s: l.seconds,
        launches: l.launches,
        launch_overhead_s: l.overhead_seconds,
        launch_overhead_share: l.overhead_seconds / l.seconds,
        sm_share: l.sm_share,
    }
}

/// The launches to compare, fully specified.
#[derive(Clone, Debug)]
pub struct KernelsConfig {
    /// The scenario's name, for the report.
    pub scenario: String,
    pub compute: ComputeModel,
    /// Child grids (1 to [`MAX_CHILDREN`]), blocks each, and each one's bytes and FLOPs.
    pub children: u64,
    pub blocks: u64,
    pub bytes: u64,
    pub flops: f64,
    /// Children a consolidated launch does (1 to `children`).
    pub consolidate: u64,
    /// Seconds a launch costs.
    pub launch_overhead: f64,
    pub assumptions: Vec<String>,
}

/// Prices the launches both ways: the report, and a graph with a lane for each.
pub fn simulate(c: &KernelsConfig) -> (Value, Graph) {
    let compute = &c.compute;
    let gpu = &compute.gpu;
    let (flops, overhead) = (c.flops, Some(c.launch_overhead));
    let mut assumptions = c.assumptions.clone();
    assumptions.push("launches one after another on one stream".into());
    let work = (c.children, c.blocks, c.bytes as f64, flops);
    let naive = price(compute, work, 1, overhead);
    let consolidated = price(compute, work, c.consolidate, overhead);

    let mut graph = Graph::new();
    for (lane, l, per) in [
        ("one launch a child", &naive, 1),
        ("consolidated", &consolidated, c.consolidate),
    ] {
        let lane = graph.add_lane(lane, "GPU 0");
        let mut left = c.children;
        while left > 0 {
            let n = left.min(per);
            left -= n;
            let seconds = if n == per {
                l.launch_seconds
            } else {
                price(compute, (n, c.blocks, c.bytes as f64, flops), n, overhead).seconds
            };
            graph.add(
                Op {
                    name: Cow::Owned(format!("{n} children")),
                    lane,
                    kind: OpKind::Memory,
                    duration: SimTime::from_secs_f64(seconds),
                    flops: flops * n as f64,
                    bytes: c.bytes as f64 * n as f64,
                    tier: "roofline",
                    layer: None,
                    micro_batch: None,
                    model_flops: false,
                    chain: None,
                },
                &[],
            );
        }
    }
    let own = row(&consolidated);
    let report = KernelsReport {
        kind: "kernels".into(),
        scenario: c.scenario.clone(),
        cluster: Cluster {
            gpu: gpu.name.to_string(),
            gpus: 1,
            multiprocessors: gpu.multiprocessors,
        },
        children: c.children,
        consolidate: c.consolidate,
        time_s: own.time_s,
        launches: own.launches,
        launch_overhead_s: own.launch_overhead_s,
        launch_overhead_share: own.launch_overhead_share,
        sm_share: own.sm_share,
        unconsolidated: row(&naive),
        speedup: naive.seconds / consolidated.seconds,
        fidelity: Fidelity {
            compute: "roofline (small grids get their share of the multiprocessors)".into(),
            symmetry: "identical launches priced once".into(),
        },
        assumptions,
        sim: Sim::events(0),
        cost: None,
    };
    (report.to_value(), graph)
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
