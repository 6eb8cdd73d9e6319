//! The network between servers: NICs per GPU, transports, the switches' routing by transport,
//! NCCL's NVLS tree, and the groups of a training step sharing the fabric.

use crate::common;

use clustersim::report::collective::CollectiveReport;
use common::number;

/// A collective scenario over `nodes` servers of 8 GPUs with the given `[cluster.inter_node]`
/// lines and `[collective]` op and size.
fn collective(gpu: &str, nodes: u32, inter: &str, op: &str, size: &str) -> String {
    format!(
        r#"
kind = "collective"
[cluster]
gpu = "{gpu}"
nodes = {nodes}
gpus_per_node = 8
[cluster.inter_node]
{inter}
[collective]
op = "{op}"
size = "{size}"
"#
    )
}

fn busbw(text: &str) -> f64 {
    common::collective("net.toml", text, &[]).busbw_gbps
}

fn ring(nics: u32, rate: &str, topology: &str) -> f64 {
    let inter = format!(
        "topology = \"{topology}\"\nnic_bandwidth = \"{rate}\"\nnics_per_node = {nics}\n\
         transport = \"infiniband\""
    );
    let text = collective("H100", 4, &inter, "all-reduce", "4 GiB") + "algorithm = \"ring\"\n";
    busbw(&text)
}

/// A server's NICs add up whatever their count: 16 x 200 Gb/s and 32 x 100 Gb/s carry what
/// 8 x 400 Gb/s do, 4 x 400 Gb/s half of it (InfiniBand's routing by destination, so that no
/// two flows meet on a spine by chance).
#[test]
fn nics_per_gpu_add_up() {
    for topology in ["fat-tree", "rail-optimized"] {
        let eight = ring(8, "400 Gb/s", topology);
        for (nics, rate) in [(16, "200 Gb/s"), (32, "100 Gb/s")] {
            let other = ring(nics, rate, topology);
            assert!(
                (other / eight - 1.0).abs() < 0.01,
                "{topology}: {nics} x {rate} {other:.1} GB/s against 8 x 400 Gb/s {eight:.1}"
            );
        }
        let four = ring(4, "400 Gb/s", topology);
        assert!((four / eight - 0.5).abs() < 0.02, "{four} {eight}");
    }
}

#[test]
fn nic_counts_that_do_not_divide_among_the_gpus_are_located() {
    let text = collective(
        "H100",
        2,
        "nic_bandwidth = \"200 Gb/s\"\nnics_per_node = 12",
        "all-reduce",
        "1 GiB",
    );
    let e = common::refused("net.toml", &text, "12 NICs for 8 GPUs").to_string();
    assert!(e.contains("net.toml:9:17"), "{e}");
    assert!(e.contains("12 NICs do not divide among 8 GPUs"), "{e}");
    assert!(e.contains("1, 2, 4, 8, 16, 32"), "{e}");
}

#[test]
fn unknown_transports_are_located_with_the_valid_ones() {
    let text = collective(
        "H100",
        2,
        "nic_bandwidth = \"200 Gb/s\"\ntransport = \"omnipath\"",
        "all-reduce",
        "1 GiB",
    );
    let e = common::outcome("net.toml", &text).unwrap_err();
    assert!(e.contains("net.toml:9:13"), "{e}");
    for valid in ["infiniband", "roce", "efa", "tcpx", "tcpxo"] {
        assert!(e.contains(valid), "{e}");
    }
}

/// Unstated, the fabric has InfiniBand's figures with its flows hashed, said in the assumptions;
/// stated InfiniBand routes by destination, EFA sprays, Ethernet transports hash each flow.
#[test]
fn the_transport_sets_the_default_routing_and_is_an_assumption() {
    let report = |inter: &str| {
        common::collective(
            "net.toml",
            &collective("H100", 4, inter, "all-gather", "1 GiB"),
            &[],
        )
    };
    let unstated = report("nic_bandwidth = \"400 Gb/s\"");
    let topology = |r: &CollectiveReport| r.fidelity.topology.clone();
    assert!(
        !topology(&unstated).contains("routed"),
        "{}",
        topology(&unstated)
    );
    let ib = report("nic_bandwidth = \"400 Gb/s\"\ntransport = \"infiniband\"");
    assert!(topology(&ib).contains("routed by destination"));
    assert!(
        unstated
            .assumptions
            .iter()
            .any(|a| a.contains("`transport` not stated")),
        "{:?}",
        unstated.assumptions
    );
    let efa = report("nic_bandwidth = \"400 Gb/s\"\ntransport = \"efa\"");
    assert!(topology(&efa).contains("sprayed over every path"));
    let roce = report("nic_bandwidth = \"400 Gb/s\"\ntransport = \"roce\"");
    assert!(!topology(&roce).contains("routed") && !topology(&roce).contains("sprayed"));
    // A stated routing wins over the transport's.
    let hashed = report("nic_bandwidth = \"400 Gb/s\"\ntransport = \"efa\"\nrouting = \"ecmp\"");
    assert!(!topology(&hashed).contains("sprayed"));
}

