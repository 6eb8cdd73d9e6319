//! Every link's effective capacity for pricing one collective (line rate times the tier's
//! efficiency), built on first use and shared by the algorithms and protocols it is priced with.

use crate::net::tier::{self, Efficiency};
use crate::net::topology::Topology;
use std::cell::OnceCell;

/// Every link's effective capacity for one collective's pricing, built once on first use: the
/// plain one, and the one of an in-switch reduction (its NVLink scale), whichever the candidate
/// algorithms and protocols ask for.
pub(super) struct Capacities<'t> {
    pub(super) topo: &'t Topology,
    efficiency: Efficiency,
    plain: OnceCell<Vec<f64>>,
    in_switch: OnceCell<Vec<f64>>,
}

impl<'t> Capacities<'t> {
    pub(super) fn new(topo: &'t Topology, efficiency: Efficiency) -> Self {
        Capacities {
            topo,
            efficiency,
            plain: OnceCell::new(),
            in_switch: OnceCell::new(),
        }
    }

    pub(super) fn of(&self, scale: Option<f64>) -> &[f64] {
        match scale {
            None => self
                .plain
                .get_or_init(|| tier::capacities(self.topo, &self.efficiency, None)),
            Some(_) => self
                .in_switch
                .get_or_init(|| tier::capacities(self.topo, &self.efficiency, scale)),
        }
    }
}
