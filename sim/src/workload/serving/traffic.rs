//! The requests a serving fleet receives: when each arrives and how long its prompt and output are.
//!
//! From `[workload]`: arrivals all at once (`offline`), as a Poisson process, as a gamma renewal
//! process with a chosen burstiness (`cv`; vLLM's `--burstiness` is `1/cv^2`), as a Poisson
//! process whose rate steps over time (`piecewise`, e.g. a daily peak), or replayed from a CSV
//! trace (the public Azure / Splitwise LLM inference traces read as they are). Lengths are fixed,
//! uniform, lognormal or drawn from a file of observed lengths, unless the trace gives them.
//!
//! Determinism: arrivals, prompt lengths and output lengths each draw from their own named stream
//! ("arrivals", "prompt-lengths", "output-lengths"), so changing one distribution never moves the
//! others' draws. The logarithm and exponential used by the samplers are computed here with basic
//! IEEE arithmetic only (fdlibm's algorithms), not the platform's math library, so the same
//! scenario and seed give the same requests, to the picosecond and token, on every machine.
//!
//! Errors carry the dotted scenario key at fault (`workload.rate`) for `Scenario::error_at`.

use crate::engine::{RngStreams, SimTime};
use crate::scenario::serving::{
    ArrivalKind, DistributionKind, LengthDistribution, LengthSpec, WorkloadSection,
};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// One request: it arrives, brings `prompt_tokens` to prefill, and wants `output_tokens` decoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// 0, 1, 2, ... in order of arrival.
    pub id: u32,
    pub arrival: SimTime,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
}

