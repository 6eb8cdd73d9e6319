//! A nccl-tests-style run: one collective, or a sweep of sizes, priced on a cluster described by
//! flags (`clustersim collective`, and `clustersim.collective` in Python, which reads the same
//! fields from keyword arguments). The report has nccl-tests' columns per size (time, algbw,
//! busbw) and the largest size's at the top, without `sim.wall_s` (the front end times the run).

use crate::collective::cost::{Collective, Compression, Options, cost};
use crate::collective::{Algorithm, CollectiveOp, Group, Protocol};
use crate::hw::gpu::{self, IntraLinkKind};
use crate::net::tier::Tier;
use crate::net::topology::spec::{InterKind, IntraKind, PathSelection, TopologySpec};
use crate::net::{Topology, Transport};
use crate::scenario::quantity::Bandwidth;
use serde::Deserialize;
use serde_json::{Value, json};

/// The flags, by their long names (`minbytes`, `maxbytes`, `stepfactor` for nccl-tests' `-b`,
/// `-e`, `-f`).
#[derive(Clone, Debug, clap::Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bench {
    /// GPU model (`clustersim list gpus`).
    #[arg(long)]
    pub gpu: String,
    #[arg(long)]
    pub nodes: u32,
    #[arg(long)]
    pub gpus_per_node: u32,
    /// all-reduce | all-gather | reduce-scatter | broadcast | reduce | all-to-all | send-recv
    #[arg(long)]
    pub op: String,
    /// One size in bytes, with K/M/G suffixes as nccl-tests reads them (powers of 1024).
    #[arg(long)]
    pub size: Option<String>,
    /// Sweep: smallest size (nccl-tests' -b).
    #[arg(short = 'b', long = "minbytes")]
    #[serde(rename = "minbytes")]
    pub begin: Option<String>,
    /// Sweep: largest size (nccl-tests' -e).
    #[arg(short = 'e', long = "maxbytes")]
    #[serde(rename = "maxbytes")]
    pub end: Option<String>,
    /// Sweep: multiplication factor between sizes (nccl-tests' -f).
    #[arg(short = 'f', long = "stepfactor", default_value_t = 2)]
    #[serde(rename = "stepfactor", default = "two")]
    pub factor: u64,
    /// ring | tree | halving-doubling | hierarchical | nvls | direct | auto
    #[arg(long, default_value = "auto")]
    #[serde(default = "auto")]
    pub algo: String,
    /// ll | ll128 | simple, as NCCL_PROTO forces one (default: the cheapest NCCL would run).
    #[arg(long)]
    pub proto: Option<String>,
    /// Ranks taking part: the first N GPUs (default: all).
    #[arg(long)]
    pub ranks: Option<u32>,
    /// Network tier: flow (max-min fair sharing) or analytical.
    #[arg(long, default_value = "flow")]
    #[serde(default = "flow")]
    pub tier: String,
    /// nvswitch | nvlink-mesh | nvlink-pairs | pcie (default: the GPU's usual server).
    #[arg(long)]
    pub intra_link: Option<String>,
    /// Per GPU per direction, e.g. "450 GB/s" (default: the GPU's datasheet).
    #[arg(long)]
    pub intra_bandwidth: Option<String>,
    /// fat-tree | rail-optimized (needed with more than one node).
    #[arg(long)]
    pub topology: Option<String>,
    /// Per NIC per direction, e.g. "400 Gb/s" (needed with more than one node).
    #[arg(long)]
    pub nic_bandwidth: Option<String>,
    #[arg(long)]
    pub nics_per_node: Option<u32>,
    /// What carries the NICs' traffic: infiniband | roce | efa | efa-v1 | tcpx | tcpxo (default:
    /// InfiniBand's rate and latency, flows hashed over equal paths).
    #[arg(long)]
    pub transport: Option<String>,
    #[arg(long, default_value_t = 1.0)]
    #[serde(default = "one")]
    pub oversubscription: f64,
    /// How leaf and spine switches choose among equal uplinks: ecmp (a hash of each flow),
    /// destination (InfiniBand's per-destination forwarding tables) or spray (every flow over
    /// every path, EFA's SRD). Default: the transport's.
    #[arg(long)]
    pub routing: Option<String>,
    /// Compression ratio of the payload (original / compressed).
    #[arg(long)]
    pub compress_ratio: Option<f64>,
    /// Compressor throughput, e.g. "200 GB/s".
    #[arg(long)]
    pub compressor: Option<String>,
    /// Decompressor throughput, e.g. "400 GB/s".
    #[arg(long)]
    pub decompressor: Option<String>,
    /// Decompress, reduce and recompress at every hop (else once at each end).
    #[arg(long)]
    #[serde(default)]
    pub recompress_each_hop: bool,
    /// Pipeline each hop's (de)compression with its transfer in slices of this size (NCCLZ),
    /// e.g. 1M; needs --recompress-each-hop.
    #[arg(long)]
    pub overlap_slice: Option<String>,
}

fn two() -> u64 {
    2
}

fn auto() -> String {
    "auto".into()
}

