//! Every link's effective capacity for pricing one collective (line rate times the tier's
//! efficiency), the plain one and the one of an in-switch reduction, looked up link by link: a
//! collective crosses a few of a large topology's links.

use crate::net::tier::{self, Efficiency};
use crate::net::topology::Topology;

/// Every link's effective capacity for one collective's pricing: the plain one, and the one of
/// an in-switch reduction (NVLink at `nvls_scale` of line rate), whichever the candidate
/// algorithms and protocols ask for.
pub(super) struct Capacities<'t> {
    pub(super) topo: &'t Topology,
    efficiency: Efficiency,
    nvls_scale: f64,
}

impl<'t> Capacities<'t> {
    pub(super) fn new(topo: &'t Topology, efficiency: Efficiency, nvls_scale: f64) -> Self {
        Capacities {
            topo,
            efficiency,
            nvls_scale,
        }
    }

    /// The capacities an algorithm sees, by link index: the in-switch ones if it reduces in the
    /// switch.
    pub(super) fn of(&self, in_switch: bool) -> impl Fn(usize) -> f64 + '_ {
        let scale = in_switch.then_some(self.nvls_scale);
        move |l| tier::capacity(self.topo, &self.efficiency, scale, l)
    }
}
