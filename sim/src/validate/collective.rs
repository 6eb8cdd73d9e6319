//! Collective cases: an nccl-tests run priced with [`crate::collective::cost`] on the flow tier,
//! on the cluster the case states: one server (a board of the GPU's usual wiring), or servers
//! with their NICs (count, line rate, transport) on a leaf/spine network.
//!
//! The predicted value is read in the case's unit: nccl-tests' bus bandwidth (GB/s) for a
//! "busBW" metric, its time (us) for a "time" metric. A run that needs what the simulator lacks
//! (in-network reduction through the switches, NVLink domains that span servers joined by a
//! network whose NICs the source does not state) is not expressible, with the reason.

use super::prose::{bandwidth_in, find_gpu, text, whole};
use super::{Case, GIB, Refusal, Status};
use crate::collective::cost::{Collective, Options, cost};
use crate::collective::{Algorithm, CollectiveOp, Group, Protocol};
use crate::hw::GpuSpec;
use crate::hw::gpu::IntraLinkKind;
use crate::net::Topology;
use crate::net::Transport;
use crate::net::tier::Tier;
use crate::net::topology::spec::{InterKind, IntraKind, TopologySpec};
use serde_json::Value;

/// nccl-tests' size suffixes are binary: "4G" is 4 GiB.
fn nccl_size(text: &str) -> Option<f64> {
    let t = text.trim();
    let (digits, scale) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024.0),
        'M' | 'm' => (&t[..t.len() - 1], 1024.0 * 1024.0),
        'G' | 'g' => (&t[..t.len() - 1], GIB),
        _ => (t, 1.0),
    };
    digits.parse::<f64>().ok().map(|v| v * scale)
}

fn not_expressible(why: impl Into<String>, a: &[String]) -> Refusal {
    Refusal {
        status: Status::NotExpressible(why.into()),
        assumptions: a.to_vec(),
    }
}

/// What the case measured: a bus bandwidth or a time.
#[derive(Copy, Clone, PartialEq)]
enum Reading {
    BusBw,
    TimeUs,
}

/// The predicted value of the case's collective, in its unit, and the choices made.
/// The predicted figure, the assumptions and the regime (`uncertainty::regime::collective`).
pub(super) fn collective(c: &Case) -> Result<(f64, Vec<String>, String), Refusal> {
    let mut a = Vec::new();
    let (g, n, board) = gpus(c, &mut a)?;
    // Fewer GPUs than a board: the first n of one server take part.
    let nodes = n.div_ceil(board);
    if nodes > 1 && n % board != 0 {
        return Err(Refusal::failed(
            format!("{n} GPUs do not fill servers of {board}"),
            &a,
        ));
    }
    let spec = topology_spec(c, g, nodes, board, &mut a)?;
    let command = text(c.get("parallel", "collective")).unwrap_or("");
    let (op, reading) = operation(c, command, &a)?;
    let bytes = size(c, command, &mut a)?;
    if !(bytes.is_finite() && bytes > 0.0) {
        return Err(Refusal::failed(
            format!("a size of {bytes} bytes: sizes are positive"),
            &a,
        ));
    }
    let algorithm = algorithm(c, &mut a)?;
    let options = options(c, command, g, spec.intra, nodes, &mut a)?;
    let topo = Topology::build(&spec).map_err(|e| Refusal::failed(e.message, &a))?;
    let priced = cost(
        &topo,
        &Collective {
            op,
            algorithm,
            group: Group::first(n, board),
            bytes,
            compression: None,
        },
        &options,
    )
    .map_err(|e| Refusal::failed(e.to_string(), &a))?;
    a.push(format!(
        "flow network tier; {} algorithm, {} protocol",
        priced.algorithm.name(),
        priced.protocol.name()
    ));
    let regime = crate::uncertainty::regime::collective(nodes as f64, bytes);
    Ok(match reading {
        Reading::BusBw => (priced.busbw / 1e9, a, regime),
        Reading::TimeUs => (priced.seconds * 1e6, a, regime),
    })
}

