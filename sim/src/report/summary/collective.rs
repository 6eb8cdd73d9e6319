//! The summary of a collective run: time, bandwidths, the links it used; read from the typed
//! report (`report::collective`), so a key it lacks is an error, not a blank.

use super::*;
use crate::report::collective::CollectiveReport;

/// The summary of a collective scenario; `r` is its JSON, for the sections kept untyped.
pub(super) fn render_collective(c: &CollectiveReport, r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  [collective]", c.scenario);
    row(
        &mut out,
        "operation",
        format!(
            "{} of {} B over {} of {} x {} ({})",
            c.op,
            c.size_bytes,
            c.ranks,
            c.cluster.gpus,
            c.cluster.gpu,
            nodes_of(r)
        ),
    );
    row(
        &mut out,
        "time",
        format!(
            "{}{} ({}, {}): algbw {:.2} GB/s, busbw {:.2} GB/s{}",
            seconds(c.time_s),
            band(r, "time_s", seconds),
            c.algorithm,
            c.protocol,
            c.algbw_gbps,
            c.busbw_gbps,
            band(r, "busbw_GBps", |x| format!("{x:.2}"))
        ),
    );
    if let Some(u) = &c.uncompressed {
        let ratio = c.compression.as_ref().and_then(|z| z["ratio"].as_f64());
        row(
            &mut out,
            "uncompressed",
            format!(
                "{} ({}): compression {:.2}x faster at ratio {}",
                seconds(u.time_s),
                u.algorithm,
                c.speedup.unwrap_or(f64::NAN),
                ratio.unwrap_or(f64::NAN)
            ),
        );
    }
    row(
        &mut out,
        "fidelity",
        format!("network {} on {}", c.fidelity.network, c.fidelity.topology),
    );
    assumption_rows(&mut out, r);
    out
}
