//! Pricing a collective on a topology: lower it to a schedule, place every transfer on its route,
//! and price each distinct phase with the chosen network tier.
//!
//! Time = the protocol's base latency + sum over phases of repeat x phase time (+ compression
//! work, + the local pass over one chunk that ends a ring, `buffer_copy`), where a phase's
//! transfers take the larger of their route's latency and the protocol's step latency, and move
//! bytes at the protocol's share of each link (`protocol`). The protocol is
//! the cheapest of NCCL's three, as NCCL's tuner picks it. Compression, when given, divides the bytes
//! on the wire by its ratio and adds compressor and decompressor time, either once (at the ends) or
//! at every hop (data decompressed, reduced and recompressed at each step), which is what the
//! compressed-collective papers compare; a per-hop codec may be pipelined with the step's
//! transfer instead of added to it (`compression.rs`).

use super::algorithm::{Algorithm, Wiring};
use super::buffer_copy;
use super::capacities::Capacities;
use super::group::Group;
use super::op::CollectiveOp;
use super::protocol::Protocol;
use super::refusal::Refusal;
use super::routing::{Routing, route};
use super::schedule::{Endpoint, Phase, Schedule, Transfer};
use crate::net::tier::{Efficiency, Placed, Tier, price};
use crate::net::topology::spec::IntraKind;
use crate::net::topology::{LinkKind, Topology};

pub use super::compression::Compression;

/// One collective to price.
#[derive(Clone, Debug)]
pub struct Collective {
    pub op: CollectiveOp,
    pub algorithm: Algorithm,
    pub group: Group,
    /// nccl-tests' size: bytes of each rank's buffer (all-reduce), of the whole gathered or
    /// scattered buffer (all-gather, reduce-scatter, all-to-all), or of the message.
    pub bytes: f64,
    pub compression: Option<Compression>,
}

/// Settings of the pricing shared by every collective.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub tier: Tier,
    pub efficiency: Efficiency,
    /// Fraction of NVLink line rate that in-switch reduction traffic achieves.
    pub nvls_efficiency: f64,
    /// Whether the NVSwitches can reduce (NVLink SHARP: Hopper and later).
    pub nvls_available: bool,
    /// A protocol forced by the user (NCCL_PROTO); None lets the tuner choose.
    pub protocol: Option<Protocol>,
    /// Whether to add up the bytes each link carries ([`CollectiveCost::link_bytes`]). Off by
    /// default: the workloads price many collectives and do not need it.
    pub record_links: bool,
    /// Whether the ranks share one process, so that NCCL writes straight into the peers' output
    /// buffers (nccl-tests run as `-g N`). Off by default: one process per GPU, as torchrun and
    /// mpirun start them, and a ring all-reduce or all-gather then ends with a copy out of
    /// NCCL's receive buffer (`buffer_copy`).
    pub p2p_direct: bool,
}

impl Options {
    /// - NVLS efficiency 0.686: NVIDIA/nccl issue 1455 measures NVLS all-reduce on 8 H100 at
    ///   480 GB/s bus bandwidth; with the S(1 + 1/n) traffic of `algorithm::nvls` that is 309 GB/s
    ///   per direction of the 450 GB/s links. Taken from that one measurement; the same issue's
    ///   4 to 7 GPU figures are the check (sim/tests/it/collective_validation.rs).
    pub fn new(tier: Tier) -> Self {
        Options {
            tier,
            efficiency: Efficiency::DEFAULT,
            nvls_efficiency: 0.686,
            nvls_available: true,
            protocol: None,
            record_links: false,
            p2p_direct: false,
        }
    }
}

/// The price of one collective.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveCost {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    pub tier: Tier,
    pub seconds: f64,
    /// nccl-tests' algorithm bandwidth (size / time) and bus bandwidth, bytes/s.
    pub algbw: f64,
    pub busbw: f64,
    /// Steps in all, and how many distinct phases were priced.
    pub steps: u64,
    pub phases_priced: usize,
    /// Largest load on a link as a fraction of its effective capacity (flow tier).
    pub peak_load: f64,
    /// Bytes each directed link carried over the whole collective, by edge index: every phase's
    /// transfers on every link of their routes, times the phase's repeat count, in bytes on the
    /// wire (after compression, with the protocol's overhead, e.g. LL's flags). Empty unless
    /// [`Options::record_links`].
    pub link_bytes: Vec<f64>,
}