/// The case's GPU, how many take part and how many a server board holds (an NVLink domain larger
/// than a server, GB200 NVL72's rack, being one board to the network).
fn gpus(c: &Case, a: &mut Vec<String>) -> Result<(&'static GpuSpec, u32, u32), Refusal> {
    let gpu_name = text(c.get("hardware", "gpu"))
        .ok_or_else(|| Refusal::failed("hardware.gpu is missing", a))?;
    let (g, note) = find_gpu(gpu_name).map_err(|e| Refusal::failed(e, a))?;
    a.extend(note);
    let n = whole(c.get("hardware", "count"))
        .ok_or_else(|| Refusal::failed("hardware.count is missing", a))?;
    let mut board = match whole(c.get("hardware", "gpus_per_node")) {
        Some(b) => b,
        None => {
            a.push(format!(
                "an 8-GPU board ({} usual server), {n} of its GPUs taking part",
                g.name
            ));
            8
        }
    };
    // An NVLink domain larger than a server (GB200 NVL72's rack) is one node to the network.
    if let Some(domain) = whole(c.get("hardware", "nvlink_domain")) {
        if n > domain {
            return Err(not_expressible(
                "NVLink domains of several servers joined by a network",
                a,
            ));
        }
        a.push(format!(
            "one NVLink domain of {domain} GPUs (its servers joined by NVLink switches)"
        ));
        board = n;
    }
    if n < 2 || board == 0 {
        return Err(Refusal::failed(
            format!("a collective over {n} GPUs on boards of {board}"),
            a,
        ));
    }
    Ok((g, n, board))
}

/// The cluster of `nodes` servers of `board` GPUs `g`: the board's wiring from the GPU's
/// datasheet, and between servers the network the case states.
fn topology_spec(
    c: &Case,
    g: &'static GpuSpec,
    nodes: u32,
    board: u32,
    a: &mut Vec<String>,
) -> Result<TopologySpec, Refusal> {
    let intra = match g.intra_link {
        IntraLinkKind::NvSwitch => IntraKind::NvSwitch,
        IntraLinkKind::Mesh => IntraKind::NvLinkMesh,
        IntraLinkKind::Pcie => IntraKind::Pcie,
    };
    a.push(format!(
        "intra-node bandwidth {} GB/s per GPU per direction ({} datasheet)",
        g.intra_bandwidth / 1e9,
        g.name
    ));
    let mut spec = TopologySpec::new(nodes, board);
    spec.intra = intra;
    spec.intra_bandwidth = g.intra_bandwidth;
    spec.intra_efficiency = g.intra_efficiency;
    spec.pcie_bandwidth = g.pcie_bandwidth;
    spec.gpu_copy_bandwidth = g.copy_bandwidth();
    if nodes > 1 {
        network(c, &mut spec, a)?;
        // AWS ran first-generation EFA on its A100 and V100 servers (p4d, p4de, p3dn) and the
        // current one from H100 (p5) on.
        if spec.transport == Transport::Efa && !g.in_switch_reduction {
            spec.transport = Transport::EfaV1;
            a.push(format!(
                "first-generation EFA ({} servers: p3dn, p4d, p4de): NCCL runs Simple only",
                g.name
            ));
        }
    }
    Ok(spec)
}

/// The collective `command` runs (else the one the metric names), and what the case measured.
fn operation(c: &Case, command: &str, a: &[String]) -> Result<(CollectiveOp, Reading), Refusal> {
    let metric = c.metric.to_lowercase();
    let op_word = command
        .split_whitespace()
        .find(|w| w.ends_with("_perf"))
        .unwrap_or("")
        .trim_end_matches("_perf");
    let op = CollectiveOp::parse(op_word)
        .or_else(|| {
            metric
                .split_whitespace()
                .next()
                .and_then(CollectiveOp::parse)
        })
        .ok_or_else(|| Refusal::failed(format!("no collective named in \"{command}\""), a))?;
    let reading = if metric.contains("busbw") {
        Reading::BusBw
    } else if metric.contains("time") && c.unit == "us" {
        Reading::TimeUs
    } else {
        return Err(Refusal::failed(
            format!(
                "no reading of \"{}\" in {}: a busBW in GB/s or a time in us",
                c.metric, c.unit
            ),
            a,
        ));
    };
    Ok((op, reading))
}

/// `NCCL_ALGO`, or NCCL's own choice; reduction inside the switches (CollNet) not expressible.
fn algorithm(c: &Case, a: &mut Vec<String>) -> Result<Algorithm, Refusal> {
    Ok(match text(c.get("parallel", "NCCL_ALGO")) {
        Some(name) if name.to_lowercase().starts_with("collnet") => {
            return Err(not_expressible(
                format!("NCCL_ALGO {name}: reduction inside the network's switches (SHARP)"),
                a,
            ));
        }
        Some(name) => Algorithm::parse(name).ok_or_else(|| {
            Refusal::failed(
                format!("NCCL_ALGO \"{name}\" is not an algorithm the simulator has"),
                a,
            )
        })?,
        None => {
            a.push("NCCL's choice of algorithm (NCCL_ALGO not stated)".into());
            Algorithm::Auto
        }
    })
}