/// TCPX reaches 0.75 of line rate, the RDMA transports 0.92: a large all-gather between two
/// servers, bound by the NICs, shows the ratio; a small one shows TCP's longer latency.
#[test]
fn transports_differ_in_rate_and_latency() {
    let at = |transport: &str, size: &str| {
        let inter = format!("nic_bandwidth = \"200 Gb/s\"\ntransport = \"{transport}\"");
        common::collective(
            "net.toml",
            &collective("H100", 2, &inter, "all-gather", size),
            &[],
        )
    };
    let (ib, tcpx) = (at("infiniband", "8 GiB"), at("tcpx", "8 GiB"));
    let ratio = tcpx.busbw_gbps / ib.busbw_gbps;
    assert!((ratio - 0.75 / 0.92).abs() < 0.02, "{ratio}");
    let (ib, tcpx) = (at("infiniband", "8 KiB"), at("tcpx", "8 KiB"));
    assert!(tcpx.time_s > 2.0 * ib.time_s);
}

/// On two servers whose NVSwitch reduces, NCCL's NVLS tree carries each GPU's share once each
/// way over its NIC: the bus bandwidth passes what the NICs give a ring, up to the in-switch
/// reduction's own rate. A100s have no in-switch reduction and never run it.
#[test]
fn nvls_tree_doubles_the_nics_on_two_servers() {
    let inter = "nic_bandwidth = \"400 Gb/s\"\nnics_per_node = 8";
    let r = common::collective(
        "net.toml",
        &collective("H100", 2, inter, "all-reduce", "8 GiB"),
        &[],
    );
    assert_eq!(r.algorithm, "nvls-tree");
    let nics = 8.0 * 50.0 * 0.92;
    let bw = r.busbw_gbps;
    assert!(bw > 1.2 * nics && bw < 1.875 * nics, "{bw}");
    let a100 = common::collective(
        "net.toml",
        &collective(
            "A100",
            2,
            "nic_bandwidth = \"200 Gb/s\"",
            "all-reduce",
            "8 GiB",
        ),
        &[],
    );
    assert_ne!(a100.algorithm, "nvls-tree");
}

/// Data-parallel groups of a stage all-reduce at once: hashed over an oversubscribed spine
/// their flows share links, which `contention.network_s` reports and the step pays; routed by
/// destination over a non-blocking fat tree a rail-aligned step shares nothing that matters.
#[test]
fn a_steps_groups_share_the_fabric() {
    let text = |inter: &str| {
        format!(
            r#"
kind = "training"
[cluster]
gpu = "H100"
nodes = 8
gpus_per_node = 8
[cluster.inter_node]
nic_bandwidth = "400 Gb/s"
leaf_downlinks = 16
{inter}
[model]
preset = "gpt3-1.3b"
[parallel]
dp = 16
tp = 4
micro_batch = 4
global_batch = 256
"#
        )
    };
    let hashed = common::training(
        "dp.toml",
        &text("routing = \"ecmp\"\noversubscription = 4.0"),
        &[],
    );
    let shared = number(&hashed.contention, "network_s");
    assert!(shared > 0.0, "{}", hashed.contention);
    let single = common::training(
        "one.toml",
        &common::h100_training(
            8,
            "preset = \"gpt3-1.3b\"",
            "dp = 8\nmicro_batch = 4\nglobal_batch = 256",
        ),
        &[],
    );
    assert_eq!(number(&single.contention, "network_s"), 0.0);
}
