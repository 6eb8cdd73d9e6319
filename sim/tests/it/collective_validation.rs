//! Collectives against measurements: NCCL's published bus bandwidths on 8 H100 (NVIDIA/nccl
//! issue 1455, in shared/validation/published.json) and Vidur's all-reduce and send/recv tables
//! on A100 and H100 boxes (shared/data/vidur-profiles/network). Prints every figure it compares.
//!
//! Only intra-box rows of the Vidur tables are compared: the tables do not say what network joined
//! their boxes, so the multi-node rows cannot be set up honestly. Between servers, two published
//! nccl-tests runs give the latency of a small all-reduce (below).

use crate::common;

use clustersim::collective::cost::{Collective, Options, cost};
use clustersim::collective::{Algorithm, CollectiveOp, Group};
use clustersim::hw::gpu;
use clustersim::net::Topology;
use clustersim::net::tier::Tier;
use clustersim::net::topology::spec::{IntraKind, TopologySpec};
use common::shared;

fn box_topology(
    gpu: &str,
    gpus: u32,
    intra: IntraKind,
    intra_bandwidth: Option<f64>,
) -> (Topology, Options) {
    let g = gpu::find(gpu).unwrap();
    let mut spec = TopologySpec::new(1, gpus);
    spec.intra = intra;
    spec.intra_bandwidth = intra_bandwidth.unwrap_or(g.intra_bandwidth);
    spec.intra_efficiency = g.intra_efficiency;
    spec.pcie_bandwidth = g.pcie_bandwidth;
    spec.gpu_copy_bandwidth = g.copy_bandwidth();
    let mut options = Options::new(Tier::Flow);
    options.nvls_available = g.in_switch_reduction && intra == IntraKind::NvSwitch;
    (Topology::build(&spec).unwrap(), options)
}

fn price(
    topo: &Topology,
    options: &Options,
    op: CollectiveOp,
    algorithm: Algorithm,
    n: u32,
    bytes: f64,
) -> f64 {
    let c = Collective {
        op,
        algorithm,
        group: Group::first(n, topo.gpus_per_node),
        bytes,
        compression: None,
    };
    cost(topo, &c, options).unwrap().seconds
}