fn flow() -> String {
    "flow".into()
}

fn one() -> f64 {
    1.0
}

/// Reads "8", "64K", "8M", "8G" (nccl-tests: powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size: write bytes like 8, 64K, 8M or 8G"))?;
    let scale = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        other => {
            return Err(format!(
                "`{other}` is not a size suffix: use K, M, G or T (powers of 1024)"
            ));
        }
    };
    Ok(n * scale)
}

fn bandwidth(flag: &str, text: &str) -> Result<f64, String> {
    Bandwidth::parse(text)
        .map(|b| b.0)
        .map_err(|e| format!("--{flag}: {e}"))
}

fn sizes(a: &Bench) -> Result<Vec<u64>, String> {
    match (&a.size, &a.begin, &a.end) {
        (Some(s), None, None) => Ok(vec![parse_size(s)?]),
        (None, Some(b), Some(e)) => {
            let (b, e) = (parse_size(b)?, parse_size(e)?);
            if b == 0 || b > e || a.factor < 2 {
                return Err("a sweep needs 0 < -b <= -e and -f of at least 2".into());
            }
            let mut out = vec![b];
            while let Some(&last) = out.last() {
                match last.checked_mul(a.factor) {
                    Some(next) if next <= e => out.push(next),
                    _ => break,
                }
            }
            Ok(out)
        }
        _ => Err("give either --size BYTES, or a sweep with -b MIN -e MAX [-f FACTOR]".into()),
    }
}

fn spec(a: &Bench, g: &gpu::GpuSpec) -> Result<TopologySpec, String> {
    if a.nodes == 0 || a.gpus_per_node == 0 {
        return Err("--nodes and --gpus-per-node must be at least 1".into());
    }
    let mut s = TopologySpec::new(a.nodes, a.gpus_per_node);
    let own = match g.intra_link {
        IntraLinkKind::NvSwitch => IntraKind::NvSwitch,
        IntraLinkKind::Mesh => IntraKind::NvLinkMesh,
        IntraLinkKind::Pcie => IntraKind::Pcie,
    };
    s.intra = match a.intra_link.as_deref() {
        None => own,
        Some("nvswitch") => IntraKind::NvSwitch,
        Some("nvlink-mesh") => IntraKind::NvLinkMesh,
        Some("nvlink-pairs") => IntraKind::NvLinkPairs,
        Some("pcie") => IntraKind::Pcie,
        Some(other) => {
            return Err(format!(
                "--intra-link {other}: valid links are nvswitch, nvlink-mesh, nvlink-pairs, pcie"
            ));
        }
    };
    s.intra_bandwidth = match &a.intra_bandwidth {
        Some(t) => bandwidth("intra-bandwidth", t)?,
        None => g.intra_bandwidth,
    };
    // The GPU's link keeps its own efficiency, named or not; another link gets NVLink's.
    s.intra_efficiency = g.intra_efficiency.filter(|_| s.intra == own);
    s.pcie_bandwidth = g.pcie_bandwidth;
    s.gpu_copy_bandwidth = g.copy_bandwidth();
    s.inter = match a.topology.as_deref() {
        None | Some("fat-tree") => InterKind::FatTree,
        Some("rail-optimized") => InterKind::RailOptimized,
        Some(other) => {
            return Err(format!(
                "--topology {other}: this command builds fat-tree or rail-optimized clusters; \
                 use a scenario file for the others"
            ));
        }
    };
    if a.nodes > 1 {
        let nic = a
            .nic_bandwidth
            .as_deref()
            .ok_or("a cluster of several nodes needs --nic-bandwidth, e.g. \"400 Gb/s\"")?;
        s.nic_bandwidth = bandwidth("nic-bandwidth", nic)?;
    }
    s.nics_per_node = a.nics_per_node.unwrap_or(a.gpus_per_node);
    let transport = match a.transport.as_deref() {
        None => None,
        Some(name) => Some(
            Transport::ALL
                .into_iter()
                .find(|t| t.name() == name)
                .ok_or_else(|| {
                    let valid: Vec<&str> = Transport::ALL.iter().map(|t| t.name()).collect();
                    format!("--transport {name}: valid choices are {}", valid.join(", "))
                })?,
        ),
    };
    s.transport = transport.unwrap_or_default();
    s.inter_latency = s.transport.latency_s();
    if !(a.oversubscription >= 1.0 && a.oversubscription.is_finite()) {
        return Err("--oversubscription must be 1.0 (non-blocking) or more".into());
    }
    s.oversubscription = a.oversubscription;
    s.routing = match a.routing.as_deref() {
        None => transport.map_or(PathSelection::Ecmp, |t| t.routing()),
        Some("ecmp") => PathSelection::Ecmp,
        Some("destination") => PathSelection::Destination,
        Some("spray") => PathSelection::Spray,
        Some(other) => {
            return Err(format!(
                "--routing {other}: valid choices are ecmp, destination and spray"
            ));
        }
    };
    Ok(s)
}

