//! `[workload]`'s arrival keys lowered to the process that draws arrivals (`stats::arrivals`): all
//! at once (`offline`), Poisson, gamma renewal gaps with a chosen burstiness (`cv`; vLLM's
//! `--burstiness` is `1/cv^2`), or a Poisson process whose rate steps over time (`piecewise`,
//! e.g. a daily peak).

use super::{Result, TrafficError, kind_name};
use crate::scenario::serving::{ArrivalKind, WorkloadSection};
use crate::stats::arrivals::Arrivals;

/// The arrival process of `kind`, its keys in `w` checked (notes for those it ignores).
pub(super) fn from_section(
    w: &WorkloadSection,
    kind: ArrivalKind,
    notes: &mut Vec<String>,
) -> Result<Arrivals> {
    match kind {
        ArrivalKind::Offline => {
            if w.rate.is_some() {
                notes.push(
                    "workload.rate is ignored: arrival = \"offline\" sends every request at time 0"
                        .into(),
                );
            }
            if w.cv.is_some() {
                notes.push(
                    "workload.cv is ignored: arrival = \"offline\" sends every request at time 0"
                        .into(),
                );
            }
            Ok(Arrivals::Offline)
        }
        ArrivalKind::Poisson => {
            let rate = rate(w, kind)?;
            if w.cv.is_some() {
                notes.push(
                    "workload.cv is ignored: Poisson gaps have cv 1; use arrival = \"gamma\" \
                     for another cv"
                        .into(),
                );
            }
            Ok(Arrivals::Poisson { rate })
        }
        ArrivalKind::Gamma => gamma(w, rate(w, kind)?),
        ArrivalKind::Piecewise => piecewise(w, notes),
        ArrivalKind::Trace => unreachable!("traces are read by from_trace"),
    }
}

/// Gamma gaps of mean `1/rate` seconds and `workload.cv`'s burstiness.
fn gamma(w: &WorkloadSection, rate: f64) -> Result<Arrivals> {
    let cv = w.cv.ok_or_else(|| {
        TrafficError::new(
            "workload.cv",
            "arrival = \"gamma\" needs `cv`: the coefficient of variation of the gaps",
        )
        .with_help("cv = 1 is Poisson; above 1 is burstier, below 1 more regular")
    })?;
    if !(cv.is_finite() && cv > 0.0) {
        return Err(TrafficError::new(
            "workload.cv",
            format!("cv must be positive and finite, not {cv}"),
        )
        .with_help("cv = 1 is Poisson; above 1 is burstier, below 1 more regular"));
    }
    let shape = 1.0 / (cv * cv);
    if !(shape.is_finite() && shape > 0.0) {
        return Err(TrafficError::new(
            "workload.cv",
            format!("cv = {cv} is out of range"),
        ));
    }
    Ok(Arrivals::Gamma {
        shape,
        scale: 1.0 / rate / shape,
    })
}

/// A Poisson process whose rate steps as `workload.schedule` says: steps forward in time,
/// rates 0 or more, the last positive.
fn piecewise(w: &WorkloadSection, notes: &mut Vec<String>) -> Result<Arrivals> {
    let help = "e.g. schedule = [{ at = \"0 s\", rate = \"2/s\" }, \
                { at = \"10 min\", rate = \"8/s\" }]";
    let schedule = w
        .schedule
        .as_ref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            TrafficError::new(
                "workload.schedule",
                "arrival = \"piecewise\" needs `schedule`: rate steps over time",
            )
            .with_help(help)
        })?;
    if w.rate.is_some() {
        notes.push(
            "workload.rate is ignored: arrival = \"piecewise\" takes its rates from \
             schedule"
                .into(),
        );
    }
    let mut steps = Vec::with_capacity(schedule.len());
    for (i, step) in schedule.iter().enumerate() {
        let (at, rate) = (step.at.0.as_secs_f64(), step.rate.0);
        if !(rate.is_finite() && rate >= 0.0) {
            return Err(TrafficError::new(
                "workload.schedule",
                format!("step {} has rate {rate}/s: rates are 0 or more", i + 1),
            ));
        }
        if let Some(&(before, _)) = steps.last()
            && at <= before
        {
            return Err(TrafficError::new(
                "workload.schedule",
                format!(
                    "step {} starts at {} s, not after step {} ({before} s): steps \
                     go forward in time",
                    i + 1,
                    at,
                    i
                ),
            )
            .with_help(help));
        }
        steps.push((at, rate));
    }
    if steps.last().is_some_and(|&(_, r)| r == 0.0) {
        return Err(TrafficError::new(
            "workload.schedule",
            "the last step has rate 0/s: the requests would never all arrive",
        )
        .with_help("end the schedule with a positive rate"));
    }
    Ok(Arrivals::Piecewise { steps })
}

/// `workload.rate`, which arrival process `kind` needs: positive and finite.
fn rate(w: &WorkloadSection, kind: ArrivalKind) -> Result<f64> {
    let rate = w.rate.as_ref().map(|r| r.0).ok_or_else(|| {
        TrafficError::new(
            "workload.rate",
            format!(
                "arrival = \"{}\" needs `rate`: mean requests per second",
                kind_name(kind)
            ),
        )
        .with_help("e.g. rate = \"5/s\"")
    })?;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(TrafficError::new(
            "workload.rate",
            format!("rate must be positive and finite, not {rate}/s"),
        )
        .with_help("for every request at time 0, use arrival = \"offline\""));
    }
    Ok(rate)
}
