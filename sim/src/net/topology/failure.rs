//! Failed cables between a leaf and a spine of a leaf/spine fabric ([`Clos`]). The switches
//! reconverge: a flow whose path survives keeps it (resilient hashing), and a flow whose path
//! crossed a failed cable moves to a surviving spine, picked by its ECMP hash among those that
//! reach both its leaves; likewise between a spine and a core of a multi-pod fabric. A failure
//! that leaves two leaves with no spine between them, a leaf with no uplink, or two spines of
//! different pods with no core between them is refused. Ignored: the seconds of reconvergence
//! and the packets lost meanwhile, and failures of NIC cables and WAN links.

use super::clos::{Clos, Upper};
use super::multi_pod::Core;
use petgraph::graph::EdgeIndex;

impl Clos {
    /// Marks the cable of `e` (either direction of a leaf-spine link) failed, both directions.
    /// Errors, leaving the fabric as it was: `e` is not a leaf-spine link, or a leaf (by index)
    /// would be cut off from another (or from every spine).
    pub fn fail(&mut self, e: EdgeIndex) -> Result<(), FailError> {
        let was = self.failed.clone();
        let outcome = self.fail_and_check(e);
        if outcome.is_err() {
            self.failed = was;
        }
        outcome
    }

    fn fail_and_check(&mut self, e: EdgeIndex) -> Result<(), FailError> {
        let spines = self.spines as usize;
        if let Upper::Core(core) = &mut self.upper
            && let Some(at) = core.index_of(e)
        {
            return core.fail_at(at, spines);
        }
        let at = self
            .leaf_up
            .iter()
            .position(|&x| x == e)
            .or_else(|| self.leaf_down.iter().position(|&x| x == e))
            .ok_or(FailError::NotLeafSpine)?;
        if self.failed.is_empty() {
            self.failed = vec![false; self.leaf_up.len()];
        }
        self.failed[at] = true;
        let s = self.spines as usize;
        let leaf = (at / s) as u32;
        let group = self.leaf_group[leaf as usize];
        if (0..s as u32).all(|i| !self.up(leaf, i)) {
            return Err(FailError::Cut(leaf, None));
        }
        let mut populated = vec![false; self.leaf_group.len()];
        for &l in &self.nic_leaf {
            populated[l as usize] = true;
        }
        for other in 0..self.leaf_group.len() as u32 {
            if other != leaf
                && self.leaf_group[other as usize] == group
                && populated[other as usize]
                && (0..s as u32).all(|i| !(self.up(leaf, i) && self.up(other, i)))
            {
                return Err(FailError::Cut(leaf, Some(other)));
            }
        }
        Ok(())
    }

    /// Whether the cable from `leaf` to spine `s` of its group carries traffic.
    fn up(&self, leaf: u32, s: u32) -> bool {
        self.failed.is_empty() || !self.failed[(leaf * self.spines + s) as usize]
    }

    /// The spine a flow from `leaf` up to its group's spines takes: `preferred` while its cable
    /// is up, else one of the surviving ones by `hash`.
    pub(super) fn spine_of(&self, leaf: u32, preferred: u32, hash: u64) -> u32 {
        self.survivor(preferred, hash, |s| self.up(leaf, s))
    }

    /// The spine a flow between two leaves of one group takes: `preferred` while both its
    /// cables are up, else one of the spines both leaves still reach, by `hash`.
    pub(super) fn spine_between(&self, a: u32, b: u32, preferred: u32, hash: u64) -> u32 {
        self.survivor(preferred, hash, |s| self.up(a, s) && self.up(b, s))
    }

    fn survivor(&self, preferred: u32, hash: u64, up: impl Fn(u32) -> bool) -> u32 {
        if self.failed.is_empty() {
            return preferred;
        }
        survivor(self.spines, preferred, hash, up)
    }
}

/// Of `count` equal next hops, `preferred` while `up`, else the surviving one `hash` picks
/// (resilient hashing); the failure checks leave at least one.
fn survivor(count: u32, preferred: u32, hash: u64, up: impl Fn(u32) -> bool) -> u32 {
    if up(preferred) {
        return preferred;
    }
    let alive: Vec<u32> = (0..count).filter(|&k| up(k)).collect();
    alive[(hash % alive.len().max(1) as u64) as usize]
}

impl Core {
    /// The index of `e` (either direction of a spine-core cable), if it is one.
    fn index_of(&self, e: EdgeIndex) -> Option<usize> {
        self.up
            .iter()
            .position(|&x| x == e)
            .or_else(|| self.down.iter().position(|&x| x == e))
    }

    /// Fails cable `at`, refusing (and leaving the core as it was) a failure after which two
    /// spines of different pods (of `per_pod` spines each) share no live core.
    fn fail_at(&mut self, at: usize, per_pod: usize) -> Result<(), FailError> {
        let was = self.failed.clone();
        if self.failed.is_empty() {
            self.failed = vec![false; self.up.len()];
        }
        self.failed[at] = true;
        let c = self.cores as usize;
        let spines = self.up.len() / c;
        let a = at / c;
        for b in 0..spines {
            let other_pod = b / per_pod.max(1) != a / per_pod.max(1);
            if other_pod && (0..c).all(|k| !(self.alive(a, k) && self.alive(b, k))) {
                self.failed = was;
                return Err(FailError::CoreCut(a as u32, b as u32));
            }
        }
        Ok(())
    }

    fn alive(&self, spine: usize, core: usize) -> bool {
        self.failed.is_empty() || !self.failed[spine * self.cores as usize + core]
    }

