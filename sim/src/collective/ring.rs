//! Ring algorithms in closed form (the analytical tier).
//!
//! A ring all-reduce of S bytes over n ranks is a reduce-scatter then an all-gather: 2(n-1) steps,
//! each moving S/n bytes between neighbours, so it takes `2(n-1) * latency + 2(n-1)/n * S / B`, where
//! B is the slowest hop's bandwidth. nccl-tests call `S/t` the algorithm bandwidth and
//! `S/t * 2(n-1)/n` the bus bandwidth; for a ring the bus bandwidth approaches B. Inside a server B is
//! the per-GPU link; across servers each channel of the ring crosses a NIC, and all the server's NICs
//! carry channels at once (see [`Fabric::inter_bandwidth`]).

use crate::net::{Fabric, GroupShape};

/// Bandwidth and per-step latency of the slowest hop of a ring over `group`.
pub fn bottleneck(fabric: &Fabric, group: GroupShape) -> (f64, f64) {
    let intra = fabric.intra_bandwidth * fabric.intra_efficiency;
    if group.nodes <= 1 {
        (intra, fabric.intra_latency)
    } else {
        (
            intra.min(fabric.inter_bandwidth(group.per_node)),
            fabric.inter_latency,
        )
    }
}

/// Seconds for a ring all-reduce of `bytes` over `group`.
pub fn all_reduce(fabric: &Fabric, group: GroupShape, bytes: f64) -> f64 {
    let n = group.size as f64;
    if group.size <= 1 {
        return 0.0;
    }
    let (bandwidth, latency) = bottleneck(fabric, group);
    2.0 * (n - 1.0) * latency + 2.0 * (n - 1.0) / n * bytes / bandwidth
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dgx_h100(nodes: u32) -> Fabric {
        Fabric {
            nodes,
            gpus_per_node: 8,
            intra_bandwidth: 450e9,
            intra_latency: Fabric::INTRA_LATENCY_S,
            intra_efficiency: Fabric::NVLINK_EFFICIENCY,
            nic_bandwidth: 50e9,
            nics_per_node: 8,
            oversubscription: 1.0,
            inter_latency: Fabric::INTER_LATENCY_S,
            inter_efficiency: Fabric::NETWORK_EFFICIENCY,
        }
    }

    #[test]
    fn large_all_reduce_bus_bandwidth_approaches_the_bottleneck() {
        let f = dgx_h100(1);
        let group = GroupShape {
            size: 8,
            nodes: 1,
            per_node: 8,
        };
        let bytes = 8e9;
        let t = all_reduce(&f, group, bytes);
        let busbw = bytes / t * 2.0 * 7.0 / 8.0;
        // NVIDIA's nccl-tests figure for this box is about 367 GB/s.
        assert!((busbw - 367e9).abs() / 367e9 < 0.05, "{busbw}");
    }

    #[test]
    fn crossing_servers_is_limited_by_the_nics() {
        let f = dgx_h100(4);
        let group = GroupShape {
            size: 32,
            nodes: 4,
            per_node: 8,
        };
        let (bw, lat) = bottleneck(&f, group);
        assert_eq!(bw, 8.0 * 50e9 * 0.92);
        assert_eq!(lat, Fabric::INTER_LATENCY_S);
        let one_per_node = GroupShape {
            size: 4,
            nodes: 4,
            per_node: 1,
        };
        assert_eq!(bottleneck(&f, one_per_node).0, 50e9 * 0.92);
        assert_eq!(
            all_reduce(
                &f,
                GroupShape {
                    size: 1,
                    nodes: 1,
                    per_node: 1
                },
                1e9
            ),
            0.0
        );
    }
}
