//! Every link's effective capacity for pricing one collective (line rate times the tier's
//! efficiency), built on first use and shared by the algorithms and protocols it is priced with.

use crate::net::tier::{self, Efficiency};
use crate::net::topology::Topology;
use std::cell::OnceCell;

/// Every link's effective capacity for one collective's pricing, built once on first use: the
/// plain one, and the one of an in-switch reduction (NVLink at `nvls_scale` of line rate),
/// whichever the candidate algorithms and protocols ask for.
pub(super) struct Capacities<'t> {
    pub(super) topo: &'t Topology,
    efficiency: Efficiency,
    nvls_scale: f64,
    plain: OnceCell<Vec<f64>>,
    in_switch: OnceCell<Vec<f64>>,
}

impl<'t> Capacities<'t> {
    pub(super) fn new(topo: &'t Topology, efficiency: Efficiency, nvls_scale: f64) -> Self {
        Capacities {
            topo,
            efficiency,
            nvls_scale,
            plain: OnceCell::new(),
            in_switch: OnceCell::new(),
        }
    }

    /// The capacities an algorithm sees: the in-switch ones if it reduces in the switch.
    pub(super) fn of(&self, in_switch: bool) -> &[f64] {
        let (cell, scale) = match in_switch {
            false => (&self.plain, None),
            true => (&self.in_switch, Some(self.nvls_scale)),
        };
        cell.get_or_init(|| tier::capacities(self.topo, &self.efficiency, scale))
    }
}