    /// The core a flow from spine `a` to spine `b` (global spine indices) takes: `preferred`
    /// while both its cables are up, else one both still reach, by `hash`.
    pub(super) fn core_between(&self, a: u32, b: u32, preferred: u32, hash: u32) -> u32 {
        if self.failed.is_empty() {
            return preferred;
        }
        survivor(self.cores, preferred, hash as u64, |k| {
            self.alive(a as usize, k as usize) && self.alive(b as usize, k as usize)
        })
    }
}

/// Why a cable cannot be failed.
#[derive(Debug, PartialEq)]
pub enum FailError {
    /// The link is not between a leaf and a spine.
    NotLeafSpine,
    /// A leaf (by index) with no spine left to reach another leaf of its group, or any spine.
    Cut(u32, Option<u32>),
    /// Two spines (by global index) of different pods with no core in common.
    CoreCut(u32, u32),
}

#[cfg(test)]
mod tests {
    use crate::net::topology::Topology;
    use crate::net::topology::spec::TopologySpec;
    use petgraph::graph::EdgeIndex;

    /// 8 servers of 4 GPUs and 4 NICs: 4 leaves of 8 ports, 4 spines at 2:1.
    fn fabric() -> Topology {
        Topology::build(&TopologySpec {
            leaf_downlinks: 8,
            oversubscription: 2.0,
            ..TopologySpec::new(8, 4)
        })
        .unwrap()
    }

    fn cable(t: &Topology, a: &str, b: &str) -> petgraph::graph::EdgeIndex {
        let (a, b) = (t.find(a).unwrap(), t.find(b).unwrap());
        t.graph.find_edge(a, b).unwrap()
    }

    /// Every route of `t` avoids `cable`; those of `healthy` that crossed it moved to a path as
    /// long, the others kept theirs, and some of each.
    fn only_crossing_routes_move(healthy: &Topology, t: &Topology, cable: [EdgeIndex; 2]) {
        let n = t.gpu_count();
        let (mut moved, mut kept) = (0, 0);
        for s in 0..n {
            for d in 0..n {
                let (before, after) = (healthy.route(s, d), t.route(s, d));
                assert!(cable.iter().all(|c| !after.links.contains(c)));
                if cable.iter().any(|c| before.links.contains(c)) {
                    assert_eq!(before.links.len(), after.links.len(), "{s} -> {d}");
                    moved += 1;
                } else {
                    assert_eq!(before.links, after.links, "{s} -> {d}");
                    kept += 1;
                }
            }
        }
        assert!(moved > 0 && kept > moved, "{moved} moved, {kept} kept");
    }

    #[test]
    fn routes_leave_a_failed_cable_and_the_rest_keep_theirs() {
        let healthy = fabric();
        let mut t = fabric();
        let (up, down) = (cable(&t, "leaf0", "spine1"), cable(&t, "spine1", "leaf0"));
        t.fail_link(down).unwrap();
        only_crossing_routes_move(&healthy, &t, [up, down]);
        crate::net::topology::testing::check_all_routes(&t);
    }

    #[test]
    fn a_leaf_keeps_a_spine_with_every_other_leaf() {
        let mut t = fabric();
        for s in 0..3 {
            t.fail_link(cable(&t, "leaf0", &format!("spine{s}")))
                .unwrap();
        }
        let e = cable(&t, "leaf1", "spine3");
        let why = t.fail_link(e).unwrap_err();
        assert!(why.contains("no spine would join"), "{why}");
        // A refused failure leaves the fabric as it was.
        assert!(t.route(8, 0).links.contains(&cable(&t, "leaf1", "spine3")));
        let why = t.fail_link(cable(&t, "node0/nic0", "leaf0")).unwrap_err();
        assert!(why.contains("NCCL"), "{why}");
    }

    /// 3 pods of 2 servers of 2 GPUs and 2 NICs, one leaf a pod, 4 spines a pod, 4 cores.
    fn pods() -> Topology {
        Topology::build(&TopologySpec {
            leaf_downlinks: 4,
            pods: 3,
            pod_oversubscription: 2.0,
            ..TopologySpec::new(6, 2)
        })
        .unwrap()
    }

    #[test]
    fn a_failed_core_cable_moves_only_the_flows_that_crossed_it() {
        let healthy = pods();
        let mut t = pods();
        let (up, down) = (
            cable(&t, "pod0/spine1", "core2"),
            cable(&t, "core2", "pod0/spine1"),
        );
        t.fail_link(up).unwrap();
        only_crossing_routes_move(&healthy, &t, [up, down]);
        // A spine cut off from every core is refused, and the core stays as it was.
        t.fail_link(cable(&t, "pod0/spine1", "core0")).unwrap();
        t.fail_link(cable(&t, "pod0/spine1", "core1")).unwrap();
        let last = cable(&t, "pod0/spine1", "core3");
        let why = t.fail_link(last).unwrap_err();
        assert!(why.contains("no core would join pod0/spine1"), "{why}");
        assert!((0..12).any(|s| (0..12).any(|d| t.route(s, d).links.contains(&last))));
        crate::net::topology::testing::check_all_routes(&t);
    }

    #[test]
    fn only_leaf_spine_fabrics_reroute() {
        let mut t = Topology::build(&TopologySpec::new(1, 8)).unwrap();
        let e = petgraph::graph::EdgeIndex::new(0);
        assert!(t.fail_link(e).unwrap_err().contains("leaf/spine fabric"));
    }
}
