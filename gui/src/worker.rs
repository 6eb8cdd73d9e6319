//! Runs scenarios off the UI thread, so the window keeps drawing while the simulator works.
//!
//! Each request gets its own `std::thread`; results come back over a channel, and a callback
//! (the app passes one that asks egui to repaint) says one is waiting. Only the newest request's
//! result is delivered: starting a run while another is in flight makes the older one's result
//! stale, and it is dropped when it arrives. Scenario errors come back as errors with their full
//! located message; a panic inside the simulator is caught and comes back as an error too.
//! The heavy preparation for drawing (sorting operations into per-lane tracks, building and
//! placing the cluster's topology) is done on the worker thread as well.
//!
//! A request for a .json file reads a saved report and/or trace back instead (`saved`).
//!
//! Deliberately left out: cancelling a run in flight (the simulator has no cancellation point; a
//! superseded run finishes in the background and is discarded), progress reporting, and a thread
//! pool (one run at a time is what a person asks for).

use crate::throughput::{self, Throughput};
use crate::topology_layout::{self, Built};
use crate::tracks::Tracks;
use crate::{link_traffic, saved};
use clustersim::exec::Graph;
use serde_json::Value;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

/// What to run: a scenario file and its `--set KEY=VALUE` overrides; or what to read back: a
/// saved report or trace (`path` ending in .json) and, optionally, the other one of the pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub path: PathBuf,
    pub sets: Vec<String>,
    /// The second file of a saved run (its trace, or its report), read with `path`.
    pub also: Option<PathBuf>,
}

impl Request {
    /// A scenario with overrides.
    pub fn scenario(path: PathBuf, sets: Vec<String>) -> Request {
        Request {
            path,
            sets,
            also: None,
        }
    }

    /// Whether this reads a saved run back rather than simulating.
    pub fn is_saved(&self) -> bool {
        saved::is_saved_path(&self.path)
    }
}

/// A finished run, ready to show.
pub struct Loaded {
    pub report: Value,
    pub graph: Graph,
    pub tracks: Tracks,
    /// The scenario file's text as it was read for this run (for saving an edited copy).
    pub text: Option<String>,
    /// The cluster placed for the Topology tab, and which GPUs have lanes.
    pub topology: Built,
    /// A serving run's output tokens and completions over time, counted from its trace.
    pub throughput: Option<Throughput>,
}

/// Why a run produced nothing to show.
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    /// Where, in one line ("file:line:column", or the `--set` option).
    pub position: String,
    /// The full, compiler-style message with the offending line.
    pub message: String,
}

/// The answer to one request.
pub struct Outcome {
    pub id: u64,
    pub request: Request,
    pub result: Result<Loaded, RunError>,
    /// Wall-clock time of loading and simulating.
    pub wall: Duration,
}

/// Loads and simulates `request` on the calling thread (or reads a saved run back).
pub fn run_blocking(request: &Request) -> Result<Loaded, RunError> {
    if request.is_saved() {
        if let Some(option) = request.sets.first() {
            return Err(RunError {
                position: format!("--set {option}"),
                message: format!(
                    "error: overrides change a scenario before it runs; {} is a saved run, shown \
                     as it was\n  = help: open the scenario file to run it with --set {option}",
                    request.path.display()
                ),
            });
        }
        let files: Vec<PathBuf> = std::iter::once(request.path.clone())
            .chain(request.also.clone())
            .collect();
        return saved::load(&files);
    }
    let located = |e: clustersim::scenario::error::ScenarioError| RunError {
        position: e.position(),
        message: e.to_string(),
    };
    let mut scenario = clustersim::Scenario::load(&request.path, &request.sets).map_err(located)?;
    // The Topology tab colours links by their traffic: training runs count it when asked.
    if scenario.kind == clustersim::scenario::Kind::Training {
        scenario.file.sim.record_links.get_or_insert(true);
    }
    // The timeline draws every kernel.
    let out = clustersim::run(&scenario).map_err(located)?.expanded();
    let tracks = Tracks::build(&out.graph, &out.timeline);
    let mut topology = topology_layout::from_scenario(&scenario);
    if let Ok(layout) = &topology.layout {
        topology.traffic = link_traffic::from_report(&out.report, layout);
    }
    let throughput = throughput::from_trace(&out.graph, &out.timeline);
    Ok(Loaded {
        report: out.report,
        graph: out.graph,
        tracks,
        text: std::fs::read_to_string(&request.path).ok(),
        topology,
        throughput,
    })
}

/// Starts runs on background threads and hands back the newest one's outcome.
pub struct Worker {
    tx: Sender<Outcome>,
    rx: Receiver<Outcome>,
    /// Id of the newest request; results of older ones are dropped.
    latest: u64,
    /// Whether the newest request is still running.
    waiting: bool,
    notify: Arc<dyn Fn() + Send + Sync>,
}

impl Worker {
    /// `notify` is called from the worker thread each time a result is ready.
    pub fn new(notify: impl Fn() + Send + Sync + 'static) -> Worker {
        let (tx, rx) = mpsc::channel();
        Worker {
            tx,
            rx,
            latest: 0,
            waiting: false,
            notify: Arc::new(notify),
        }
    }

