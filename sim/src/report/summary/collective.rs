//! The summary of a collective run: time, bandwidths, the links it used.

use super::*;

/// The summary of a collective scenario.
pub(super) fn render_collective(r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  [collective]",
        r["scenario"].as_str().unwrap_or("scenario")
    );
    row(
        &mut out,
        "operation",
        format!(
            "{} of {} B over {} of {} x {} ({})",
            r["op"].as_str().unwrap_or("?"),
            num(r, "size_bytes"),
            num(r, "ranks"),
            num(r, "cluster.gpus"),
            r["cluster"]["gpu"].as_str().unwrap_or("?"),
            nodes_of(r)
        ),
    );
    row(
        &mut out,
        "time",
        format!(
            "{}{} ({}, {}): algbw {:.2} GB/s, busbw {:.2} GB/s{}",
            seconds(num(r, "time_s")),
            band(r, "time_s", seconds),
            r["algorithm"].as_str().unwrap_or("?"),
            r["protocol"].as_str().unwrap_or("?"),
            num(r, "algbw_GBps"),
            num(r, "busbw_GBps"),
            band(r, "busbw_GBps", |x| format!("{x:.2}"))
        ),
    );
    if r["uncompressed"].is_object() {
        row(
            &mut out,
            "uncompressed",
            format!(
                "{} ({}): compression {:.2}x faster at ratio {}",
                seconds(num(r, "uncompressed.time_s")),
                r["uncompressed"]["algorithm"].as_str().unwrap_or("?"),
                num(r, "speedup"),
                num(r, "compression.ratio")
            ),
        );
    }
    row(
        &mut out,
        "fidelity",
        format!(
            "network {} on {}",
            r["fidelity"]["network"].as_str().unwrap_or("?"),
            r["fidelity"]["topology"].as_str().unwrap_or("?")
        ),
    );
    assumption_rows(&mut out, r);
    out
}
