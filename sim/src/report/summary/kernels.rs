//! The summary of a kernels run: the work as many tiny launches and as fewer consolidated ones;
//! read from the typed report (`report::kernels`).

use super::*;
use crate::report::kernels::{KernelsReport, Launched};

/// The summary of a kernels scenario; `r` is its JSON, for the sections kept untyped.
pub(super) fn render_kernels(k: &KernelsReport, r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  [kernels]", k.scenario);
    row(
        &mut out,
        "GPU",
        format!(
            "{} ({} multiprocessors)",
            k.cluster.gpu, k.cluster.multiprocessors
        ),
    );
    let version = |l: &Launched| {
        format!(
            "{} in {} launches ({:.0}% of it launching, each on {:.1}% of the multiprocessors)",
            seconds(l.time_s),
            l.launches,
            100.0 * l.launch_overhead_share,
            100.0 * l.sm_share
        )
    };
    row(
        &mut out,
        "one per child",
        format!("{} children: {}", k.children, version(&k.unconsolidated)),
    );
    let own = Launched {
        time_s: k.time_s,
        launches: k.launches,
        launch_overhead_s: k.launch_overhead_s,
        launch_overhead_share: k.launch_overhead_share,
        sm_share: k.sm_share,
    };
    row(
        &mut out,
        "consolidated",
        format!("{} per launch: {}", k.consolidate, version(&own)),
    );
    row(&mut out, "speed-up", format!("{:.1}x", k.speedup));
    row(
        &mut out,
        "fidelity",
        format!("compute {}; {}", k.fidelity.compute, k.fidelity.symmetry),
    );
    assumption_rows(&mut out, r);
    out
}