/// NCCL's options as the case runs it: in-switch reduction, P2P direct mode and `NCCL_PROTO`.
fn options(
    c: &Case,
    command: &str,
    g: &'static GpuSpec,
    intra: IntraKind,
    nodes: u32,
    a: &mut Vec<String>,
) -> Result<Options, Refusal> {
    let mut options = Options::new(Tier::Flow);
    options.nvls_available = g.in_switch_reduction && intra == IntraKind::NvSwitch;
    if text(c.get("parallel", "NCCL_NVLS_ENABLE")) == Some("0") {
        a.push("no in-switch reduction (NCCL_NVLS_ENABLE=0)".into());
        options.nvls_available = false;
    }
    // One board without a launcher is one process driving every GPU (nccl-tests' -g or -t; issue
    // 1455's cases ran -g): NCCL's P2P direct mode, without the receive buffers of separate
    // processes (`collective::buffer_copy`). Several servers take a process each at least.
    options.p2p_direct = nodes == 1
        && !["mpirun", "srun", "-np"]
            .iter()
            .any(|w| command.split_whitespace().any(|x| x == *w));
    if options.p2p_direct {
        a.push(
            "every GPU driven by one process (no mpirun stated; nccl-tests -g): NCCL's P2P \
             direct mode"
                .into(),
        );
    }
    if let Some(name) = text(c.get("parallel", "NCCL_PROTO")) {
        options.protocol = Some(Protocol::parse(name).ok_or_else(|| {
            Refusal::failed(format!("NCCL_PROTO \"{name}\" is not a protocol"), a)
        })?);
    }
    Ok(options)
}

/// The servers' network as the case states it: NICs (count, line rate), transport, switches.
fn network(c: &Case, spec: &mut TopologySpec, a: &mut Vec<String>) -> Result<(), Refusal> {
    let nics = whole(c.get("hardware", "nics_per_node"))
        .ok_or_else(|| not_expressible("the NICs per server are not stated", a))?;
    let rate = text(c.get("hardware", "nic_bandwidth"))
        .and_then(bandwidth_in)
        .ok_or_else(|| not_expressible("the NICs' line rate is not stated", a))?;
    spec.nics_per_node = nics;
    spec.nic_bandwidth = rate.0;
    let said = text(c.get("hardware", "transport")).unwrap_or("");
    spec.transport = Transport::from_prose(said).unwrap_or_else(|| {
        a.push(format!(
            "InfiniBand between servers (no transport named in \"{said}\")"
        ));
        Transport::Infiniband
    });
    spec.inter_latency = spec.transport.latency_s();
    a.push(format!(
        "{nics} x {} NICs per server, {}",
        rate.1,
        spec.transport.name()
    ));
    let fabric = text(c.get("hardware", "fabric"))
        .unwrap_or("")
        .to_lowercase();
    spec.inter = if fabric.contains("rail") {
        InterKind::RailOptimized
    } else {
        if !fabric.contains("fat") {
            a.push("a non-blocking fat tree between servers (switches not stated)".into());
        }
        InterKind::FatTree
    };
    spec.routing = spec.transport.routing();
    Ok(())
}

/// The case's message size in bytes: its row's `size`, or the sweep's largest (`-e`).
fn size(c: &Case, command: &str, a: &mut Vec<String>) -> Result<f64, Refusal> {
    match c.get("parallel", "size") {
        Some(Value::String(s)) => {
            return nccl_size(s)
                .ok_or_else(|| Refusal::failed(format!("size \"{s}\" is not a size"), a));
        }
        Some(Value::Number(v)) => {
            return v
                .as_f64()
                .ok_or_else(|| Refusal::failed("size is not a number", a));
        }
        _ => {}
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    match words
        .iter()
        .position(|w| *w == "-e")
        .and_then(|i| words.get(i + 1))
        .and_then(|s| nccl_size(s))
    {
        Some(b) => {
            a.push(format!(
                "priced at the sweep's largest size, {} GiB (all_reduce_perf -e)",
                b / GIB
            ));
            Ok(b)
        }
        None => {
            a.push("priced at 4 GiB (size not stated)".into());
            Ok(4.0 * GIB)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_nccl_tests_writes_them() {
        assert_eq!(nccl_size("4G"), Some(4.0 * GIB));
        assert_eq!(nccl_size("1073741824"), Some(GIB));
        assert_eq!(nccl_size("8M"), Some(8.0 * 1024.0 * 1024.0));
    }

    #[test]
    fn a_size_that_is_not_positive_fails_its_row() {
        let cases = crate::validate::parse(
            std::path::Path::new("c.json"),
            r#"[{"id": "nccl-x", "metric": "busbw", "unit": "GB/s", "value": 100,
                "hardware": {"gpu": "H100", "count": 8},
                "parallel": {"collective": "all_reduce_perf", "size": -5}}]"#,
        )
        .unwrap();
        let row = &crate::validate::validate_case(&cases[0], "c.json")[0];
        match &row.status {
            Status::Failed(why) => assert!(why.contains("sizes are positive"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