pub use crate::scenario::error::KeyError as TrafficError;

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
    let arrivals = Arrivals::from_section(w, kind, &mut notes)?;
    let prompt = Lengths::required(
        w.prompt_tokens.as_ref(),
        "prompt_tokens",
        base_dir,
        &mut notes,
    )?;
    let output = Lengths::required(
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

// ---------------------------------------------------------------------------------------------
// Arrivals

#[derive(Clone, Debug)]
enum Arrivals {
    Offline,
    /// Exponential gaps with mean `1/rate` seconds.
    Poisson {
        rate: f64,
    },
    /// Gamma gaps: shape `k = 1/cv^2`, scale `(1/rate)/k` seconds.
    Gamma {
        shape: f64,
        scale: f64,
    },
    /// A Poisson process whose rate is `steps[i].1` per second from `steps[i].0` seconds on
    /// (times increasing; the last rate positive).
    Piecewise {
        steps: Vec<(f64, f64)>,
    },
}

impl Arrivals {
    fn from_section(
        w: &WorkloadSection,
        kind: ArrivalKind,
        notes: &mut Vec<String>,
    ) -> Result<Self> {
        let rate = || -> Result<f64> {
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
        };
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
                let rate = rate()?;
                if w.cv.is_some() {
                    notes.push(
                        "workload.cv is ignored: Poisson gaps have cv 1; use arrival = \"gamma\" \
                         for another cv"
                            .into(),
                    );
                }
                Ok(Arrivals::Poisson { rate })
            }
            ArrivalKind::Gamma => {
                let rate = rate()?;
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
            ArrivalKind::Piecewise => {
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
            ArrivalKind::Trace => unreachable!("traces are read by from_trace"),
        }
    }

    /// When the first request arrives: time 0 (the other processes start with an arrival), or
    /// with a piecewise rate the schedule's first arrival, drawn from time 0.
    fn first(&self, rng: &mut ChaCha8Rng) -> SimTime {
        match self {
            Arrivals::Piecewise { steps } => SimTime::from_secs_f64(piecewise_gap(steps, 0.0, rng)),
            _ => SimTime::ZERO,
        }
    }

    /// Time from `now` to the next arrival.
    fn gap(&self, now: SimTime, rng: &mut ChaCha8Rng) -> SimTime {
        let secs = match self {
            Arrivals::Offline => 0.0,
            Arrivals::Poisson { rate } => exponential(rng) / rate,
            Arrivals::Gamma { shape, scale } => gamma(rng, *shape) * scale,
            Arrivals::Piecewise { steps } => piecewise_gap(steps, now.as_secs_f64(), rng),
        };
        SimTime::from_secs_f64(secs)
    }
}

/// Seconds from `now` to the next arrival of a Poisson process with a piecewise-constant rate:
/// one unit-rate exponential draw spent against the integrated rate, step by step (the time
/// change of a non-homogeneous Poisson process), so a quiet step (rate 0) is skipped and each
/// arrival costs exactly one draw.
fn piecewise_gap(steps: &[(f64, f64)], now: f64, rng: &mut ChaCha8Rng) -> f64 {
    let mut left = exponential(rng);
    let mut t = now.max(steps[0].0);
    let mut i = steps.partition_point(|&(at, _)| at <= t).saturating_sub(1);
    loop {
        let rate = steps[i].1;
        match steps.get(i + 1) {
            Some(&(next, _)) => {
                let room = (next - t) * rate;
                if rate > 0.0 && left < room {
                    return t + left / rate - now;
                }
                left -= room;
                t = next;
                i += 1;
            }
            None => return t + left / rate - now,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lengths

#[derive(Clone, Debug)]
enum Lengths {
    Fixed(u32),
    /// Inclusive.
    Uniform {
        min: u32,
        max: u32,
    },
    /// `exp(N(mu, sigma))`, rounded and clamped to `[lo, hi]`.
    Lognormal {
        mu: f64,
        sigma: f64,
        lo: u32,
        hi: u32,
    },
    /// Drawn uniformly from the observed values (already clamped).
    Empirical(Vec<u32>),
}

impl Lengths {
    fn required(
        spec: Option<&LengthSpec>,
        key: &str,
        base_dir: Option<&Path>,
        notes: &mut Vec<String>,
    ) -> Result<Self> {
        let path = format!("workload.{key}");
        let Some(spec) = spec else {
            return Err(TrafficError::new(
                path,
                format!("[workload] needs `{key}`: a token count or a distribution"),
            )
            .with_help(format!(
                "e.g. {key} = 512, or {key} = {{ dist = \"lognormal\", mean = 512, sigma = 0.8 }}"
            )));
        };
        Lengths::from_spec(spec, &path, base_dir, notes)
    }

    fn from_spec(
        spec: &LengthSpec,
        path: &str,
        base_dir: Option<&Path>,
        notes: &mut Vec<String>,
    ) -> Result<Self> {
        let d = match spec {
            LengthSpec::Fixed(0) => {
                return Err(TrafficError::new(path, "a length must be at least 1 token"));
            }
            LengthSpec::Fixed(n) => return Ok(Lengths::Fixed(*n)),
            LengthSpec::Distribution(d) => d,
        };
        let ignored = |key: &str, given: bool, notes: &mut Vec<String>| {
            if given {
                notes.push(format!(
                    "{path}.{key} is ignored by dist = \"{}\"",
                    dist_name(d.dist)
                ));
            }
        };
        if let (Some(min), Some(max)) = (d.min, d.max)
            && min > max
        {
            return Err(TrafficError::new(
                format!("{path}.min"),
                format!("min ({min}) is above max ({max})"),
            ));
        }
        if d.max == Some(0) {
            return Err(TrafficError::new(
                format!("{path}.max"),
                "max must be at least 1 token",
            ));
        }
        match d.dist {
            DistributionKind::Uniform => {
                ignored("mean", d.mean.is_some(), notes);
                ignored("sigma", d.sigma.is_some(), notes);
                ignored("file", d.file.is_some(), notes);
                let need = |v: Option<u32>, key: &str| {
                    v.ok_or_else(|| {
                        TrafficError::new(
                            format!("{path}.{key}"),
                            format!("dist = \"uniform\" needs `{key}`"),
                        )
                        .with_help("e.g. { dist = \"uniform\", min = 128, max = 1024 } (inclusive)")
                    })
                };
                let min = need(d.min, "min")?;
                let max = need(d.max, "max")?;
                if min == 0 {
                    return Err(TrafficError::new(
                        format!("{path}.min"),
                        "min must be at least 1 token",
                    ));
                }
                Ok(Lengths::Uniform { min, max })
            }
            DistributionKind::Lognormal => {
                ignored("file", d.file.is_some(), notes);
                let mean = d.mean.ok_or_else(|| {
                    TrafficError::new(
                        format!("{path}.mean"),
                        "dist = \"lognormal\" needs `mean`: the mean length in tokens",
                    )
                    .with_help("e.g. { dist = \"lognormal\", mean = 512, sigma = 0.8 }")
                })?;
                if !(mean.is_finite() && mean > 0.0) {
                    return Err(TrafficError::new(
                        format!("{path}.mean"),
                        format!("mean must be positive and finite, not {mean}"),
                    ));
                }
                let sigma = d.sigma.ok_or_else(|| {
                    TrafficError::new(
                        format!("{path}.sigma"),
                        "dist = \"lognormal\" needs `sigma`: the standard deviation of the \
                         length's logarithm",
                    )
                    .with_help("0.5 to 1.5 is typical of chat traces; 0 gives `mean` every time")
                })?;
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err(TrafficError::new(
                        format!("{path}.sigma"),
                        format!("sigma must be non-negative and finite, not {sigma}"),
                    ));
                }
                let (lo, hi) = clamps(d);
                Ok(Lengths::Lognormal {
                    mu: ln(mean) - sigma * sigma / 2.0,
                    sigma,
                    lo,
                    hi,
                })
            }
            DistributionKind::Empirical => {
                ignored("mean", d.mean.is_some(), notes);
                ignored("sigma", d.sigma.is_some(), notes);
                let file = d.file.as_deref().ok_or_else(|| {
                    TrafficError::new(
                        format!("{path}.file"),
                        "dist = \"empirical\" needs `file`: one length per line",
                    )
                    .with_help("e.g. { dist = \"empirical\", file = \"prompt-lengths.txt\" }")
                })?;
                let values = read_lengths(file, &format!("{path}.file"), base_dir, notes)?;
                let (lo, hi) = clamps(d);
                Ok(Lengths::Empirical(
                    values.into_iter().map(|v| v.clamp(lo, hi)).collect(),
                ))
            }
        }
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        match self {
            Lengths::Fixed(n) => *n,
            Lengths::Uniform { min, max } => rng.random_range(*min..=*max),
            Lengths::Lognormal { mu, sigma, lo, hi } => {
                let v = exp(mu + sigma * normal(rng)).round();
                v.clamp(*lo as f64, *hi as f64) as u32
            }
            Lengths::Empirical(values) => values[rng.random_range(0..values.len() as u64) as usize],
        }
    }
}

fn dist_name(d: DistributionKind) -> &'static str {
    match d {
        DistributionKind::Uniform => "uniform",
        DistributionKind::Lognormal => "lognormal",
        DistributionKind::Empirical => "empirical",
    }
}

/// `[max(1, min), max]` (`max` defaulting to no limit).
fn clamps(d: &LengthDistribution) -> (u32, u32) {
    (d.min.unwrap_or(1).max(1), d.max.unwrap_or(u32::MAX))
}

fn resolve(file: &str, base_dir: Option<&Path>) -> PathBuf {
    match base_dir {
        Some(dir) => dir.join(file),
        None => PathBuf::from(file),
    }
}

/// One whole number per line; blank lines and `#` comments skipped; zeros raised to 1 with a note.
fn read_lengths(
    file: &str,
    key: &str,
    base_dir: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<Vec<u32>> {
    let full = resolve(file, base_dir);
    let reader = File::open(&full)
        .map(BufReader::new)
        .map_err(|e| TrafficError::new(key, format!("cannot read {}: {e}", full.display())))?;
    let mut values = Vec::new();
    let mut zeros = 0u64;
    for (i, line) in reader.lines().enumerate() {
        let lineno = i + 1;
        let line = line.map_err(|e| {
            TrafficError::new(key, format!("cannot read {file} line {lineno}: {e}"))
        })?;
        let text = line.trim().trim_start_matches('\u{feff}');
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let v = parse_count(text).ok_or_else(|| {
            TrafficError::new(
                key,
                format!("{file} line {lineno}: `{text}` is not a token count"),
            )
            .with_help("the file holds one whole number per line, with no header")
        })?;
        if v == 0 {
            zeros += 1;
        }
        values.push(v.max(1));
    }
    if values.is_empty() {
        return Err(
            TrafficError::new(key, format!("{file} has no lengths in it"))
                .with_help("the file holds one whole number per line"),
        );
    }
    if zeros > 0 {
        notes.push(format!("{file}: {zeros} zero length(s) raised to 1 token"));
    }
    Ok(values)
}

/// A whole number of tokens: `42`, or `42.0` as some tools write it.
fn parse_count(text: &str) -> Option<u32> {
    if let Ok(v) = text.parse::<u32>() {
        return Some(v);
    }
    let f = text.parse::<f64>().ok()?;
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64).then_some(f as u32)
}

// ---------------------------------------------------------------------------------------------
// Traces

#[derive(Copy, Clone, PartialEq, Eq)]
enum Column {
    Time,
    Prompt,
    Output,
}

/// The most requests a workload sends: each is simulated, with its own state (about 4 KB of it
/// and 60 us of simulation a request on the development machine, 70B on four H100).
pub const MAX_REQUESTS: u32 = 1_000_000;

const TIME_NAMES: &[&str] = &["TIMESTAMP", "arrival_s", "arrival", "arrival_time"];
const PROMPT_NAMES: &[&str] = &[
    "ContextTokens",
    "prompt_tokens",
    "input_tokens",
    "context_tokens",
];
const OUTPUT_NAMES: &[&str] = &["GeneratedTokens", "output_tokens", "generated_tokens"];

fn column_of(name: &str) -> Option<Column> {
    let is = |names: &[&str]| names.iter().any(|n| n.eq_ignore_ascii_case(name));
    if is(TIME_NAMES) {
        Some(Column::Time)
    } else if is(PROMPT_NAMES) {
        Some(Column::Prompt)
    } else if is(OUTPUT_NAMES) {
        Some(Column::Output)
    } else {
        None
    }
}

fn from_trace(
    w: &WorkloadSection,
    streams: &RngStreams,
    base_dir: Option<&Path>,
    mut notes: Vec<String>,
) -> Result<(Vec<Request>, Vec<String>)> {
    const KEY: &str = "workload.trace";
    let file = w.trace.as_deref().ok_or_else(|| {
        TrafficError::new(
            KEY,
            "arrival = \"trace\" needs `trace`: the CSV file to replay",
        )
        .with_help(
            "a CSV with a header: TIMESTAMP,ContextTokens,GeneratedTokens (Azure LLM \
                 inference traces) or arrival_s,prompt_tokens,output_tokens",
        )
    })?;
    for (key, given) in [("rate", w.rate.is_some()), ("cv", w.cv.is_some())] {
        if given {
            notes.push(format!(
                "workload.{key} is ignored: arrival = \"trace\" replays the trace's times"
            ));
        }
    }
    let full = resolve(file, base_dir);
    let reader = File::open(&full)
        .map(BufReader::new)
        .map_err(|e| TrafficError::new(KEY, format!("cannot read {}: {e}", full.display())))?;
    let mut lines = reader.lines().enumerate().map(|(i, line)| {
        line.map(|l| (i + 1, l))
            .map_err(|e| TrafficError::new(KEY, format!("cannot read {file} line {}: {e}", i + 1)))
    });

    // The header: the first non-blank line.
    let (header_line, header) = loop {
        match lines.next().transpose()? {
            None => {
                return Err(TrafficError::new(KEY, format!("{file} is empty"))
                    .with_help("a trace starts with a header line naming its columns"));
            }
            Some((n, l)) if !l.trim().is_empty() => break (n, l),
            Some(_) => {}
        }
    };
    let names = split_csv(header.trim_start_matches('\u{feff}'));
    let mut index: [Option<usize>; 3] = [None; 3];
    for (i, name) in names.iter().enumerate() {
        if let Some(col) = column_of(name) {
            let slot = &mut index[col as usize];
            if let Some(prev) = *slot {
                return Err(TrafficError::new(
                    KEY,
                    format!(
                        "{file} line {header_line}: columns `{}` and `{name}` both name the same \
                         field",
                        names[prev]
                    ),
                )
                .with_help("keep one of them"));
            }
            *slot = Some(i);
        }
    }
    let Some(time_col) = index[Column::Time as usize] else {
        let looks_like_data = names.first().is_some_and(|n| parse_seconds_ps(n).is_some());
        let help = if looks_like_data {
            "the first line must be a header naming the columns, e.g. \
             arrival_s,prompt_tokens,output_tokens"
                .to_string()
        } else {
            format!("name the arrival column one of: {}", TIME_NAMES.join(", "))
        };
        return Err(TrafficError::new(
            KEY,
            format!(
                "{file} line {header_line}: no arrival-time column in the header ({})",
                names.join(",")
            ),
        )
        .with_help(help));
    };
    let prompt_col = index[Column::Prompt as usize];
    let output_col = index[Column::Output as usize];

    // Lengths the trace lacks come from the scenario; those it has override the scenario's.
    let mut lengths_from_scenario = |col: Option<usize>, key: &str| -> Result<Option<Lengths>> {
        let spec = match key {
            "prompt_tokens" => w.prompt_tokens.as_ref(),
            _ => w.output_tokens.as_ref(),
        };
        match col {
            Some(c) => {
                if spec.is_some() {
                    notes.push(format!(
                        "workload.{key} is ignored: the trace gives each request's length \
                         (column `{}`)",
                        names[c]
                    ));
                }
                Ok(None)
            }
            None => Lengths::required(spec, key, base_dir, &mut notes)
                .map(Some)
                .map_err(|e| match e.help {
                    None => e.with_help(format!("the trace has no {key} column")),
                    Some(_) => e,
                }),
        }
    };
    let prompt_dist = lengths_from_scenario(prompt_col, "prompt_tokens")?;
    let output_dist = lengths_from_scenario(output_col, "output_tokens")?;

    // The rows: (time in ps since some epoch, prompt, output), at most `requests` of them.
    let limit = w.requests.map(|n| n as usize).unwrap_or(usize::MAX);
    let mut rows: Vec<(i128, Option<u32>, Option<u32>)> = Vec::new();
    let mut zeros = 0u64;
    while rows.len() < limit {
        let Some((lineno, line)) = lines.next().transpose()? else {
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        let fields = split_csv(&line);
        let field = |c: usize| -> Result<&str> {
            fields.get(c).map(|s| s.as_str()).ok_or_else(|| {
                TrafficError::new(
                    KEY,
                    format!(
                        "{file} line {lineno}: {} field(s), but the header has {} (no `{}`)",
                        fields.len(),
                        names.len(),
                        names[c]
                    ),
                )
            })
        };
        let t = field(time_col)?;
        let time = parse_seconds_ps(t)
            .or_else(|| parse_datetime_ps(t))
            .ok_or_else(|| {
                TrafficError::new(
                    KEY,
                    format!(
                        "{file} line {lineno}: `{t}` in `{}` is not a time",
                        names[time_col]
                    ),
                )
                .with_help("seconds (12.5) or a date and time (2023-11-16 18:15:46.6805900)")
            })?;
        let mut count = |col: Option<usize>| -> Result<Option<u32>> {
            let Some(c) = col else { return Ok(None) };
            let s = field(c)?;
            let v = parse_count(s).ok_or_else(|| {
                TrafficError::new(
                    KEY,
                    format!(
                        "{file} line {lineno}: `{s}` in `{}` is not a token count",
                        names[c]
                    ),
                )
            })?;
            if v == 0 {
                zeros += 1;
            }
            Ok(Some(v.max(1)))
        };
        let prompt = count(prompt_col)?;
        let output = count(output_col)?;
        rows.push((time, prompt, output));
    }
    if rows.is_empty() {
        return Err(TrafficError::new(
            KEY,
            format!("{file} has a header but no requests"),
        ));
    }
    if let Some(n) = w.requests
        && rows.len() < n as usize
    {
        return Err(TrafficError::new(
            "workload.requests",
            format!(
                "requests = {n}, but {file} has only {} requests",
                rows.len()
            ),
        )
        .with_help("leave `requests` out to replay the whole trace"));
    }
    if zeros > 0 {
        notes.push(format!(
            "{file}: {zeros} zero token count(s) raised to 1 token"
        ));
    }
    if rows.windows(2).any(|p| p[1].0 < p[0].0) {
        rows.sort_by_key(|r| r.0); // stable: ties keep the file's order
        notes.push(format!(
            "{file}: rows are not in time order; replayed sorted by time"
        ));
    }
    let replayed = w.requests.map_or(rows.len(), |n| n as usize);
    if replayed > MAX_REQUESTS as usize {
        return Err(TrafficError::new(
            KEY,
            format!(
                "{file}: {replayed} requests to replay; each is simulated, at most {MAX_REQUESTS}"
            ),
        )
        .with_help(format!(
            "requests = {MAX_REQUESTS} replays the trace's first ones"
        )));
    }

    let start = rows[0].0;
    let mut prompt_rng = streams.stream("prompt-lengths");
    let mut output_rng = streams.stream("output-lengths");
    let mut requests = Vec::with_capacity(rows.len());
    for (id, (time, prompt, output)) in rows.into_iter().enumerate() {
        let offset = time - start;
        let arrival = u64::try_from(offset).map(SimTime::from_ps).map_err(|_| {
            TrafficError::new(
                KEY,
                format!("{file}: the trace spans more than {}", SimTime::MAX),
            )
        })?;
        let prompt_tokens = match (prompt, &prompt_dist) {
            (Some(v), _) => v,
            (None, Some(d)) => d.sample(&mut prompt_rng),
            (None, None) => unreachable!("a length comes from the trace or the scenario"),
        };
        let output_tokens = match (output, &output_dist) {
            (Some(v), _) => v,
            (None, Some(d)) => d.sample(&mut output_rng),
            (None, None) => unreachable!("a length comes from the trace or the scenario"),
        };
        requests.push(Request {
            id: id as u32,
            arrival,
            prompt_tokens,
            output_tokens,
        });
    }
    Ok((requests, notes))
}

/// One CSV line's fields, trimmed; double-quoted fields may hold commas and `""`.
fn split_csv(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

const PS_PER_S: i128 = 1_000_000_000_000;

/// Decimal seconds (`12.5`, `-3`, `1e3`) as picoseconds; exact for plain decimals.
fn parse_seconds_ps(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let ps = if plain(int) && plain(frac) && !(int.is_empty() && frac.is_empty()) {
        if int.len() > 24 {
            return None;
        }
        let whole: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        // Picoseconds: the first 12 fractional digits; further digits are below the clock.
        let mut frac_ps: i128 = 0;
        for i in 0..12 {
            let d = frac.as_bytes().get(i).map_or(0, |b| (b - b'0') as i128);
            frac_ps = frac_ps * 10 + d;
        }
        whole * PS_PER_S + frac_ps
    } else {
        let f: f64 = digits.parse().ok()?;
        if !(f.is_finite() && f < 1e20) || digits.starts_with(['+', '-']) {
            return None;
        }
        (f * 1e12).round() as i128
    };
    Some(if negative { -ps } else { ps })
}

/// `YYYY-MM-DD HH:MM:SS[.fraction][Z|±HH[:MM]]` (a `T` may stand for the space) as picoseconds
/// since 1970-01-01 UTC.
fn parse_datetime_ps(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    if b.len() < 19 || !text.is_ascii() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = &text[r];
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut frac_ps: i128 = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        for i in 0..12 {
            let d = r
                .as_bytes()
                .get(i)
                .filter(|_| i < n)
                .map_or(0, |c| (c - b'0') as i128);
            frac_ps = frac_ps * 10 + d;
        }
        rest = &r[n..];
    }
    let offset_s: i64 = match rest {
        "" | "Z" | "z" => 0,
        tz if tz.starts_with(['+', '-']) => {
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            let hm = tz[1..].replace(':', "");
            if !hm.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let (h, m) = match hm.len() {
                2 => (hm.parse::<i64>().ok()?, 0),
                4 => (hm[..2].parse::<i64>().ok()?, hm[2..].parse::<i64>().ok()?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(secs as i128 * PS_PER_S + frac_ps)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// ---------------------------------------------------------------------------------------------
// Samplers, from uniform draws only

/// Uniform on (0, 1].
pub(crate) fn open_unit(rng: &mut ChaCha8Rng) -> f64 {
    1.0 - rng.random::<f64>()
}

/// Exponential with mean 1, by inversion.
fn exponential(rng: &mut ChaCha8Rng) -> f64 {
    -ln(open_unit(rng))
}

/// Standard normal: Box-Muller in Marsaglia's polar form (no sine or cosine needed).
pub(crate) fn normal(rng: &mut ChaCha8Rng) -> f64 {
    loop {
        let u = 2.0 * rng.random::<f64>() - 1.0;
        let v = 2.0 * rng.random::<f64>() - 1.0;
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * ln(s) / s).sqrt();
        }
    }
}

/// Gamma with the given shape and scale 1 (mean `shape`): Marsaglia and Tsang (2000), with
/// `G(k) = G(k + 1) * U^(1/k)` for shapes below 1.
fn gamma(rng: &mut ChaCha8Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let g = gamma(rng, shape + 1.0);
        let u = open_unit(rng);
        return exp(ln(g) + ln(u) / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let (x, v) = loop {
            let x = normal(rng);
            let v = 1.0 + c * x;
            if v > 0.0 {
                break (x, v * v * v);
            }
        };
        let u = open_unit(rng);
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || ln(u) < 0.5 * x2 + d * (1.0 - v + ln(v)) {
            return d * v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ln and exp with basic IEEE arithmetic only (fdlibm's e_log.c and e_exp.c, error < 1 ulp), so
// the draws do not depend on the platform's math library.

const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);

fn hi_word(x: f64) -> i32 {
    (x.to_bits() >> 32) as i32
}

fn with_hi_word(x: f64, hi: i32) -> f64 {
    f64::from_bits(((hi as u32 as u64) << 32) | (x.to_bits() & 0xffff_ffff))
}

/// Natural logarithm.
pub(crate) fn ln(x: f64) -> f64 {
    const TWO54: f64 = f64::from_bits(0x4350_0000_0000_0000);
    const LG1: f64 = f64::from_bits(0x3fe5_5555_5555_5593);
    const LG2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04);
    const LG3: f64 = f64::from_bits(0x3fd2_4924_9422_9359);
    const LG4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af);
    const LG5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de);
    const LG6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f);
    const LG7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244);

    let mut x = x;
    let mut hx = hi_word(x);
    let lx = x.to_bits() as u32;
    let mut k: i32 = 0;
    if hx < 0x0010_0000 {
        if ((hx & 0x7fff_ffff) as u32 | lx) == 0 {
            return f64::NEG_INFINITY;
        }
        if hx < 0 {
            return f64::NAN;
        }
        // Subnormal: scale up.
        k -= 54;
        x *= TWO54;
        hx = hi_word(x);
    }
    if hx >= 0x7ff0_0000 {
        return x + x;
    }
    k += (hx >> 20) - 1023;
    hx &= 0x000f_ffff;
    let i = (hx + 0x95f64) & 0x10_0000;
    x = with_hi_word(x, hx | (i ^ 0x3ff0_0000)); // normalize x or x/2
    k += i >> 20;
    let f = x - 1.0;
    let dk = k as f64;
    if (0x000f_ffff & (2 + hx)) < 3 {
        // |f| < 2^-20
        if f == 0.0 {
            return dk * LN2_HI + dk * LN2_LO;
        }
        let r = f * f * (0.5 - 0.333_333_333_333_333_3 * f);
        return if k == 0 {
            f - r
        } else {
            dk * LN2_HI - ((r - dk * LN2_LO) - f)
        };
    }
    let s = f / (2.0 + f);
    let z = s * s;
    let mut i = hx - 0x6147a;
    let w = z * z;
    let j = 0x6b851 - hx;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    i |= j;
    let r = t2 + t1;
    if i > 0 {
        let hfsq = 0.5 * f * f;
        if k == 0 {
            f - (hfsq - s * (hfsq + r))
        } else {
            dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f)
        }
    } else if k == 0 {
        f - s * (f - r)
    } else {
        dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f)
    }
}

/// e^x.
pub(crate) fn exp(x: f64) -> f64 {
    const O_THRESHOLD: f64 = f64::from_bits(0x4086_2e42_fefa_39ef);
    const U_THRESHOLD: f64 = f64::from_bits(0xc087_4910_d52d_3051);
    const INV_LN2: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
    const TWO_M1000: f64 = f64::from_bits(0x0170_0000_0000_0000);
    const P1: f64 = f64::from_bits(0x3fc5_5555_5555_553e);
    const P2: f64 = f64::from_bits(0xbf66_c16c_16be_bd93);
    const P3: f64 = f64::from_bits(0x3f11_566a_af25_de2c);
    const P4: f64 = f64::from_bits(0xbebb_bd41_c5d2_6bf1);
    const P5: f64 = f64::from_bits(0x3e66_3769_72be_a4d0);

    let bits_hi = hi_word(x);
    let negative = bits_hi < 0;
    let hx = bits_hi & 0x7fff_ffff;
    if hx >= 0x4086_2e42 {
        // |x| >= 709.78...
        if hx >= 0x7ff0_0000 {
            if x.is_nan() {
                return x + x;
            }
            return if negative { 0.0 } else { x };
        }
        if x > O_THRESHOLD {
            return f64::INFINITY;
        }
        if x < U_THRESHOLD {
            return 0.0;
        }
    }
    let (hi, lo, k): (f64, f64, i32);
    let mut x = x;
    if hx > 0x3fd6_2e42 {
        // |x| > 0.5 ln2: reduce.
        if hx < 0x3ff0_a2b2 {
            // and |x| < 1.5 ln2
            if negative {
                (hi, lo, k) = (x + LN2_HI, -LN2_LO, -1);
            } else {
                (hi, lo, k) = (x - LN2_HI, LN2_LO, 1);
            }
        } else {
            let kk = (INV_LN2 * x + if negative { -0.5 } else { 0.5 }) as i32;
            let t = kk as f64;
            (hi, lo, k) = (x - t * LN2_HI, t * LN2_LO, kk);
        }
        x = hi - lo;
    } else if hx < 0x3e30_0000 {
        // |x| < 2^-28
        return 1.0 + x;
    } else {
        (hi, lo, k) = (0.0, 0.0, 0);
    }
    let t = x * x;
    let c = x - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    if k == 0 {
        return 1.0 - ((x * c) / (c - 2.0) - x);
    }
    let y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
    if k >= -1021 {
        with_hi_word(y, hi_word(y).wrapping_add(k << 20))
    } else {
        with_hi_word(y, hi_word(y).wrapping_add((k + 1000) << 20)) * TWO_M1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn ln_and_exp_agree_with_std_to_an_ulp() {
        let mut rng = RngStreams::new(7).stream("math");
        for _ in 0..200_000 {
            // Magnitudes from 1e-300 to 1e300, and the unit interval densely.
            let e = rng.random_range(-300.0..300.0);
            let x: f64 = 10f64.powf(e) * rng.random::<f64>().max(1e-3);
            assert!(
                ulps(ln(x), x.ln()) <= 1,
                "ln({x}) = {} vs {}",
                ln(x),
                x.ln()
            );
            let u = rng.random::<f64>();
            if u > 0.0 {
                assert!(ulps(ln(u), u.ln()) <= 1, "ln({u})");
            }
            let y = rng.random_range(-745.0..709.0);
            assert!(
                ulps(exp(y), y.exp()) <= 1,
                "exp({y}) = {} vs {}",
                exp(y),
                y.exp()
            );
            let small = rng.random_range(-2.0..2.0);
            assert!(ulps(exp(small), small.exp()) <= 1, "exp({small})");
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
        assert_eq!(ln(f64::MIN_POSITIVE / 4.0), (f64::MIN_POSITIVE / 4.0).ln());
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(1000.0), f64::INFINITY);
        assert!(ulps(exp(-740.0), (-740f64).exp()) <= 1, "subnormal result");
    }

    #[test]
    fn samplers_have_their_moments() {
        let mut rng = RngStreams::new(3).stream("moments");
        let n = 200_000;
        let moments = |xs: &[f64]| {
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
            (mean, var)
        };
        let (m, v) = moments(&(0..n).map(|_| normal(&mut rng)).collect::<Vec<_>>());
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.01, "normal {m} {v}");
        let (m, v) = moments(&(0..n).map(|_| exponential(&mut rng)).collect::<Vec<_>>());
        assert!(
            (m - 1.0).abs() < 0.01 && (v - 1.0).abs() < 0.03,
            "exponential {m} {v}"
        );
        for shape in [0.1, 0.25, 1.0, 4.0, 30.0] {
            let (m, v) = moments(&(0..n).map(|_| gamma(&mut rng, shape)).collect::<Vec<_>>());
            assert!((m / shape - 1.0).abs() < 0.02, "gamma({shape}) mean {m}");
            assert!(
                (v / shape - 1.0).abs() < 0.06,
                "gamma({shape}) variance {v}"
            );
        }
    }

    #[test]
    fn times_parse_exactly() {
        assert_eq!(parse_seconds_ps("12.5"), Some(12_500_000_000_000));
        assert_eq!(parse_seconds_ps("0.000000000001"), Some(1));
        assert_eq!(parse_seconds_ps("-3"), Some(-3 * PS_PER_S));
        assert_eq!(parse_seconds_ps(".5"), Some(PS_PER_S / 2));
        assert_eq!(parse_seconds_ps("1e3"), Some(1000 * PS_PER_S));
        assert_eq!(parse_seconds_ps("abc"), None);
        assert_eq!(parse_seconds_ps(""), None);
        assert_eq!(parse_seconds_ps("."), None);
        assert_eq!(parse_seconds_ps("inf"), None);

        let t = parse_datetime_ps("2023-11-16 18:15:46.6805900").unwrap();
        let t0 = parse_datetime_ps("2023-11-16 18:15:46").unwrap();
        assert_eq!(t - t0, 680_590_000_000);
        // 1700158546 is 2023-11-16T18:15:46Z.
        assert_eq!(t0, 1_700_158_546 * PS_PER_S);
        assert_eq!(parse_datetime_ps("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_datetime_ps("2024-05-10 02:00:00.5+02:00"),
            parse_datetime_ps("2024-05-10 00:00:00.5")
        );
        assert_eq!(
            parse_datetime_ps("2024-03-01 00:00:00").unwrap()
                - parse_datetime_ps("2024-02-28 00:00:00").unwrap(),
            2 * 86_400 * PS_PER_S,
            "2024 is a leap year"
        );
        assert_eq!(parse_datetime_ps("2023-02-29 00:00:00"), None);
        assert_eq!(parse_datetime_ps("2023-11-16 25:00:00"), None);
        assert_eq!(parse_datetime_ps("2023-11-16 18:15:46 PST"), None);
        assert_eq!(parse_datetime_ps("2023-11-16 18:15:46."), None);
    }

    #[test]
    fn csv_fields_split_with_quotes() {
        assert_eq!(split_csv(" a, b ,c"), ["a", "b", "c"]);
        assert_eq!(
            split_csv("\"x, y\",\"say \"\"hi\"\"\",3"),
            ["x, y", "say \"hi\"", "3"]
        );
        assert_eq!(split_csv(""), [""]);
    }

    #[test]
    fn counts_accept_integral_floats_only() {
        assert_eq!(parse_count("42"), Some(42));
        assert_eq!(parse_count("42.0"), Some(42));
        assert_eq!(parse_count("42.5"), None);
        assert_eq!(parse_count("-1"), None);
        assert_eq!(parse_count("x"), None);
    }
}