fn price_schedule(
    capacities: &Capacities,
    c: &Collective,
    algorithm: Algorithm,
    protocol: Protocol,
    routing: &Routing,
    options: &Options,
    tier: Tier,
) -> Result<CollectiveCost, Refusal> {
    let wire = c.compression.map_or(1.0, |z| z.wire_factor()) / protocol.bandwidth_factor(c.op);
    let topo = capacities.topo;
    let capacity = capacities.of(algorithm.reduces_in_switch());
    let step_latency = |kind: LinkKind| protocol.step_latency_s(algorithm, kind);
    let mut seconds = protocol.base_latency_s(algorithm);
    let mut peak_load: f64 = 0.0;
    let mut link_bytes = Vec::new();
    if options.record_links {
        link_bytes.resize(topo.graph.edge_count(), 0.0);
    }
    for routed in &routing.phases {
        let phase = routed.phase;
        let mut placed: Vec<Placed> = routed
            .transfers
            .iter()
            .map(|r| Placed {
                links: r.links.clone(),
                latency: r.latency(&step_latency),
                bytes: r.bytes * wire,
            })
            .collect();
        if options.record_links {
            for p in &placed {
                for &e in &p.links {
                    link_bytes[e.index()] += phase.repeat as f64 * p.bytes;
                }
            }
        }
        // A pipelined phase pays its path's latencies once, and each repeat beyond the path (a
        // further chunk down a chain or tree) its slowest hop's. Two stay bulk-synchronous: a
        // compressed phase (each step's data is decoded, reduced and coded again before it moves
        // on), and one that crosses a WAN, whose bandwidth-delay product NCCL's in-flight window
        // (8 slots of a chunk a channel) cannot cover, so that its steps wait on the round trip
        // (a step's full latency each is the pessimistic side of that; the window is not
        // modelled).
        let wan = routed.transfers.iter().any(|r| r.slowest == LinkKind::Wan);
        if c.compression.is_none() && !phase.path.is_empty() && !wan {
            let slowest_hop = placed.iter().map(|p| p.latency).fold(0.0, f64::max);
            let further = phase.repeat.saturating_sub(phase.path.len() as u64);
            let path: f64 = routed.path.iter().map(|r| r.latency(&step_latency)).sum();
            seconds += path + further as f64 * slowest_hop;
            for p in &mut placed {
                p.latency = 0.0;
            }
        }
        // A repeated or pipelined phase is a steady state: every transfer runs throughout.
        let steady = phase.repeat > 1 || !phase.path.is_empty();
        let cost = price(tier, &capacity, &placed, steady);
        peak_load = peak_load.max(cost.peak_load);
        let step = match c.compression {
            // Each rank decompresses what it received and compresses what it sends, per step:
            // on every channel, with the GPU's one codec throughput.
            Some(z) => z.step_seconds(cost.seconds, busiest_sender(phase)),
            None => cost.seconds,
        };
        seconds += phase.repeat as f64 * step;
    }
    seconds += c.compression.map_or(0.0, |z| z.ends_seconds(c.bytes));
    seconds += buffer_copy::seconds(
        c.op,
        algorithm,
        c.group.size(),
        c.bytes,
        topo.spec.gpu_copy_bandwidth,
        options.p2p_direct,
    );
    let algbw = if seconds > 0.0 {
        c.bytes / seconds
    } else {
        f64::INFINITY
    };
    Ok(CollectiveCost {
        algorithm,
        protocol,
        tier,
        seconds,
        algbw,
        busbw: algbw * c.op.bus_factor(c.group.size()),
        steps: routing.schedule.steps(),
        phases_priced: routing.phases.len(),
        peak_load,
        link_bytes,
    })
}

/// The most bytes one endpoint sends in a phase, over all its transfers (a rank sends one
/// chunk on each of its rings' channels in a ring step).
fn busiest_sender(phase: &Phase) -> f64 {
    let mut sent: std::collections::HashMap<Endpoint, f64> = std::collections::HashMap::new();
    for t in &phase.transfers {
        *sent.entry(t.src).or_insert(0.0) += t.bytes;
    }
    sent.values().copied().fold(0.0, f64::max)
}

