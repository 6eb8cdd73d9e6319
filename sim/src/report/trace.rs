//! Chrome trace-event JSON of a run, which opens in Perfetto (ui.perfetto.dev) and
//! chrome://tracing.
//!
//! Each lane group (a GPU) becomes a process and each lane (a stream) a thread; every operation (each
//! kernel of a chain, `Graph::expand`) is a complete event ("ph": "X") with its timestamp and duration in microseconds, and its FLOPs, bytes,
//! layer, micro-batch and pricing tier as arguments. The graph's counters (a GPU's board power)
//! follow as counter events ("ph": "C"), one per change of value, in the GPU's process, which
//! Perfetto draws as a track. Output is written in op order with fixed key order, so the same run
//! gives the same bytes.

use crate::exec::{Graph, Timeline};
use serde::Serialize;
use std::io::{self, Write};

#[derive(Serialize)]
struct Meta<'a> {
    ph: &'static str,
    name: &'static str,
    pid: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<usize>,
    args: MetaArgs<'a>,
}

#[derive(Serialize)]
struct MetaArgs<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct Complete<'a> {
    ph: &'static str,
    name: &'a str,
    cat: &'static str,
    pid: usize,
    tid: usize,
    ts: f64,
    dur: f64,
    args: Args,
}

#[derive(Serialize)]
struct CounterEvent<'a> {
    ph: &'static str,
    name: &'a str,
    pid: usize,
    ts: f64,
    args: std::collections::BTreeMap<&'static str, f64>,
}

#[derive(Serialize)]
struct Args {
    #[serde(skip_serializing_if = "Option::is_none")]
    layer: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    micro_batch: Option<u32>,
    flops: f64,
    bytes: f64,
    tier: &'static str,
}

/// Writes the trace of `graph` as it ran in `timeline`.
pub fn write_chrome_trace(
    graph: &Graph,
    timeline: &Timeline,
    out: &mut impl Write,
) -> io::Result<()> {
    if !graph.chains.is_empty() {
        let (graph, timeline) = graph.expand(timeline);
        return write_chrome_trace(&graph, &timeline, out);
    }
    let mut groups: Vec<&str> = Vec::new();
    let pid_of: Vec<usize> = graph
        .lanes
        .iter()
        .map(|lane| match groups.iter().position(|g| *g == lane.group) {
            Some(i) => i,
            None => {
                groups.push(&lane.group);
                groups.len() - 1
            }
        })
        .collect();
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let mut first = true;
    let mut emit = |out: &mut dyn Write, value: &dyn erased::Json| -> io::Result<()> {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        value.write(out)
    };
    for (pid, name) in groups.iter().enumerate() {
        emit(
            out,
            &Meta {
                ph: "M",
                name: "process_name",
                pid,
                tid: None,
                args: MetaArgs { name },
            },
        )?;
    }
    for (tid, lane) in graph.lanes.iter().enumerate() {
        emit(
            out,
            &Meta {
                ph: "M",
                name: "thread_name",
                pid: pid_of[tid],
                tid: Some(tid),
                args: MetaArgs { name: &lane.name },
            },
        )?;
    }
    for (i, op) in graph.ops.iter().enumerate() {
        let start = timeline.start[i];
        let end = timeline.end[i];
        emit(
            out,
            &Complete {
                ph: "X",
                name: &op.name,
                cat: op.kind.name(),
                pid: pid_of[op.lane as usize],
                tid: op.lane as usize,
                ts: start.as_us_f64(),
                dur: (end - start).as_us_f64(),
                args: Args {
                    layer: op.layer,
                    micro_batch: op.micro_batch,
                    flops: op.flops,
                    bytes: op.bytes,
                    tier: op.tier,
                },
            },
        )?;
    }
    let end = timeline.makespan();
    for counter in &graph.counters {
        let name = format!("{} ({})", counter.name, counter.unit);
        for (t, value) in counter.series(graph, timeline, end) {
            emit(
                out,
                &CounterEvent {
                    ph: "C",
                    name: &name,
                    pid: pid_of[counter.lane as usize],
                    ts: t.as_us_f64(),
                    args: [(counter.unit, value)].into(),
                },
            )?;
        }
    }
    out.write_all(b"\n]}\n")
}

/// Serialising different event types through one closure.
mod erased {
    use serde::Serialize;
    use std::io::{self, Write};

    pub trait Json {
        fn write(&self, out: &mut dyn Write) -> io::Result<()>;
    }

    impl<T: Serialize> Json for T {
        fn write(&self, out: &mut dyn Write) -> io::Result<()> {
            serde_json::to_writer(out, self).map_err(io::Error::other)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimTime;
    use crate::exec::{Op, OpKind, execute};

    #[test]
    fn trace_is_valid_json_with_one_event_per_op_and_names() {
        let mut g = Graph::new();
        let lane = g.add_lane("compute", "GPU 0");
        for _ in 0..3 {
            g.add(
                Op {
                    name: "gemm".into(),
                    lane,
                    kind: OpKind::Compute,
                    duration: SimTime::from_ns(1500),
                    flops: 1e9,
                    bytes: 1e6,
                    tier: "roofline",
                    layer: Some(0),
                    micro_batch: Some(0),
                    model_flops: true,
                    chain: None,
                },
                &[],
            );
        }
        let (timeline, _) = execute(&g);
        let mut bytes = Vec::new();
        write_chrome_trace(&g, &timeline, &mut bytes).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 2 + 3);
        // A board-power counter on the first op: up at 0, back to idle at 1.5 us.
        let mut with_power = g.clone();
        with_power.counters.push(crate::exec::Counter {
            name: "board power",
            unit: "W",
            lane,
            base: 100.0,
            values: vec![(0, 650.0)],
        });
        let mut bytes = Vec::new();
        write_chrome_trace(&with_power, &timeline, &mut bytes).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let counters: Vec<_> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C")
            .collect();
        assert_eq!(counters.len(), 2);
        assert_eq!(counters[0]["name"], "board power (W)");
        assert_eq!(counters[0]["args"]["W"], 650.0);
        assert_eq!(counters[1]["ts"], 1.5);
        assert_eq!(counters[1]["args"]["W"], 100.0);
        let last = &events[4];
        assert_eq!(last["ph"], "X");
        assert_eq!(last["ts"], 3.0);
        assert_eq!(last["dur"], 1.5);
        assert_eq!(last["args"]["tier"], "roofline");
        assert_eq!(events[0]["args"]["name"], "GPU 0");
    }
}
