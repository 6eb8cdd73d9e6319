//! `clustersim sweep`: one scenario run over a grid of values, one row per point.
//!
//! A sweep is a scenario, base `--set` options, a [`Grid`] of `--vary` axes, a [`Shard`] of it
//! and the metrics to keep. Each point is the scenario loaded by [`Scenario::load`] with the
//! base options plus one `KEY=VALUE` per varied key, then [`crate::run`]; its report becomes a
//! [`Row`] of a [`Table`] (see `row` for the columns and `format` for the files). Points run in
//! parallel on rayon's pool, one point per task (the simulation of a point stays
//! single-threaded), and rows come back in point order, so the same sweep gives the same bytes.
//!
//! A point that cannot be loaded or run, or that makes the simulator panic, is an `error` row;
//! it never ends the sweep. A configuration that does not fit in memory is an `ok` row with
//! `memory.fits = false`. Refused before anything runs: bad flags, a scenario (with its base
//! options) that does not load, and a grid whose every point fails to load with the same
//! message (a misspelt key). Deliberately ignored: wall-clock time (never in a row), traces, and
//! `[expect]` (a sweep reports, it does not judge).

pub mod format;
pub(crate) mod grid;
pub(crate) mod merge;
pub(crate) mod metrics;
pub(crate) mod row;
pub(crate) mod shard;

pub use format::Format;
pub use grid::{Axis, Grid};
pub use merge::{Part, merge};
pub use row::{Row, Table};
pub use shard::Shard;