/// The protocols worth pricing for a schedule: the forced one, in-switch reduction's Simple, or
/// those NCCL enables for the slowest link the schedule crosses on these servers.
fn protocols(
    topo: &Topology,
    algorithm: Algorithm,
    routing: &Routing,
    options: &Options,
) -> Vec<Protocol> {
    if let Some(p) = options.protocol {
        return vec![p];
    }
    if algorithm.reduces_in_switch() {
        return vec![Protocol::Simple];
    }
    let slowest_kind = routing
        .phases
        .iter()
        .flat_map(|p| &p.transfers)
        .filter(|r| r.between_gpus)
        .map(|r| r.slowest)
        .max()
        .unwrap_or(LinkKind::NvLink);
    let nvlink_servers = topo.spec.gpus_per_node > 1
        && matches!(topo.spec.intra, IntraKind::NvSwitch | IntraKind::NvLinkMesh);
    let in_order = topo.spec.transport.in_order_stores();
    Protocol::ALL
        .into_iter()
        .filter(|p| p.usable(slowest_kind, nvlink_servers, in_order))
        .collect()
}

/// The cheapest protocol for a routed schedule, priced with `tier`.
fn best_protocol(
    capacities: &Capacities,
    c: &Collective,
    algorithm: Algorithm,
    routing: &Routing,
    options: &Options,
    tier: Tier,
) -> Result<CollectiveCost, Refusal> {
    let mut best: Option<CollectiveCost> = None;
    for protocol in protocols(capacities.topo, algorithm, routing, options) {
        let priced = price_schedule(capacities, c, algorithm, protocol, routing, options, tier)?;
        if best.as_ref().is_none_or(|b| priced.seconds < b.seconds) {
            best = Some(priced);
        }
    }
    best.ok_or(Refusal::NoProtocol)
}

/// The algorithms `Auto` chooses among: NCCL's own (ring, tree, in-switch reduction), direct
/// exchanges, and on a torus of single chips the TPU's row-and-column all-reduce (it applies
/// nowhere else). Halving-doubling and hierarchical are MPI-style algorithms NCCL does not run;
/// they are priced only when asked for by name.
pub const AUTO_CANDIDATES: [Algorithm; 6] = [
    Algorithm::Ring,
    Algorithm::Tree,
    Algorithm::Nvls,
    Algorithm::NvlsTree,
    Algorithm::Direct,
    Algorithm::Torus,
];

/// Prices `c` on `topo`. `Auto` compares the algorithms NCCL would consider with the analytical
/// tier and prices the fastest with the chosen tier.
pub fn cost(topo: &Topology, c: &Collective, options: &Options) -> Result<CollectiveCost, Refusal> {
    cost_beside(topo, c, options, &[])
}

