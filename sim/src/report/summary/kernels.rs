//! The summary of a kernels run: the work as many tiny launches and as fewer consolidated ones.

use super::*;

/// The summary of a kernels scenario.
pub(super) fn render_kernels(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [kernels]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    row(
        &mut out,
        "GPU",
        format!(
            "{} ({} multiprocessors)",
            r["cluster"]["gpu"].as_str().unwrap_or("?"),
            num(r, "cluster.multiprocessors")
        ),
    );
    let version = |prefix: &str| {
        format!(
            "{} in {} launches ({:.0}% of it launching, each on {:.1}% of the multiprocessors)",
            seconds(num(r, &format!("{prefix}time_s"))),
            num(r, &format!("{prefix}launches")),
            100.0 * num(r, &format!("{prefix}launch_overhead_share")),
            100.0 * num(r, &format!("{prefix}sm_share"))
        )
    };
    row(
        &mut out,
        "one per child",
        format!(
            "{} children: {}",
            num(r, "children"),
            version("unconsolidated.")
        ),
    );
    row(
        &mut out,
        "consolidated",
        format!("{} per launch: {}", num(r, "consolidate"), version("")),
    );
    row(&mut out, "speed-up", format!("{:.1}x", num(r, "speedup")));
    row(
        &mut out,
        "fidelity",
        format!(
            "compute {}; {}",
            r["fidelity"]["compute"].as_str().unwrap_or("?"),
            r["fidelity"]["symmetry"].as_str().unwrap_or("?")
        ),
    );
    assumption_rows(&mut out, r);
    out
}
