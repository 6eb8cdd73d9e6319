//! How busy each link of the Topology tab was over a run, from the report's `links`.
//!
//! Collective scenarios (`kind = "collective"`) and training runs with `[sim] record_links` (the
//! viewer turns it on for training) record it: their report lists every directed link used with
//! the bytes it carried on the wire (`bytes`) and its average utilisation over the run (`busy`). Each drawn link gets the busier of its two directions: its bytes, and its
//! average utilisation, bytes ÷ (line rate × time). A server's summed uplinks to one switch (what a
//! collapsed server draws) get the sum of their member links' bytes in the busier direction over
//! the sum of their line rates. Links are matched to the report by device names (`node3/gpu5`),
//! which the viewer's own build of the topology shares with the run's.
//!
//! Deliberately left out: utilisation over time (the report has totals only) and serving and
//! diffusion runs (they price their communication without recording per-link bytes; the tab
//! says so).

use crate::topology_layout::Layout;
use crate::topology_links::Scope;
use serde_json::Value;
use std::collections::HashMap;

/// One drawn link's traffic, in its busier direction.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Load {
    pub bytes: f64,
    /// Bytes over line rate × time: the average fraction of the time the link was busy.
    pub busy: f64,
}

/// The traffic of every drawn link (`None`: it carried nothing).
#[derive(Clone, Debug, PartialEq)]
pub struct Traffic {
    pub links: Vec<Option<Load>>,
    pub uplinks: Vec<Option<Load>>,
    /// The busiest link: its index in `Layout::links` and its load.
    pub peak: Option<(usize, Load)>,
    /// The run's time the utilisation is over, seconds.
    pub seconds: f64,
}

/// The traffic in `report` placed on `layout`; `None` when the report has no `links`.
pub fn from_report(report: &Value, layout: &Layout) -> Option<Traffic> {
    let listed = report.get("links")?.as_array()?;
    // A collective's time, or a training step's.
    let seconds = report
        .get("time_s")
        .or_else(|| report.get("iteration_time_s"))?
        .as_f64()
        .filter(|s| *s > 0.0)?;
    let index: HashMap<&str, usize> = layout
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    // Bytes by directed pair of device indices.
    let mut directed: HashMap<(usize, usize), f64> = HashMap::new();
    for l in listed {
        let end = |k: &str| l.get(k).and_then(Value::as_str).and_then(|n| index.get(n));
        if let (Some(&a), Some(&b), Some(bytes)) = (
            end("from"),
            end("to"),
            l.get("bytes").and_then(Value::as_f64),
        ) {
            *directed.entry((a, b)).or_insert(0.0) += bytes;
        }
    }
    let both = |a: usize, b: usize| {
        (
            directed.get(&(a, b)).copied().unwrap_or(0.0),
            directed.get(&(b, a)).copied().unwrap_or(0.0),
        )
    };
    let load = |bytes: f64, rate: f64| {
        (bytes > 0.0).then(|| Load {
            bytes,
            busy: bytes / (rate * seconds),
        })
    };
    let links: Vec<Option<Load>> = layout
        .links
        .iter()
        .map(|l| {
            let (ab, ba) = both(l.a, l.b);
            load(ab.max(ba), l.bandwidth)
        })
        .collect();
    let uplinks = layout
        .uplinks
        .iter()
        .map(|u| {
            // Member links: the server's uplinks of this kind to this switch; direction "up" is
            // from the server's side to the switch.
            let (mut up, mut down, mut rate) = (0.0, 0.0, 0.0);
            for l in &layout.links {
                if l.scope != Scope::Up(u.node) || l.kind != u.kind || (l.a != u.to && l.b != u.to)
                {
                    continue;
                }
                let inside = if l.a == u.to { l.b } else { l.a };
                let (out, back) = both(inside, u.to);
                up += out;
                down += back;
                rate += l.bandwidth;
            }
            load(up.max(down), rate)
        })
        .collect();
    let peak = links
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.map(|l| (i, l)))
        .max_by(|a, b| a.1.busy.total_cmp(&b.1.busy));
    Some(Traffic {
        links,
        uplinks,
        peak,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology_layout::from_scenario;

    fn run(rel: &str, sets: &[&str]) -> (Value, std::sync::Arc<Layout>) {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(rel);
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let s = clustersim::Scenario::load(&path, &sets).unwrap();
        let report = clustersim::run(&s).unwrap().report;
        (report, from_scenario(&s).layout.unwrap())
    }

    /// A collective run's links all land on drawn links; a ring over the whole cluster loads every
    /// GPU's link alike, and a summed uplink is as busy as its busiest member direction allows.
    #[test]
    fn a_collective_colours_the_links_it_used() {
        let (report, layout) = run("papers/zccl-all-reduce-16x4xa100-slow.toml", &[]);
        let t = from_report(&report, &layout).expect("a collective records its links");
        let listed = report["links"].as_array().unwrap().len();
        let loaded = t.links.iter().flatten().count();
        // Two directions of one physical link are one drawn link.
        assert_eq!(loaded * 2, listed, "every listed link is drawn");
        let (_, peak) = t.peak.unwrap();
        assert!(peak.busy > 0.0 && peak.busy <= 1.0 + 1e-9, "{peak:?}");
        for (u, load) in layout.uplinks.iter().zip(&t.uplinks) {
            let load = load.unwrap_or_else(|| panic!("node {} uplink unused", u.node));
            assert!(load.busy <= peak.busy + 1e-9);
        }
        // A report without `links` colours nothing.
        let (report, layout) = run("training/gpt3-1.3b-8xh100.toml", &[]);
        assert!(from_report(&report, &layout).is_none());
    }

    /// A training step that recorded its links colours every GPU's links and the network's, by
    /// their share of the step.
    #[test]
    fn a_training_step_colours_its_links() {
        let (report, layout) = run(
            "training/megatron-3.6b-64xa100-tp2.toml",
            &["sim.record_links=true"],
        );
        let t = from_report(&report, &layout).expect("the step recorded its links");
        let loaded = t.links.iter().flatten().count();
        let listed = report["links"].as_array().unwrap().len();
        // Each drawn link stands for its two directions; some switch links carry one only.
        assert!(
            loaded <= listed && 2 * loaded >= listed,
            "{loaded} of {listed}"
        );
        let (_, peak) = t.peak.unwrap();
        assert!(peak.busy > 0.0 && peak.busy < 1.0, "{peak:?}");
        assert!(
            t.uplinks.iter().all(Option::is_some),
            "every server sends over the network"
        );
    }
}
