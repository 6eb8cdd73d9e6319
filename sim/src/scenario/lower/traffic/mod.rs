//! `[workload]` lowered to the requests a serving fleet (or a video queue) receives: when each arrives and how long its
//! prompt and output are. Arrivals, prompt lengths and output lengths each draw from their own
//! named stream ("arrivals", "prompt-lengths", "output-lengths"), so changing one distribution
//! never moves the others' draws. Errors carry the dotted scenario key at fault (`workload.rate`).

mod arrivals;
mod fields;
mod lengths;
mod trace_file;

use crate::engine::{RngStreams, SimTime};
use crate::scenario::serving::{ArrivalKind, WorkloadSection};
use std::path::{Path, PathBuf};
use trace_file::from_trace;

pub use crate::workload::serving::request::{MAX_REQUESTS, Request};

pub use crate::key_error::KeyError as TrafficError;

type Result<T> = std::result::Result<T, TrafficError>;

/// The requests of `[workload]`, in order of arrival.
///
/// `base_dir` is the scenario file's folder: relative `trace` and length `file` paths are read from
/// there (from the working directory when `None`). [`generate_with_notes`] also says what was
/// ignored or adjusted on the way.
pub fn generate(w: &WorkloadSection, seed: u64, base_dir: Option<&Path>) -> Result<Vec<Request>> {
    generate_with_notes(w, seed, base_dir).map(|(requests, _)| requests)
}

/// [`generate`], with notes in words for the report: keys that were given but had no effect,
/// lengths a trace overrode, zero lengths raised to one, a trace replayed sorted.
pub fn generate_with_notes(
    w: &WorkloadSection,
    seed: u64,
    base_dir: Option<&Path>,
) -> Result<(Vec<Request>, Vec<String>)> {
    let mut notes = Vec::new();
    let streams = RngStreams::new(seed);
    let Some(kind) = w.arrival else {
        return Err(TrafficError::new(
            "workload.arrival",
            "[workload] needs `arrival`: how requests arrive",
        )
        .with_help(
            "arrival = \"offline\" (all at time 0), \"poisson\" (with rate), \
             \"gamma\" (with rate and cv), \"piecewise\" (with schedule) or \"trace\" (with \
             trace = \"file.csv\")",
        ));
    };
    if let Some(0) = w.requests {
        return Err(TrafficError::new(
            "workload.requests",
            "requests must be at least 1",
        ));
    }
    if let Some(n) = w.requests
        && n > MAX_REQUESTS
    {
        return Err(TrafficError::new(
            "workload.requests",
            format!("{n} requests; each is simulated, at most {MAX_REQUESTS}"),
        )
        .with_help("about 4 KB of state and 60 microseconds of simulation a request"));
    }
    if kind != ArrivalKind::Trace && w.trace.is_some() {
        notes.push(format!(
            "workload.trace is ignored: arrival = \"{}\" does not replay a trace",
            kind_name(kind)
        ));
    }

    if kind != ArrivalKind::Piecewise && w.schedule.is_some() {
        notes.push(format!(
            "workload.schedule is ignored: arrival = \"{}\" has no rate schedule",
            kind_name(kind)
        ));
    }

    if kind == ArrivalKind::Trace {
        return from_trace(w, &streams, base_dir, notes);
    }

    let n = w.requests.ok_or_else(|| {
        TrafficError::new(
            "workload.requests",
            "[workload] needs `requests`: how many to send",
        )
        .with_help("e.g. requests = 1000")
    })?;
    let arrivals = arrivals::from_section(w, kind, &mut notes)?;
    let prompt = lengths::required(
        w.prompt_tokens.as_ref(),
        "prompt_tokens",
        base_dir,
        &mut notes,
    )?;
    let output = lengths::required(
        w.output_tokens.as_ref(),
        "output_tokens",
        base_dir,
        &mut notes,
    )?;

    let mut arrival_rng = streams.stream("arrivals");
    let mut prompt_rng = streams.stream("prompt-lengths");
    let mut output_rng = streams.stream("output-lengths");
    let mut requests = Vec::with_capacity(n.min(1 << 20) as usize);
    let mut now = arrivals.first(&mut arrival_rng);
    for id in 0..n {
        if id > 0 {
            let gap = arrivals.gap(now, &mut arrival_rng);
            if gap.as_ps() > SimTime::MAX.as_ps() - now.as_ps() {
                return Err(TrafficError::new(
                    "workload.rate",
                    format!(
                        "{n} requests at this rate arrive over more than {}, beyond the \
                         simulated clock",
                        SimTime::MAX
                    ),
                )
                .with_help("raise the rate or send fewer requests"));
            }
            now += gap;
        }
        requests.push(Request {
            id,
            arrival: now,
            prompt_tokens: prompt.sample(&mut prompt_rng),
            output_tokens: output.sample(&mut output_rng),
        });
    }
    Ok((requests, notes))
}

fn kind_name(kind: ArrivalKind) -> &'static str {
    match kind {
        ArrivalKind::Offline => "offline",
        ArrivalKind::Poisson => "poisson",
        ArrivalKind::Gamma => "gamma",
        ArrivalKind::Trace => "trace",
        ArrivalKind::Piecewise => "piecewise",
    }
}

fn resolve(file: &str, base_dir: Option<&Path>) -> PathBuf {
    match base_dir {
        Some(dir) => dir.join(file),
        None => PathBuf::from(file),
    }
}
