//! A saved run read back: the report (`clustersim run SCENARIO --json > report.json`) and its
//! trace (`clustersim run SCENARIO --trace trace.json`), one of them or both.
//!
//! Which file is which is read from its contents: a JSON object with `traceEvents` is a trace, one
//! with `kind` is a report, which must read as this version's report of that kind. The trace is turned back into the run's graph and timeline: its
//! `process_name` records name the lane groups (GPUs, replicas), its `thread_name` records the
//! lanes, and each complete event ("ph": "X") is one operation with its start and duration
//! (microseconds, rounded to the simulator's picoseconds), kind (`cat`), FLOPs, bytes, pricing
//! tier, layer and micro-batch. Dependencies between operations are not in a trace and are not
//! needed to draw it. Other event phases are skipped.
//!
//! Errors say where: a file that is not JSON gets its line and column (serde_json's) with the
//! offending line, rendered like the scenario errors; a well-formed file with a bad event names
//! the event (`traceEvents[12]`) and what would be valid. Nothing is guessed: a missing `ts` is an
//! error, not zero.
//!
//! Deliberately left out: the topology (a report does not hold the cluster's wiring; the Topology
//! tab says to open the scenario), re-running with overrides (there is no scenario to apply them
//! to), and traces written by other tools with other categories.

use crate::throughput;
use crate::topology_layout::{Built, Stands};
use crate::tracks::Tracks;
use crate::worker::{Loaded, RunError};
use clustersim::engine::SimTime;
use clustersim::exec::{Graph, Op, OpKind, Timeline};
use clustersim::report::any::Report;
use clustersim::scenario::error::{Location, ScenarioError};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Whether `path` names a saved report or trace (by its extension).
pub fn is_saved_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

fn error(file: &Path, message: impl Into<String>) -> RunError {
    let e = ScenarioError::whole(file, message);
    RunError {
        position: e.position(),
        message: e.to_string(),
    }
}

/// Reads and parses one JSON file; a syntax error is located at its line and column.
fn read_json(path: &Path) -> Result<Value, RunError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| error(path, format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        let line = e.line().max(1);
        let located = ScenarioError {
            file: path.to_path_buf(),
            location: Location::File {
                line,
                column: e.column().max(1),
                text: text.lines().nth(line - 1).unwrap_or("").to_string(),
                width: 1,
            },
            message: format!("not valid JSON: {e}"),
            help: Some(
                "a saved run is the report of `clustersim run --json` or the file of `--trace`"
                    .into(),
            ),
        };
        RunError {
            position: located.position(),
            message: located.to_string(),
        }
    })
}

/// The pricing tier names seen in traces, each leaked once (there are a handful).
fn intern(tier: &str) -> &'static str {
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = seen.iter().find(|s| **s == tier) {
        return s;
    }
    let s: &'static str = Box::leak(tier.to_string().into_boxed_str());
    seen.push(s);
    s
}

