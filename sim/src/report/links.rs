//! The `links` of a report: every directed link that carried bytes over a run, with its ends
//! (device names), kind, the bytes it carried on the wire and `busy`, those bytes over the link's
//! line rate times the run's time (its average utilisation). The protocols' overheads are in the
//! bytes; the network tier's efficiency is not in the rate.

use crate::net::topology::Topology;
use serde_json::{Value, json};

/// The links of `topo` with bytes in `link_bytes` (by edge index) over `seconds`, in edge order.
pub fn links(topo: &Topology, link_bytes: &[f64], seconds: f64) -> Value {
    let g = &topo.graph;
    let used: Vec<Value> = g
        .edge_indices()
        .filter_map(|e| {
            let bytes = *link_bytes.get(e.index())?;
            if bytes <= 0.0 {
                return None;
            }
            let (a, b) = g.edge_endpoints(e)?;
            let link = &g[e];
            Some(json!({
                "from": g[a].name,
                "to": g[b].name,
                "kind": link.kind.name(),
                "bytes": bytes,
                "busy": bytes / (link.bandwidth * seconds),
            }))
        })
        .collect();
    Value::Array(used)
}
