//! Local SGD across sites (DiLoCo; DiLoCoX): each site trains on its own for `local_steps` steps,
//! reducing gradients only among its own replicas, then the sites average what they learned (the
//! outer synchronisation: an all-reduce of the fp32 pseudo-gradient, the change of the weights
//! over the round) over the slow link between them.
//!
//! The inner step is the simulated step (its gradient reductions are the site's, `comm`). The
//! outer all-reduce is priced on the topology for the same GPU of one replica per site, each of a
//! site's replicas carrying an equal slice of its stage's weights, with every other GPU of the
//! site running its own slice's all-reduce at the same time over the same links (so the WAN is
//! shared as it is in practice), compressed by `[compression.outer]` when given. (The inner
//! step's own collectives are priced group by group, as everywhere in training: groups of other
//! stages running at once are not seen, which makes a synchronous step across a WAN optimistic.) Per step, a round costs
//! `inner + outer / H` when the outer synchronisation blocks (DiLoCo), and
//! `inner + max(0, outer - H x inner) / H` when it runs beside the next round and is applied one
//! round late (DiLoCoX's one-step-delayed overlap). Deliberately ignored: the outer optimizer's
//! own arithmetic (one elementwise pass over the weights per round), and how many more steps
//! local SGD needs to reach the same loss, which is the algorithm's side of the trade.

use super::comm::Comm;
use super::setup::TrainingConfig;
use crate::collective::CollectiveOp;
use serde_json::{Value, json};

/// Bytes per parameter of the pseudo-gradient the sites exchange (fp32).
const OUTER_BYTES_PER_PARAM: f64 = 4.0;

/// One round of local SGD, seconds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Round {
    pub inner_step_s: f64,
    pub outer_sync_s: f64,
    /// Per step, the outer synchronisation included.
    pub step_s: f64,
}

/// The round of `s` whose inner step takes `inner` seconds; None without local SGD.
pub fn round(s: &TrainingConfig, inner: f64) -> Option<Round> {
    if s.local_steps < 2 {
        return None;
    }
    // Every GPU of a site synchronises its slice at once: the other GPUs' groups (shifted by
    // their tensor, context, pipeline and in-site data-parallel offsets) share the links.
    let st = s.stride;
    let mut offsets = Vec::new();
    for t in 0..s.tp {
        for c in 0..s.cp {
            for p in 0..s.pp {
                for d in 0..s.site_replicas() {
                    let o = t * st.tp + c * st.cp + p * st.pp + d * st.dp;
                    if o > 0 {
                        offsets.push(o);
                    }
                }
            }
        }
    }
    let bytes = (0..s.pp).map(|p| s.stage_params(p)).fold(0.0, f64::max)
        / s.gradient_ranks() as f64
        * OUTER_BYTES_PER_PARAM;
    let outer = s
        .collective_cost(
            0,
            Comm::Outer,
            CollectiveOp::AllReduce,
            bytes,
            s.tier,
            &offsets,
            false,
        )
        .seconds;
    let h = s.local_steps as f64;
    let exposed = if s.outer_overlap {
        (outer - h * inner).max(0.0)
    } else {
        outer
    };
    Some(Round {
        inner_step_s: inner,
        outer_sync_s: outer,
        step_s: inner + exposed / h,
    })
}

/// The report's `local_sgd` section.
pub fn report(s: &TrainingConfig, r: &Round) -> Value {
    json!({
        "sites": s.sites,
        "local_steps": s.local_steps,
        "outer_overlap": s.outer_overlap,
        "inner_step_s": r.inner_step_s,
        "outer_sync_s": r.outer_sync_s,
        "outer_sync_exposed_per_step_s": r.step_s - r.inner_step_s,
        "replicas_per_site": s.site_replicas(),
    })
}