/// The graph and timeline a trace describes.
pub fn trace_to_graph(path: &Path, trace: &Value) -> Result<(Graph, Timeline), RunError> {
    let events = trace
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or_else(|| error(path, "`traceEvents` is not a list of events"))?;
    let at = |i: usize, what: String| error(path, format!("traceEvents[{i}]: {what}"));
    let int = |i: usize, e: &Value, key: &str| {
        e.get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| at(i, format!("`{key}` must be a whole number ≥ 0")))
    };
    let time = |i: usize, e: &Value, key: &str| -> Result<SimTime, RunError> {
        let us = e
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| at(i, format!("`{key}` must be a number of microseconds ≥ 0")))?;
        if !(us.is_finite() && us >= 0.0) {
            return Err(at(
                i,
                format!("`{key}` is {us}; expected a number of microseconds ≥ 0"),
            ));
        }
        Ok(SimTime::from_secs_f64(us * 1e-6))
    };
    // Names first (they may come anywhere), then operations in file order.
    let mut groups: BTreeMap<u64, String> = BTreeMap::new();
    let mut lane_names: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if e.get("ph").and_then(Value::as_str) != Some("M") {
            continue;
        }
        let name = e.pointer("/args/name").and_then(Value::as_str);
        match (e.get("name").and_then(Value::as_str), name) {
            (Some("process_name"), Some(n)) => {
                groups.insert(int(i, e, "pid")?, n.to_string());
            }
            (Some("thread_name"), Some(n)) => {
                lane_names.insert(int(i, e, "tid")?, (int(i, e, "pid")?, n.to_string()));
            }
            _ => {}
        }
    }
    let mut graph = Graph::new();
    let mut timeline = Timeline {
        start: Vec::new(),
        end: Vec::new(),
    };
    let mut lane_of: BTreeMap<u64, u32> = BTreeMap::new();
    let group_name = |pid: u64| {
        groups
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| format!("process {pid}"))
    };
    // Lanes in the order the trace declares them (by thread id), as the simulator numbered them.
    for (&tid, (pid, name)) in &lane_names {
        lane_of.insert(tid, graph.add_lane(name.clone(), group_name(*pid)));
    }
    for (i, e) in events.iter().enumerate() {
        if e.get("ph").and_then(Value::as_str) != Some("X") {
            continue;
        }
        let tid = int(i, e, "tid")?;
        let lane = match lane_of.get(&tid) {
            Some(&l) => l,
            None => {
                let pid = int(i, e, "pid")?;
                let l = graph.add_lane(format!("thread {tid}"), group_name(pid));
                lane_of.insert(tid, l);
                l
            }
        };
        let kind = match e.get("cat").and_then(Value::as_str) {
            Some("compute") => OpKind::Compute,
            Some("communication") => OpKind::Communication,
            Some("memory") => OpKind::Memory,
            other => {
                return Err(at(
                    i,
                    format!(
                        "`cat` is {}; expected compute, communication or memory",
                        other.map_or("missing".into(), |c| format!("`{c}`"))
                    ),
                ));
            }
        };
        let start = time(i, e, "ts")?;
        let duration = time(i, e, "dur")?;
        let end = start.checked_add(duration).ok_or_else(|| {
            at(
                i,
                format!(
                    "`ts` + `dur` ends past simulated time's reach ({})",
                    SimTime::SPAN
                ),
            )
        })?;
        let arg = |k: &str| e.pointer(&format!("/args/{k}"));
        let number = |k: &str| arg(k).and_then(Value::as_f64).unwrap_or(0.0);
        let index = |k: &str| arg(k).and_then(Value::as_u64).map(|v| v as u32);
        graph.add(
            Op {
                name: Cow::Owned(
                    e.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                ),
                lane,
                kind,
                duration,
                flops: number("flops"),
                bytes: number("bytes"),
                tier: intern(arg("tier").and_then(Value::as_str).unwrap_or("unknown")),
                layer: index("layer"),
                micro_batch: index("micro_batch"),
                model_flops: kind == OpKind::Compute,
                chain: None,
            },
            &[],
        );
        timeline.start.push(start);
        timeline.end.push(end);
    }
    Ok((graph, timeline))
}