/// Small all-reduces between servers, where latency is all there is: nccl-tests'
/// `all_reduce_perf` on 32 servers of 8 A100-SXM4 with four 200 Gb/s HDR adapters each (NVIDIA/nccl
/// issue 652, 2022: 62.0-65.6 us from 8 to 128 bytes, out of place and in place) and on 16 servers
/// of 8 H100 (issue 1469, 2024, NCCL 2.20.5: 61.4-62.2 us from 16 to 128 bytes in place; the
/// adapters are not stated, taken as eight of 400 Gb/s). Both threads are about other matters
/// (bandwidth), so the runs' health is not confirmed; the bound is loose. A chunk's trip pays each
/// hop's latency once (NCCL's own model): paying the network's latency at every one of the tree's
/// steps priced them at 129 and 119 us.
#[test]
fn small_all_reduces_between_servers_take_their_path_latency() {
    let cases = [
        ("A100-SXM4-80GB", 32, 4, 200e9 / 8.0, 63.0e-6),
        ("H100-SXM5-80GB", 16, 8, 400e9 / 8.0, 62.0e-6),
    ];
    for (name, nodes, nics, nic_bandwidth, measured) in cases {
        let g = gpu::find(name).unwrap();
        let mut spec = TopologySpec::new(nodes, 8);
        spec.intra_bandwidth = g.intra_bandwidth;
        spec.pcie_bandwidth = g.pcie_bandwidth;
        spec.gpu_copy_bandwidth = g.copy_bandwidth();
        spec.nics_per_node = nics;
        spec.nic_bandwidth = nic_bandwidth;
        let topo = Topology::build(&spec).unwrap();
        let options = Options::new(Tier::Flow);
        let n = nodes * 8;
        let predicted = price(
            &topo,
            &options,
            CollectiveOp::AllReduce,
            Algorithm::Auto,
            n,
            64.0,
        );
        let error = predicted / measured - 1.0;
        println!(
            "{name} x {n}: 64-byte all-reduce {:.1} us, measured {:.1} us ({:+.1}%)",
            predicted * 1e6,
            measured * 1e6,
            100.0 * error
        );
        assert!(error.abs() < 0.2, "{name}: {predicted} against {measured}");
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// RCCL's all-reduce on one server of 8 MI300X, whose GPUs are joined by a full mesh of xGMI
/// links: rccl-tests' `all_reduce_perf`, one process per GPU, out of place (ROCm blog
/// "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X", March 2025, RCCL
/// 2.22.3, ROCm 6.3). A single ring over one link per GPU would take four times as long above
/// 16 MB; the channels' rings must share out all seven. The catalog's xGMI efficiency comes from
/// this table's largest sizes, so only 1-16 MB check it independently.
#[test]
fn rccl_all_reduce_on_a_full_mesh_of_mi300x() {
    let (topo, options) = box_topology("MI300X", 8, IntraKind::NvLinkMesh, None);
    let measured_us = [
        (1u64 << 20, 27.42),
        (4 << 20, 51.72),
        (16 << 20, 148.8),
        (64 << 20, 429.1),
        (256 << 20, 1537.1),
        (1 << 30, 5970.6),
    ];
    for (bytes, us) in measured_us {
        let t = price(
            &topo,
            &options,
            CollectiveOp::AllReduce,
            Algorithm::Auto,
            8,
            bytes as f64,
        );
        let err = t / (us * 1e-6) - 1.0;
        println!(
            "{bytes:>11} B  measured {us:>8.1} us  predicted {:>8.1} us  {:+.1}%",
            t * 1e6,
            100.0 * err
        );
        assert!(err.abs() < 0.3, "{bytes} B: {:+.1}%", 100.0 * err);
    }
}

#[test]
fn nccl_published_bus_bandwidths_within_10_percent() {
    let text = std::fs::read_to_string(shared().join("validation/published.json")).unwrap();
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let mut compared = 0;
    println!(
        "{:<40} {:>9} {:>10} {:>7}",
        "case", "measured", "predicted", "error"
    );
    for case in cases
        .iter()
        .filter(|c| c["id"].as_str().unwrap().starts_with("nccl-"))
    {
        let n = case["hardware"]["count"].as_u64().unwrap() as u32;
        let algorithm = match case["parallel"]["NCCL_ALGO"].as_str().unwrap() {
            "RING" => Algorithm::Ring,
            "NVLS" => Algorithm::Nvls,
            other => panic!("unmapped NCCL_ALGO {other}"),
        };
        // all_reduce_perf -b 2G -e 4G -g n on an 8-GPU H100 HGX board, n of its GPUs taking
        // part, all driven by one process (`-g`): NCCL's P2P direct mode, no receive buffers.
        let (topo, mut options) = box_topology("H100-SXM5-80GB", 8, IntraKind::NvSwitch, None);
        options.p2p_direct = true;
        let bytes = 4.0 * (1u64 << 30) as f64;
        let t = price(
            &topo,
            &options,
            CollectiveOp::AllReduce,
            algorithm,
            n,
            bytes,
        );
        let busbw = bytes / t * CollectiveOp::AllReduce.bus_factor(n) / 1e9;
        let measured = case["value"].as_f64().unwrap();
        let error = (busbw - measured) / measured;
        println!(
            "{:<40} {:>9.0} {:>10.0} {:>+6.1}%",
            case["id"].as_str().unwrap(),
            measured,
            busbw,
            100.0 * error
        );
        assert!(
            error.abs() <= 0.10,
            "{}: predicted {busbw:.0} GB/s, measured {measured}",
            case["id"]
        );
        compared += 1;
    }
    assert_eq!(compared, 7, "the seven NCCL cases of published.json");
}

/// (directory, GPU, intra-node link, per-direction bandwidth when not the GPU's datasheet one)
const BOXES: &[(&str, &str, IntraKind, Option<f64>)] = &[
    ("h100_dgx", "H100-SXM5-80GB", IntraKind::NvSwitch, None),
    ("a100_dgx", "A100-SXM4-80GB", IntraKind::NvSwitch, None),
    // PCIe cards joined in pairs by NVLink bridges (600 GB/s both ways per pair).
    (
        "a100_pairwise_nvlink",
        "A100-PCIe-80GB",
        IntraKind::NvLinkPairs,
        Some(300e9),
    ),
    (
        "h100_pairwise_nvlink",
        "H100-PCIe-80GB",
        IntraKind::NvLinkPairs,
        Some(300e9),
    ),
];

#[test]
fn vidur_network_tables_median_error() {
    let root = shared().join("data/vidur-profiles/network");
    let mut all = Vec::new();
    println!(
        "{:<22} {:<11} {:>4} {:>6} {:>8} {:>8} {:>8}",
        "box", "collective", "gpus", "rows", "median", "p90", "bias"
    );
    for &(dir, gpu, intra, bw) in BOXES {
        for (file, op) in [
            ("all_reduce", CollectiveOp::AllReduce),
            ("send_recv", CollectiveOp::SendRecv),
        ] {
            let mut reader = csv_rows(&root.join(dir).join(format!("{file}.csv")));
            let header = reader.remove(0);
            let col = |name: &str| {
                header
                    .iter()
                    .position(|h| h == name)
                    .unwrap_or_else(|| panic!("no column {name}"))
            };
            let (median_col, workers, per_node, size) = (
                col(&format!("time_stats.{file}.median")),
                col("num_workers"),
                col("devices_per_node"),
                col("size"),
            );
            let mut by_workers: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
            for row in &reader {
                let n: u32 = row[workers].parse().unwrap();
                if row[per_node] != row[workers] {
                    continue; // spans boxes over an unknown network
                }
                let gpus = if intra == IntraKind::NvLinkPairs {
                    4
                } else {
                    8
                };
                let (topo, mut options) = box_topology(gpu, gpus, intra, bw);
                // Vidur's boxes did not use in-switch reduction: their 8-GPU H100 all-reduce
                // levels off at the ring's 364 GB/s bus bandwidth, where NVLS exceeds 450.
                options.nvls_available = false;
                // torch.distributed runs one process per GPU: `options.p2p_direct` stays off.
                let bytes: f64 = row[size].parse().unwrap();
                let measured = row[median_col].parse::<f64>().unwrap() * 1e-3;
                let predicted = price(&topo, &options, op, Algorithm::Auto, n, bytes);
                by_workers
                    .entry(n)
                    .or_default()
                    .push((predicted - measured) / measured);
            }
            for (n, errors) in by_workers {
                let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
                let mut signed = errors.clone();
                let m = median(&mut abs);
                let p90 = abs[abs.len() * 9 / 10];
                println!(
                    "{dir:<22} {file:<11} {n:>4} {:>6} {:>7.1}% {:>7.1}% {:>+7.1}%",
                    errors.len(),
                    100.0 * m,
                    100.0 * p90,
                    100.0 * median(&mut signed)
                );
                all.extend(abs);
            }
        }
    }
    let overall = median(&mut all);
    println!(
        "overall median absolute error {:.1}% over {} rows",
        100.0 * overall,
        all.len()
    );
    // The goal is 15%. Measured today: 12.9% (docs/COLLECTIVE-VALIDATION.md), with the copy out
    // of NCCL's receive buffer that ends a ring when every rank is its own process
    // (`collective::buffer_copy`), and rings that pay their path's latency once (12.6% when every
    // step paid its slowest hop's: the 4-GPU boxes of NVLink pairs, whose rings cross PCIe). What remains is the A100 box (30-37% too fast: NCCL there
    // reaches 130-220 GB/s of bus bandwidth below 64 MiB, well under the 235 GB/s its own tuner
    // assumes), send/recv over NVLink bridges (29% too slow: the table's copies reach 285-335 GB/s
    // over a 300 GB/s bridge, above the 0.82 that collectives get), and sizes below 1 MiB, where
    // the ranks' arrival skew dominates the measured kernel times. This bound guards against
    // regressions.
    assert!(
        overall <= 0.14,
        "median error {:.1}% (goal 15%, last measured 12.9%)",
        100.0 * overall
    );
}

fn csv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}