/// The same collective run at once by copies of its group shifted by each of `offsets` ranks
/// (identical groups that share the network with it, e.g. every GPU of a site synchronising its
/// own slice over one WAN link), priced together: every phase carries every copy's transfers, so
/// links the copies share are shared. The price is the group's own, now slowed by the others.
pub fn cost_beside(
    topo: &Topology,
    c: &Collective,
    options: &Options,
    offsets: &[u32],
) -> Result<CollectiveCost, Refusal> {
    if let Some(r) = offsets
        .iter()
        .flat_map(|&o| c.group.ranks.iter().map(move |&r| r + o))
        .find(|&r| r as usize >= topo.gpus.len())
    {
        return Err(Refusal::CopyOutside {
            rank: r,
            gpus: topo.gpus.len(),
        });
    }
    let beside = |schedule: Schedule| beside(schedule, offsets, topo.gpus_per_node);
    let capacities = Capacities::new(topo, options.efficiency, options.nvls_efficiency);
    // The torus algorithm's rows: a torus's first dimension, when its nodes are single chips.
    let wiring = Wiring {
        torus_row: topo
            .torus_dims()
            .filter(|d| d.len() >= 2 && topo.gpus_per_node == 1)
            .map(|d| d[0]),
        full_mesh: topo.spec.intra == IntraKind::NvLinkMesh,
    };
    if let Some(&r) = c
        .group
        .ranks
        .iter()
        .find(|&&r| r as usize >= topo.gpus.len())
    {
        return Err(Refusal::RankOutside {
            rank: r,
            gpus: topo.gpus.len(),
        });
    }
    if c.algorithm != Algorithm::Auto {
        let schedule = c
            .algorithm
            .lower_on(c.op, &c.group, c.bytes, wiring)
            .ok_or(Refusal::AlgorithmDoesNotApply {
                algorithm: c.algorithm,
                op: c.op,
                ranks: c.group.size(),
            })?;
        let schedule = beside(schedule);
        return best_protocol(
            &capacities,
            c,
            c.algorithm,
            &route(topo, &schedule)?,
            options,
            options.tier,
        );
    }
    let candidates: Vec<(Algorithm, Schedule)> = AUTO_CANDIDATES
        .into_iter()
        .filter(|a| !a.reduces_in_switch() || options.nvls_available)
        .filter_map(|a| Some((a, beside(a.lower_on(c.op, &c.group, c.bytes, wiring)?))))
        .collect();
    // Each candidate is routed once, for its estimate and, if it wins, its final price.
    let mut best: Option<(f64, Algorithm, Protocol, Routing)> = None;
    for (algorithm, schedule) in &candidates {
        let routing = route(topo, schedule)?;
        let estimate = best_protocol(
            &capacities,
            c,
            *algorithm,
            &routing,
            options,
            Tier::Analytical,
        )?;
        if best.as_ref().is_none_or(|(t, ..)| estimate.seconds < *t) {
            best = Some((estimate.seconds, *algorithm, estimate.protocol, routing));
        }
    }
    let (_, algorithm, protocol, routing) = best.ok_or(Refusal::NoAlgorithm {
        op: c.op,
        ranks: c.group.size(),
    })?;
    price_schedule(
        &capacities,
        c,
        algorithm,
        protocol,
        &routing,
        options,
        options.tier,
    )
}

