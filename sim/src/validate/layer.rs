//! Per-layer micro-benchmarks: a training case run as one micro-batch, and a middle layer's
//! forward and backward read from the simulated timeline.

use super::prose::number;
use super::training::build_and_run;
use super::{Case, Row, RowFn, Status, with_report_notes};
use crate::report::training::TrainingReport;
use crate::report::typed::TypedReport;

pub(super) fn layer_rows(c: &Case, file_name: &str, row: &RowFn) -> Vec<Row> {
    let (built, output) = match build_and_run(c, file_name, true, row) {
        Ok(run) => run,
        Err(r) => return vec![*r],
    };
    let t = TrainingReport::from_value(&output.report).ok();
    let layers = t.as_ref().map_or(0, |t| t.model.layers);
    if layers < 3 || t.as_ref().is_none_or(|t| t.parallel.pp != 1) {
        let mut r = row(
            Status::Failed(
                "a layer's time is read only without pipeline parallelism and with 3 layers or more"
                    .into(),
            ),
            None,
            built.assumptions.clone(),
        );
        r.scenario = Some(built.toml);
        return vec![r];
    }
    let layer = layers / 2;
    let mut assumptions = built.assumptions.clone();
    assumptions.push(format!(
        "layer time read from the simulated timeline: layer {layer} of {layers}, from the start \
         of its forward (backward) to the start of the next layer's, tensor-parallel collectives \
         included"
    ));
    let assumptions = with_report_notes(assumptions, &output.report);
    let fits = t.map(|t| t.memory.fits);
    let regime = crate::uncertainty::regime::of_report(&output.report);
    let Some((forward, backward)) = output.layer_times(layer) else {
        let mut r = row(
            Status::Failed("the timeline has no per-layer operations to read".into()),
            None,
            assumptions,
        );
        r.scenario = Some(built.toml);
        return vec![r];
    };
    let mut rows = vec![row(
        Status::Compared,
        Some(1e3 * (forward + backward)),
        assumptions.clone(),
    )];
    rows[0].scenario = Some(built.toml.clone());
    rows[0].fits = fits;
    rows[0].regime = regime.clone();
    for (key, value, short) in [
        ("forward_ms", forward, "layer fwd ms"),
        ("backward_ms", backward, "layer bwd ms"),
    ] {
        if let Some(measured) = number(c.get("extra_metrics", key)) {
            let mut r = row(Status::Compared, Some(1e3 * value), assumptions.clone());
            r.metric = format!("{short} (extra_metrics.{key})");
            r.short = short.into();
            r.measured = measured;
            r.primary = false;
            r.fits = fits;
            r.regime = regime.clone();
            rows.push(r);
        }
    }
    rows
}
