//! Replaying a CSV trace (the public Azure / Splitwise LLM inference traces read as they are, or
//! arrival_s,prompt_tokens,output_tokens): the file is read here, its times become arrivals from
//! the first row on, and lengths the trace lacks come from `[workload]`.

use super::fields::{parse_count, parse_datetime_ps, parse_seconds_ps, split_csv};
use super::lengths;
use super::{MAX_REQUESTS, Request, Result, TrafficError, resolve};
use crate::engine::{RngStreams, SimTime};
use crate::scenario::serving::WorkloadSection;
use crate::stats::lengths::Lengths;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

#[derive(Copy, Clone, PartialEq, Eq)]
enum Column {
    Time,
    Prompt,
    Output,
}

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

const KEY: &str = "workload.trace";

/// The trace's header: its column names and where the time, prompt and output columns are.
struct Header {
    names: Vec<String>,
    time: usize,
    prompt: Option<usize>,
    output: Option<usize>,
}

/// One row of the trace: its time in ps since some epoch, and its prompt and output lengths where
/// the trace has them.
type Row = (i128, Option<u32>, Option<u32>);

/// The requests the trace `workload.trace` replays, with notes on what of `[workload]` it
/// overrides.
pub(super) fn from_trace(
    w: &WorkloadSection,
    streams: &RngStreams,
    base_dir: Option<&Path>,
    mut notes: Vec<String>,
) -> Result<(Vec<Request>, Vec<String>)> {
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
    let mut lines = open(file, base_dir)?;
    let header = header(file, &mut lines)?;
    // Lengths the trace lacks come from the scenario; those it has override the scenario's.
    let prompt_dist = scenario_lengths(
        w,
        &header,
        header.prompt,
        "prompt_tokens",
        base_dir,
        &mut notes,
    )?;
    let output_dist = scenario_lengths(
        w,
        &header,
        header.output,
        "output_tokens",
        base_dir,
        &mut notes,
    )?;
    let rows = rows(w, file, &header, &mut lines, &mut notes)?;
    let requests = requests(file, rows, prompt_dist, output_dist, streams)?;
    Ok((requests, notes))
}

/// The trace's lines, numbered from 1.
fn open(
    file: &str,
    base_dir: Option<&Path>,
) -> Result<impl Iterator<Item = Result<(usize, String)>>> {
    let full = resolve(file, base_dir);
    let reader = File::open(&full)
        .map(BufReader::new)
        .map_err(|e| TrafficError::new(KEY, format!("cannot read {}: {e}", full.display())))?;
    Ok(reader.lines().enumerate().map(move |(i, line)| {
        line.map(|l| (i + 1, l))
            .map_err(|e| TrafficError::new(KEY, format!("cannot read {file} line {}: {e}", i + 1)))
    }))
}

/// The header, the first non-blank line: each column it names, and an arrival-time column at
/// least.
fn header(file: &str, lines: &mut impl Iterator<Item = Result<(usize, String)>>) -> Result<Header> {
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
    Ok(Header {
        time: time_col,
        prompt: index[Column::Prompt as usize],
        output: index[Column::Output as usize],
        names,
    })
}

/// The scenario's lengths for `key` when the trace has no column `col` for it; none, with a note
/// that the scenario's are ignored, when it has.
fn scenario_lengths(
    w: &WorkloadSection,
    header: &Header,
    col: Option<usize>,
    key: &str,
    base_dir: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<Option<Lengths>> {
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
                    header.names[c]
                ));
            }
            Ok(None)
        }
        None => lengths::required(spec, key, base_dir, notes)
            .map(Some)
            .map_err(|e| match e.help {
                None => e.with_help(format!("the trace has no {key} column")),
                Some(_) => e,
            }),
    }
}

/// The rows after the header, at most `requests` of them, in time order, with zero token counts
/// raised to 1.
fn rows(
    w: &WorkloadSection,
    file: &str,
    header: &Header,
    lines: &mut impl Iterator<Item = Result<(usize, String)>>,
    notes: &mut Vec<String>,
) -> Result<Vec<Row>> {
    let limit = w.requests.map(|n| n as usize).unwrap_or(usize::MAX);
    let mut rows: Vec<Row> = Vec::new();
    let mut zeros = 0u64;
    while rows.len() < limit {
        let Some((lineno, line)) = lines.next().transpose()? else {
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        rows.push(row(file, header, lineno, &line, &mut zeros)?);
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
    Ok(rows)
}

/// One data line's time and token counts, counting the zero counts in `zeros`.
fn row(file: &str, header: &Header, lineno: usize, line: &str, zeros: &mut u64) -> Result<Row> {
    let names = &header.names;
    let fields = split_csv(line);
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
    let t = field(header.time)?;
    let time = parse_seconds_ps(t)
        .or_else(|| parse_datetime_ps(t))
        .ok_or_else(|| {
            TrafficError::new(
                KEY,
                format!(
                    "{file} line {lineno}: `{t}` in `{}` is not a time",
                    names[header.time]
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
            *zeros += 1;
        }
        Ok(Some(v.max(1)))
    };
    let prompt = count(header.prompt)?;
    let output = count(header.output)?;
    Ok((time, prompt, output))
}

/// The requests: arrivals from the first row's time on, and each length from the trace or else
/// drawn from the scenario's.
fn requests(
    file: &str,
    rows: Vec<Row>,
    prompt_dist: Option<Lengths>,
    output_dist: Option<Lengths>,
    streams: &RngStreams,
) -> Result<Vec<Request>> {
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
    Ok(requests)
}