fn compression(a: &Bench) -> Result<Option<Compression>, String> {
    let Some(ratio) = a.compress_ratio else {
        if a.compressor.is_some()
            || a.decompressor.is_some()
            || a.recompress_each_hop
            || a.overlap_slice.is_some()
        {
            return Err("compression options need --compress-ratio".into());
        }
        return Ok(None);
    };
    if !(ratio > 0.0 && ratio.is_finite()) {
        return Err("--compress-ratio must be a positive number".into());
    }
    let rate = |flag: &str, v: &Option<String>| -> Result<f64, String> {
        bandwidth(
            flag,
            v.as_deref().ok_or(format!(
                "--compress-ratio needs --{flag} (throughput, e.g. \"200 GB/s\")"
            ))?,
        )
    };
    let overlap_slice_bytes = match a.overlap_slice.as_deref() {
        None => None,
        Some(_) if !a.recompress_each_hop => {
            return Err(
                "--overlap-slice pipelines each hop's codec: it needs --recompress-each-hop".into(),
            );
        }
        Some(text) => match parse_size(text)? {
            0 => return Err("--overlap-slice must be some bytes, e.g. 1M".into()),
            b => Some(b as f64),
        },
    };
    Ok(Some(Compression {
        ratio,
        compress_bytes_per_s: rate("compressor", &a.compressor)?,
        decompress_bytes_per_s: rate("decompressor", &a.decompressor)?,
        per_hop: a.recompress_each_hop,
        overlap_slice_bytes,
    }))
}

impl Bench {
    /// The report (`clustersim collective --json` without `sim`); Err is bad input, with a
    /// message naming the flag.
    pub fn run(&self) -> Result<Value, String> {
        run(self)
    }
}

fn run(a: &Bench) -> Result<Value, String> {
    let g = gpu::find(&a.gpu)
        .map_err(|close| format!("unknown GPU \"{}\"; closest: {}", a.gpu, close.join(", ")))?;
    let op = CollectiveOp::parse(&a.op).ok_or_else(|| {
        let valid: Vec<&str> = CollectiveOp::ALL.iter().map(|o| o.name()).collect();
        format!("--op {}: valid operations are {}", a.op, valid.join(", "))
    })?;
    let algorithm = Algorithm::parse(&a.algo).ok_or_else(|| {
        format!(
            "--algo {}: valid algorithms are ring, tree, halving-doubling, hierarchical, nvls, direct, auto",
            a.algo
        )
    })?;
    let tier = match a.tier.as_str() {
        "flow" => Tier::Flow,
        "analytical" => Tier::Analytical,
        other => {
            return Err(format!(
                "--tier {other}: valid tiers are flow and analytical"
            ));
        }
    };
    let spec = spec(a, g)?;
    let topo = Topology::build(&spec).map_err(|e| e.message)?;
    let gpus = a.nodes * a.gpus_per_node;
    let n = a.ranks.unwrap_or(gpus);
    if n < 2 || n > gpus {
        return Err(format!(
            "--ranks {n}: between 2 and the cluster's {gpus} GPUs"
        ));
    }
    let mut options = Options::new(tier);
    options.nvls_available = g.in_switch_reduction && spec.intra == IntraKind::NvSwitch;
    if let Some(name) = &a.proto {
        options.protocol =
            Some(Protocol::parse(name).ok_or_else(|| {
                format!("--proto {name}: valid protocols are ll, ll128 and simple")
            })?);
    }
    let compression = compression(a)?;
    let group = Group::first(n, a.gpus_per_node);
    let mut rows = Vec::new();
    for size in sizes(a)? {
        let c = Collective {
            op,
            algorithm,
            group: group.clone(),
            bytes: size as f64,
            compression,
        };
        rows.push((size, cost(&topo, &c, &options).map_err(|e| e.to_string())?));
    }
    let results: Vec<_> = rows
        .iter()
        .map(|(size, r)| {
            json!({
                "size_bytes": size,
                "time_s": r.seconds,
                "algbw_GBps": r.algbw / 1e9,
                "busbw_GBps": r.busbw / 1e9,
                "algorithm": r.algorithm.name(),
                "protocol": r.protocol.name(),
                "steps": r.steps,
                "phases_priced": r.phases_priced,
                "peak_link_load": r.peak_load,
            })
        })
        .collect();
    let last = results.last().cloned().expect("at least one size");
    let report = json!({
        "kind": "collective",
        "op": op.name(),
        "gpu": g.name,
        "nodes": a.nodes,
        "gpus_per_node": a.gpus_per_node,
        "ranks": n,
        "topology": topo.name,
        "fidelity": { "network": tier.name(), "symmetry": "identical steps of an algorithm priced once" },
        "time_s": last["time_s"],
        "algbw_GBps": last["algbw_GBps"],
        "busbw_GBps": last["busbw_GBps"],
        "algorithm": last["algorithm"],
        "results": results,
    });
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_like_nccl_tests() {
        assert_eq!(parse_size("8").unwrap(), 8);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("8G").unwrap(), 8 << 30);
        assert!(parse_size("8X").is_err());
        assert!(parse_size("big").is_err());
    }
}