/// Loads a saved run from `files` (a report, a trace, or one of each, in any order).
pub fn load(files: &[PathBuf]) -> Result<Loaded, RunError> {
    let mut report = None;
    let mut trace = None;
    for path in files {
        let value = read_json(path)?;
        if value.get("traceEvents").is_some() {
            if trace.is_some() {
                return Err(error(path, "a second trace: open one report and one trace"));
            }
            trace = Some(trace_to_graph(path, &value)?);
        } else if value.get("kind").is_some_and(Value::is_string) {
            if report.is_some() {
                return Err(error(
                    path,
                    "a second report: open one report and one trace",
                ));
            }
            if let Err(e) = Report::from_value(&value) {
                return Err(error(
                    path,
                    format!(
                        "{e}; was it written by another version of clustersim? Run its \
                         scenario again with this one"
                    ),
                ));
            }
            report = Some(value);
        } else {
            return Err(error(
                path,
                "neither a clustersim report (an object with `kind`) nor a trace (an object \
                 with `traceEvents`)",
            ));
        }
    }
    let (graph, timeline) = trace.unwrap_or_else(|| {
        (
            Graph::new(),
            Timeline {
                start: Vec::new(),
                end: Vec::new(),
            },
        )
    });
    let tracks = Tracks::build(&graph, &timeline);
    let throughput = throughput::from_trace(&graph, &timeline);
    Ok(Loaded {
        report: report.unwrap_or_else(|| Value::Object(Default::default())),
        graph,
        tracks,
        throughput,
        text: None,
        topology: Built {
            layout: Err(
                "a saved report does not hold the cluster's wiring; open the scenario to draw it"
                    .into(),
            ),
            stands: Stands::NotPerGpu,
            traffic: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, body: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("clustersim-gui-saved-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    /// A run written out by the simulator's own trace writer reads back to the same operations.
    #[test]
    fn a_written_trace_reads_back_to_the_same_timeline() {
        let scenario = clustersim::Scenario::load(
            &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios/training/gpt3-1.3b-8xh100.toml"),
            &[],
        )
        .unwrap();
        let out = clustersim::run(&scenario).unwrap().expanded();
        let mut bytes = Vec::new();
        clustersim::report::trace::write_chrome_trace(&out.graph, &out.timeline, &mut bytes)
            .unwrap();
        let trace = temp("run.trace.json", std::str::from_utf8(&bytes).unwrap());
        let report = temp("run.json", &serde_json::to_string(&out.report).unwrap());
        let loaded = load(&[trace.clone(), report]).unwrap();
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        let (_, timeline) = trace_to_graph(&trace, &value).unwrap();
        assert_eq!(loaded.report, out.report);
        assert_eq!(loaded.graph.len(), out.graph.len());
        assert_eq!(loaded.graph.lanes.len(), out.graph.lanes.len());
        for (a, b) in loaded.graph.lanes.iter().zip(&out.graph.lanes) {
            assert_eq!((&a.name, &a.group), (&b.name, &b.group));
        }
        for i in 0..out.graph.len() {
            let (a, b) = (&loaded.graph.ops[i], &out.graph.ops[i]);
            assert_eq!(
                (&a.name, a.lane, a.kind, a.tier),
                (&b.name, b.lane, b.kind, b.tier)
            );
            // Microseconds printed as shortest round-trip floats: within a picosecond.
            let close = |x: SimTime, y: SimTime| x.as_ps().abs_diff(y.as_ps()) <= 1;
            assert!(close(timeline.start[i], out.timeline.start[i]), "op {i}");
            assert!(close(timeline.end[i], out.timeline.end[i]), "op {i}");
        }
        let makespan = out.timeline.makespan().as_secs_f64();
        assert!((loaded.tracks.makespan - makespan).abs() < 1e-9 * makespan);
    }

    #[test]
    fn broken_json_is_located_at_its_line_and_column() {
        let p = temp(
            "broken.json",
            "{\n  \"kind\": \"training\",\n  \"x\": [1, 2,, 3]\n}\n",
        );
        let err = load(std::slice::from_ref(&p)).err().expect("an error");
        assert_eq!(err.position, format!("{}:3:14", p.display()));
        assert!(err.message.contains("\"x\": [1, 2,, 3]"), "{}", err.message);
        assert!(err.message.contains('^'), "{}", err.message);
    }

    /// A report of another version (here a key renamed) is refused, naming the file and the key.
    #[test]
    fn a_report_this_version_does_not_read_is_refused_by_key() {
        let scenario = clustersim::Scenario::load(
            &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios/training/gpt3-1.3b-8xh100.toml"),
            &[],
        )
        .unwrap();
        let mut report = clustersim::run(&scenario).unwrap().report;
        let mfu = report.as_object_mut().unwrap().remove("mfu").unwrap();
        report["mfu_"] = mfu;
        let p = temp("renamed.json", &serde_json::to_string(&report).unwrap());
        let err = load(std::slice::from_ref(&p)).err().expect("refused");
        assert!(
            err.position.starts_with(&p.display().to_string()),
            "{}",
            err.position
        );
        assert!(
            err.message.contains("unknown field `mfu_`"),
            "{}",
            err.message
        );
        assert!(err.message.contains("another version"), "{}", err.message);
    }

    #[test]
    fn bad_events_and_unknown_files_are_explained() {
        let p = temp(
            "bad-cat.json",
            r#"{"traceEvents":[{"ph":"X","name":"a","cat":"compute","pid":0,"tid":0,"ts":0,"dur":1},
                {"ph":"X","name":"b","cat":"sleep","pid":0,"tid":0,"ts":1,"dur":1}]}"#,
        );
        let err = load(&[p]).err().unwrap();
        assert!(err.message.contains("traceEvents[1]"), "{}", err.message);
        assert!(
            err.message
                .contains("expected compute, communication or memory")
        );
        let p = temp(
            "no-ts.json",
            r#"{"traceEvents":[{"ph":"X","name":"a","cat":"compute","pid":0,"tid":0,"dur":1}]}"#,
        );
        assert!(load(&[p]).err().unwrap().message.contains("`ts` must be"));
        // Each time within reach, but not their sum.
        let p = temp(
            "late.json",
            r#"{"traceEvents":[{"ph":"X","name":"a","cat":"compute","pid":0,"tid":0,
                "ts":1.5e13,"dur":1.5e13}]}"#,
        );
        let late = load(&[p]).err().unwrap().message;
        assert!(late.contains("ends past simulated time's reach"), "{late}");
        let p = temp("other.json", r#"{"hello": 1}"#);
        assert!(load(&[p]).err().unwrap().message.contains("neither"));
        // A trace alone: operations, an empty report; lanes named by the metadata.
        let p = temp(
            "alone.json",
            r#"{"traceEvents":[{"ph":"M","name":"process_name","pid":0,"args":{"name":"GPU 0"}},
                {"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"compute"}},
                {"ph":"X","name":"gemm","cat":"compute","pid":0,"tid":0,"ts":2.5,"dur":1.5,
                 "args":{"flops":1e9,"bytes":0,"tier":"roofline","layer":3}}]}"#,
        );
        let l = load(std::slice::from_ref(&p)).unwrap();
        assert_eq!(l.report, serde_json::json!({}));
        assert_eq!(l.graph.lanes[0].group, "GPU 0");
        assert_eq!(l.graph.ops[0].layer, Some(3));
        assert!(l.throughput.is_none());
        let value = read_json(&p).unwrap();
        let (_, timeline) = trace_to_graph(&p, &value).unwrap();
        assert_eq!(timeline.end[0], SimTime::from_ns(4000));
    }
}