use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use rayon::prelude::*;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Bad input to a sweep or a merge; the CLI prints it and exits with code 2.
#[derive(Clone, Debug, PartialEq)]
pub enum SweepError {
    /// A malformed flag; the message names it and says what would be valid.
    Flag(String),
    /// The scenario with the base `--set` options does not load.
    Scenario(ScenarioError),
    /// Every point of the shard fails to load with this same message (a misspelt key, a value
    /// of the wrong type): nothing ran.
    EveryPoint(ScenarioError),
    /// A file cannot be used: a wrong extension, unreadable, or not a sweep's output.
    File { path: PathBuf, message: String },
    /// The parts of a merge do not make one sweep (a missing or repeated point).
    Parts(String),
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Flag(m) | SweepError::Parts(m) => write!(f, "error: {m}"),
            SweepError::Scenario(e) => write!(f, "{e}"),
            SweepError::EveryPoint(e) => write!(
                f,
                "{e}\n  = note: every point of the sweep fails to load with this error; \
                 nothing was run"
            ),
            SweepError::File { path, message } => {
                write!(f, "error: {}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for SweepError {}

/// A sweep, its flags read and checked.
#[derive(Clone, Debug)]
pub struct Sweep {
    scenario: PathBuf,
    sets: Vec<String>,
    grid: Grid,
    shard: Shard,
    /// `--metric` paths; empty for the defaults of the scenario's kind.
    metrics: Vec<String>,
}

/// What a sweep produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The shard's rows, in point order.
    pub table: Table,
    pub ok: usize,
    pub failed: usize,
    /// One message per metric that no `ok` row has (a misspelt `--metric`, most likely).
    pub absent_metrics: Vec<String>,
}

impl Sweep {
    /// Reads the flags: `vary` as `KEY=V1,V2,...` options, `sets` as `--set` takes them.
    pub fn new(
        scenario: &Path,
        sets: &[String],
        vary: &[String],
        shard: Shard,
        metrics: &[String],
    ) -> Result<Sweep, SweepError> {
        let axes = vary
            .iter()
            .map(|v| Axis::parse(v))
            .collect::<Result<Vec<_>, _>>()?;
        for a in &axes {
            let set = sets
                .iter()
                .find(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == a.key));
            if let Some(set) = set {
                return Err(SweepError::Flag(format!(
                    "--set {set} and --vary {}=...: a key is either set or varied, not both",
                    a.key
                )));
            }
        }
        for (i, m) in metrics.iter().enumerate() {
            metrics::check(m).map_err(SweepError::Flag)?;
            if metrics[..i].contains(m) {
                return Err(SweepError::Flag(format!("--metric {m} is given twice")));
            }
            let taken = row::LEADING.contains(&m.as_str())
                || row::MIDDLE.contains(&m.as_str())
                || axes.iter().any(|a| &a.key == m);
            if taken {
                return Err(SweepError::Flag(format!(
                    "--metric {m}: a row already has a column of that name"
                )));
            }
        }
        Ok(Sweep {
            scenario: scenario.to_path_buf(),
            sets: sets.to_vec(),
            grid: Grid::new(axes)?,
            shard,
            metrics: metrics.to_vec(),
        })
    }

    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// How many points this shard runs.
    pub fn shard_len(&self) -> usize {
        self.shard.points(self.grid.len()).count()
    }

    /// Runs the shard's points in parallel; `progress` is called once as each point ends.
    pub fn run(&self, progress: &(dyn Fn() + Sync)) -> Result<Outcome, SweepError> {
        let base = Scenario::load(&self.scenario, &self.sets).map_err(SweepError::Scenario)?;
        let metrics: Vec<String> = if self.metrics.is_empty() {
            metrics::defaults(base.kind)
                .iter()
                .map(|m| m.to_string())
                .collect()
        } else {
            self.metrics.clone()
        };
        let points: Vec<usize> = self.shard.points(self.grid.len()).collect();
        self.refuse_if_no_point_loads(&points)?;
        let done: Vec<(Row, Vec<Option<String>>)> = points
            .par_iter()
            .map(|&p| {
                let row = self.point(p, &metrics);
                progress();
                row
            })
            .collect();
        // A metric that no `ok` row has: the reason the first one gives.
        let absent_metrics = metrics
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let mut whys = done.iter().filter(|(r, _)| r.ok).map(|(_, a)| &a[i]);
                let first = whys.next()?.as_ref()?;
                whys.all(|w| w.is_some())
                    .then(|| format!("--metric {m}: {first}"))
            })
            .collect();
        let rows: Vec<Row> = done.into_iter().map(|(r, _)| r).collect();
        let ok = rows.iter().filter(|r| r.ok).count();
        Ok(Outcome {
            table: Table {
                columns: row::columns(self.grid.axes(), &metrics),
                rows,
            },
            ok,
            failed: points.len() - ok,
            absent_metrics,
        })
    }

    /// The options that select `point`: the base `--set`s, then one per varied key.
    pub fn sets(&self, point: usize) -> Vec<String> {
        let mut sets = self.sets.clone();
        sets.extend(self.grid.sets(point));
        sets
    }

    /// When the shard's first point does not load, loads them all: if every one fails with
    /// the same message, the flags are wrong (a misspelt key), not the points.
    fn refuse_if_no_point_loads(&self, points: &[usize]) -> Result<(), SweepError> {
        let Some(&first) = points.first() else {
            return Ok(());
        };
        let Err(error) = Scenario::load(&self.scenario, &self.sets(first)) else {
            return Ok(());
        };
        let alike = points[1..].par_iter().all(|&p| {
            Scenario::load(&self.scenario, &self.sets(p))
                .err()
                .is_some_and(|e| e.message == error.message && e.help == error.help)
        });
        if alike {
            Err(SweepError::EveryPoint(error))
        } else {
            Ok(())
        }
    }

    /// Runs one point; a failure or a panic becomes an `error` row. Beside the row: for each
    /// metric its report lacks, why (with the closest path it has).
    fn point(&self, point: usize, metrics: &[String]) -> (Row, Vec<Option<String>>) {
        let values = self.grid.values(point);
        let total = self.grid.len();
        let ran = catch_unwind(AssertUnwindSafe(|| {
            let scenario = Scenario::load(&self.scenario, &self.sets(point))?;
            crate::run(&scenario).map(|o| o.report)
        }));
        let failed = |why: String| {
            (
                Row::failed(point, total, &values, &why, metrics.len()),
                vec![None; metrics.len()],
            )
        };
        match ran {
            Ok(Ok(report)) => {
                let cells = metrics.iter().map(|m| metrics::read(&report, m)).collect();
                let absent = metrics
                    .iter()
                    .map(|m| {
                        metrics::read(&report, m)
                            .is_none()
                            .then(|| metrics::absence(&report, m))
                    })
                    .collect();
                (Row::ok(point, total, &values, cells), absent)
            }
            Ok(Err(e)) => failed(one_line(&e)),
            Err(panic) => {
                let what = crate::panic_message(&*panic, "no message");
                failed(format!("the simulator panicked (a bug): {what}"))
            }
        }
    }
}

/// A scenario error on one line: the message, where, and the help.
pub fn one_line(e: &ScenarioError) -> String {
    let mut s = format!("{} ({})", e.message, e.position());
    if let Some(help) = &e.help {
        s.push_str("; help: ");
        s.push_str(help);
    }
    s
}