    /// Starts running `request`, superseding any run in flight. Returns its id.
    pub fn start(&mut self, request: Request) -> u64 {
        self.latest += 1;
        self.waiting = true;
        let id = self.latest;
        let tx = self.tx.clone();
        let notify = Arc::clone(&self.notify);
        let spawned = std::thread::Builder::new()
            .name(format!("clustersim-run-{id}"))
            .spawn(move || {
                let started = Instant::now();
                let result = panic::catch_unwind(AssertUnwindSafe(|| run_blocking(&request)))
                    .unwrap_or_else(|payload| {
                        let what = clustersim::panic_message(&*payload, "unknown panic");
                        Err(RunError {
                            position: request.path.display().to_string(),
                            message: format!(
                                "error: the simulator panicked (a bug, not your scenario): {what}\n  --> {}",
                                request.path.display()
                            ),
                        })
                    });
                let wall = started.elapsed();
                // The receiver is gone only when the app is closing.
                let _ = tx.send(Outcome {
                    id,
                    request,
                    result,
                    wall,
                });
                notify();
            });
        if let Err(e) = spawned {
            let _ = self.tx.send(Outcome {
                id,
                request: Request::scenario(PathBuf::new(), Vec::new()),
                result: Err(RunError {
                    position: String::new(),
                    message: format!("error: could not start a worker thread: {e}"),
                }),
                wall: Duration::ZERO,
            });
        }
        id
    }

    /// Whether the newest request is still running.
    pub fn busy(&self) -> bool {
        self.waiting
    }

    /// The newest request's outcome, if it has arrived (stale ones are dropped on the way).
    pub fn poll(&mut self) -> Option<Outcome> {
        let mut newest = None;
        while let Ok(outcome) = self.rx.try_recv() {
            if outcome.id == self.latest {
                self.waiting = false;
                newest = Some(outcome);
            }
        }
        newest
    }

    /// Blocks up to `timeout` for the newest request's outcome (for tests).
    #[cfg(test)]
    pub fn wait(&mut self, timeout: Duration) -> Option<Outcome> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(o) = self.poll() {
                return Some(o);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.rx.recv_timeout(left) {
                Ok(outcome) if outcome.id == self.latest => {
                    self.waiting = false;
                    return Some(outcome);
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn scenario(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/training")
            .join(name)
    }

    fn request(path: PathBuf, sets: &[&str]) -> Request {
        Request::scenario(path, sets.iter().map(|s| s.to_string()).collect())
    }

    const WAIT: Duration = Duration::from_secs(120);

    #[test]
    fn a_good_scenario_comes_back_with_report_and_tracks() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let mut w = Worker::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        w.start(request(scenario("gpt3-1.3b-8xh100.toml"), &[]));
        assert!(w.busy());
        let o = w.wait(WAIT).expect("the run finishes");
        assert!(!w.busy());
        let loaded = o.result.expect("the scenario runs");
        assert_eq!(loaded.report["kind"], "training");
        assert!(!loaded.tracks.tracks.is_empty());
        assert_eq!(loaded.tracks.ops, loaded.graph.len());
        let iteration = loaded.report["iteration_time_s"].as_f64().unwrap();
        assert!((loaded.tracks.makespan - iteration).abs() <= 1e-6 * iteration);
        // The callback runs just after the send; give it a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while calls.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_missing_file_is_an_error_not_a_panic() {
        let mut w = Worker::new(|| {});
        w.start(request(PathBuf::from("/nonexistent/nope.toml"), &[]));
        let err = w.wait(WAIT).unwrap().result.err().expect("an error");
        assert!(err.message.contains("no such file"), "{}", err.message);
        assert_eq!(err.position, "/nonexistent/nope.toml");
    }

    #[test]
    fn a_bad_key_is_located_in_the_file() {
        let dir = std::env::temp_dir().join(format!("clustersim-gui-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.toml");
        let text = std::fs::read_to_string(scenario("gpt3-1.3b-8xh100.toml"))
            .unwrap()
            .replace("micro_batch = 8", "micro_bach = 8");
        std::fs::write(&path, text).unwrap();
        let err = run_blocking(&request(path.clone(), &[]))
            .err()
            .expect("an error");
        std::fs::remove_dir_all(&dir).ok();
        // "file:line:column" and the compiler-style body with a suggestion.
        assert!(
            err.position.starts_with(&path.display().to_string()),
            "{}",
            err.position
        );
        assert!(err.position.matches(':').count() >= 2, "{}", err.position);
        assert!(err.message.contains("micro_bach"), "{}", err.message);
        assert!(err.message.contains('^'), "{}", err.message);
    }

    #[test]
    fn a_bad_override_names_the_option() {
        let err = run_blocking(&request(
            scenario("gpt3-1.3b-8xh100.toml"),
            &["parallel.micro_batch=eight"],
        ))
        .err()
        .expect("an error");
        assert!(err.position.starts_with("--set"), "{}", err.position);
    }

    #[test]
    fn only_the_newest_request_is_delivered() {
        let mut w = Worker::new(|| {});
        let first = w.start(request(PathBuf::from("/nonexistent/first.toml"), &[]));
        let second = w.start(request(scenario("gpt3-1.3b-8xh100.toml"), &[]));
        assert!(second > first);
        let o = w.wait(WAIT).unwrap();
        assert_eq!(o.id, second);
        assert!(o.result.is_ok());
        // The stale one never surfaces later.
        std::thread::sleep(Duration::from_millis(50));
        assert!(w.poll().is_none());
    }
}