/// `schedule` with every phase also carrying its transfers shifted by each offset (a node's
/// switch moves with the node of its shifted GPUs).
fn beside(mut schedule: Schedule, offsets: &[u32], gpus_per_node: u32) -> Schedule {
    if offsets.is_empty() {
        return schedule;
    }
    let shift = |e: Endpoint, o: u32| match e {
        Endpoint::Gpu(r) => Endpoint::Gpu(r + o),
        Endpoint::NodeSwitch(n) => Endpoint::NodeSwitch((n * gpus_per_node + o) / gpus_per_node),
    };
    for phase in &mut schedule.phases {
        let own = phase.transfers.clone();
        for &o in offsets {
            phase.transfers.extend(own.iter().map(|t| Transfer {
                src: shift(t.src, o),
                dst: shift(t.dst, o),
                bytes: t.bytes,
            }));
        }
    }
    schedule
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::spec::TopologySpec;
    use petgraph::visit::EdgeRef;

    fn all_reduce(compression: Option<Compression>) -> f64 {
        let topo = Topology::build(&TopologySpec::new(1, 8)).unwrap();
        let c = Collective {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Ring,
            group: Group::first(8, 8),
            bytes: 4e9,
            compression,
        };
        let mut options = Options::new(Tier::Flow);
        options.protocol = Some(Protocol::Simple);
        // One process: no final copy out of a receive buffer, only transfers and codecs.
        options.p2p_direct = true;
        cost(&topo, &c, &options).unwrap().seconds
    }

    fn ring_all_gather(group: Group, bytes: f64) -> Collective {
        Collective {
            op: CollectiveOp::AllGather,
            algorithm: Algorithm::Ring,
            group,
            bytes,
            compression: None,
        }
    }

    /// A ring all-reduce of S bytes over n GPUs sends 2 (n - 1) / n S out of every GPU; with
    /// recording off nothing is kept.
    #[test]
    fn link_bytes_add_up_to_what_the_ring_sends() {
        let topo = Topology::build(&TopologySpec::new(1, 8)).unwrap();
        let c = Collective {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Ring,
            group: Group::first(8, 8),
            bytes: 8e9,
            compression: None,
        };
        let mut options = Options::new(Tier::Analytical);
        options.protocol = Some(Protocol::Simple);
        assert!(cost(&topo, &c, &options).unwrap().link_bytes.is_empty());
        options.record_links = true;
        let priced = cost(&topo, &c, &options).unwrap();
        assert_eq!(priced.link_bytes.len(), topo.graph.edge_count());
        let wire = 1.0 / Protocol::Simple.bandwidth_factor(CollectiveOp::AllReduce);
        let per_gpu = 2.0 * 7.0 / 8.0 * 8e9 * wire;
        for &g in &topo.gpus {
            let out: f64 = topo
                .graph
                .edges(g)
                .map(|e| priced.link_bytes[e.id().index()])
                .sum();
            assert!((out - per_gpu).abs() < 1e-6 * per_gpu, "{out} vs {per_gpu}");
        }
        // Recording changes nothing else.
        options.record_links = false;
        let mut plain = cost(&topo, &c, &options).unwrap();
        plain.link_bytes = priced.link_bytes.clone();
        assert_eq!(plain, priced);
    }

    #[test]
    fn groups_beside_each_other_share_what_they_cross() {
        // Two nodes of 8 GPUs. With one NIC a node, the 8 pairs (g, 8 + g) share it; with a NIC
        // per GPU they do not.
        let price = |nics: u32, offsets: &[u32]| {
            let mut spec = TopologySpec::new(2, 8);
            spec.nics_per_node = nics;
            let topo = Topology::build(&spec).unwrap();
            let c = Collective {
                op: CollectiveOp::AllReduce,
                algorithm: Algorithm::Ring,
                group: Group::new(vec![0, 8], 8),
                bytes: 1e9,
                compression: None,
            };
            cost_beside(&topo, &c, &Options::new(Tier::Flow), offsets)
                .unwrap()
                .seconds
        };
        let others: Vec<u32> = (1..8).collect();
        let (alone, shared) = (price(1, &[]), price(1, &others));
        assert!(
            shared > 7.0 * alone && shared < 8.5 * alone,
            "{shared} vs {alone}"
        );
        let railed = price(8, &others);
        assert!((railed - price(8, &[])).abs() < 1e-9 * railed);
        // A copy that would leave the cluster is an error, not a silent truncation.
        let topo = Topology::build(&TopologySpec::new(2, 8)).unwrap();
        let c = Collective {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Ring,
            group: Group::new(vec![0, 8], 8),
            bytes: 1e9,
            compression: None,
        };
        assert!(cost_beside(&topo, &c, &Options::new(Tier::Flow), &[8]).is_err());
    }

    #[test]
    fn compression_shrinks_the_wire_and_costs_compressor_time() {
        let plain = all_reduce(None);
        let free = |per_hop| Compression {
            ratio: 4.0,
            compress_bytes_per_s: f64::INFINITY,
            decompress_bytes_per_s: f64::INFINITY,
            per_hop,
            overlap_slice_bytes: None,
        };
        // A bandwidth-bound all-reduce with an infinitely fast 4x compressor takes about a quarter.
        let quarter = all_reduce(Some(free(false))) / plain;
        assert!((quarter - 0.25).abs() < 0.01, "{quarter}");
        // A real compressor costs time once at the ends, or at every one of the 14 steps.
        let slow = |per_hop| Compression {
            compress_bytes_per_s: 200e9,
            decompress_bytes_per_s: 400e9,
            ..free(per_hop)
        };
        let once = all_reduce(Some(slow(false)));
        let every_hop = all_reduce(Some(slow(true)));
        let ends = 4e9 / 200e9 + 4e9 / 400e9;
        assert!((once - all_reduce(Some(free(false))) - ends).abs() < 1e-9);
        assert!(every_hop > once, "{every_hop} {once}");
        // Pipelined with the ring's transfers in 1 MB slices, the per-hop codec (here slower than
        // NVLink: a step's 500 MB chunk takes 3.75 ms to code) hides all of the transfer but one
        // slice: the collective takes the codec time of its 14 steps and little more.
        let piped = all_reduce(Some(Compression {
            overlap_slice_bytes: Some(1e6),
            ..slow(true)
        }));
        let codec_only = 14.0 * (500e6 / 200e9 + 500e6 / 400e9);
        assert!(
            piped < every_hop && piped > codec_only,
            "{piped} {every_hop}"
        );
        assert!(piped < codec_only * 1.05, "{piped} {codec_only}");
    }

    /// Across nodes a ring all-reduce runs one ring per rail; a per-hop codec still codes every
    /// byte its rank sends in a step, S / n over all channels, at the GPU's one throughput.
    #[test]
    fn a_per_hop_codec_codes_every_channel_of_a_step() {
        let topo = Topology::build(&TopologySpec::new(2, 4)).unwrap();
        let price = |compression| {
            let c = Collective {
                op: CollectiveOp::AllReduce,
                algorithm: Algorithm::Ring,
                group: Group::first(8, 4),
                bytes: 8e9,
                compression,
            };
            let mut options = Options::new(Tier::Analytical);
            options.protocol = Some(Protocol::Simple);
            cost(&topo, &c, &options).unwrap()
        };
        let raw = price(None);
        // A ratio of 1 leaves the wire as it is: the difference is the codec.
        let coded = price(Some(Compression {
            ratio: 1.0,
            compress_bytes_per_s: 100e9,
            decompress_bytes_per_s: 100e9,
            per_hop: true,
            overlap_slice_bytes: None,
        }));
        let codec = 14.0 * 2.0 * (8e9 / 8.0) / 100e9;
        // Up to latency: the raw ring pays its path's once, the coded one a step's at every step.
        let latency = 14.0 * Protocol::Simple.step_latency_s(Algorithm::Ring, LinkKind::Network);
        assert!(
            (coded.seconds - raw.seconds - codec).abs() < latency,
            "{} {} {codec}",
            coded.seconds,
            raw.seconds
        );
    }

    /// One process per GPU adds the copy out of NCCL's receive buffer to a ring all-reduce:
    /// S/n bytes read and written at the GPU's streaming rate, after the transfers.
    #[test]
    fn separate_processes_end_a_ring_with_a_copy() {
        let topo = Topology::build(&TopologySpec::new(1, 2)).unwrap();
        let c = Collective {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Ring,
            group: Group::first(2, 2),
            bytes: 4e9,
            compression: None,
        };
        let mut options = Options::new(Tier::Flow);
        options.protocol = Some(Protocol::Simple);
        let separate = cost(&topo, &c, &options).unwrap().seconds;
        options.p2p_direct = true;
        let direct = cost(&topo, &c, &options).unwrap().seconds;
        let copy = 2e9 * 2.0 / topo.spec.gpu_copy_bandwidth;
        assert!(
            (separate - direct - copy).abs() < 1e-9,
            "{separate} {direct} {copy}"
        );
    }

    #[test]
    fn auto_picks_the_in_switch_reduction_for_large_messages_on_h100() {
        let topo = Topology::build(&TopologySpec::new(1, 8)).unwrap();
        let c = Collective {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Auto,
            group: Group::first(8, 8),
            bytes: 1e9,
            compression: None,
        };
        let priced = cost(&topo, &c, &Options::new(Tier::Flow)).unwrap();
        assert_eq!(priced.algorithm, Algorithm::Nvls);
        let mut no_nvls = Options::new(Tier::Flow);
        no_nvls.nvls_available = false;
        let ring = cost(&topo, &c, &no_nvls).unwrap();
        assert_eq!(
            (ring.algorithm, ring.protocol),
            (Algorithm::Ring, Protocol::Simple)
        );
        let tiny = Collective { bytes: 1024.0, ..c };
        assert_eq!(cost(&topo, &tiny, &no_nvls).unwrap().protocol, Protocol::Ll);
    }

    /// First-generation EFA (p4d) carries Simple only; a small all-reduce over two such servers
    /// then pays Simple's latency, where the same servers on current EFA run LL.
    #[test]
    fn first_generation_efa_runs_simple_between_servers() {
        let priced = |transport: crate::net::Transport| {
            let mut spec = TopologySpec::new(2, 8);
            spec.nics_per_node = 4;
            spec.transport = transport;
            spec.inter_latency = transport.latency_s();
            let topo = Topology::build(&spec).unwrap();
            let c = Collective {
                op: CollectiveOp::AllReduce,
                algorithm: Algorithm::Auto,
                group: Group::first(16, 8),
                bytes: 8.0,
                compression: None,
            };
            let mut options = Options::new(Tier::Flow);
            options.nvls_available = false;
            cost(&topo, &c, &options).unwrap()
        };
        let v1 = priced(crate::net::Transport::EfaV1);
        let v2 = priced(crate::net::Transport::Efa);
        assert_eq!(v1.protocol, Protocol::Simple);
        assert_eq!(v2.protocol, Protocol::Ll);
        assert!(
            v1.seconds > 2.0 * v2.seconds,
            "{} {}",
            v1.seconds,
            v2.seconds
        );
    }

    /// NCCL enables LL128 wherever a server's GPUs are joined by NVLink, the network hops of a
    /// ring between servers included, and nowhere GPUs of a server talk over PCIe.
    #[test]
    fn ll128_runs_across_servers_joined_inside_by_nvlink() {
        let protocol_of = |intra: IntraKind| {
            let mut spec = TopologySpec::new(4, 8);
            spec.intra = intra;
            let topo = Topology::build(&spec).unwrap();
            let c = ring_all_gather(Group::first(32, 8), 64e6);
            cost(&topo, &c, &Options::new(Tier::Flow)).unwrap().protocol
        };
        // 64 MB over 32 ranks: 250 KB a ring step, where LL128's 4 us step beats Simple's 14.
        assert_eq!(protocol_of(IntraKind::NvSwitch), Protocol::Ll128);
        assert_eq!(protocol_of(IntraKind::Pcie), Protocol::Simple);
        assert_eq!(protocol_of(IntraKind::NvLinkPairs), Protocol::Simple);
        assert!(Protocol::Ll128.usable(LinkKind::Network, true, true));
        assert!(Protocol::Ll128.usable(LinkKind::NvLink, false, true));
        assert!(!Protocol::Ll128.usable(LinkKind::Pcie, false, true));
        assert!(!Protocol::Ll128.usable(LinkKind::Network, false, true));
        assert!(Protocol::Simple.usable(LinkKind::Pcie, false, true));
        // First-generation EFA carries Simple only.
        assert!(!Protocol::Ll.usable(LinkKind::Network, true, false));
        assert!(!Protocol::Ll128.usable(LinkKind::Network, true, false));
        assert!(Protocol::Simple.usable(LinkKind::Network, true, false));
        assert!(Protocol::Ll.usable(LinkKind::NvLink, true, false));
        // Single-chip nodes (a torus of accelerators) keep it off the links between them.
        let mut torus = TopologySpec::new(8, 1);
        torus.nics_per_node = 1;
        let topo = Topology::build(&torus).unwrap();
        let c = ring_all_gather(Group::first(8, 1), 2e6);
        let p = cost(&topo, &c, &Options::new(Tier::Flow)).unwrap().protocol;
        assert_ne!(p, Protocol::Ll128);
    }

    /// A ring pipelines its steps: a small all-gather over two servers pays the latency of the
    /// hops one chunk travels (14 over NVLink, 1 over the network), not the network's latency at
    /// every one of its 15 steps.
    #[test]
    fn a_ring_across_servers_pays_its_path_latency_once() {
        let topo = Topology::build(&TopologySpec::new(2, 8)).unwrap();
        let c = ring_all_gather(Group::first(16, 8), 1024.0);
        let mut options = Options::new(Tier::Flow);
        options.protocol = Some(Protocol::Simple);
        let seconds = cost(&topo, &c, &options).unwrap().seconds;
        let (ring, step) = (Algorithm::Ring, Protocol::Simple);
        let path = step.base_latency_s(ring)
            + 14.0 * step.step_latency_s(ring, LinkKind::NvLink)
            + step.step_latency_s(ring, LinkKind::Network);
        assert!(
            seconds > path && seconds < 1.1 * path,
            "{seconds} against the path's {path}"
        );
        let synchronous = 15.0 * step.step_latency_s(ring, LinkKind::Network);
        assert!(seconds < 0.6 * synchronous, "{seconds} {synchronous}");
    }
}
