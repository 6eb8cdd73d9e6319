//! `measure`: micro-benchmarks of one GPU, turned into a clustersim calibration profile.
//!
//! The work is split so that everything but the CUDA calls is plain Rust, tested without a GPU:
//!
//! - [`bench`]: the operations, a measurement's record and the [`Bench`] a GPU implements;
//! - [`plan`]: what is measured (GEMM shape grid, sizes, formats, repetition policies) and how long
//!   it should take;
//! - [`stats`]: warm-up, batching, repetitions, median and spread;
//! - [`run`] (this file): the order of the sections, the time budget, and what happens when a
//!   format is unsupported or a call fails, driving any [`Bench`];
//! - [`machine`]: the device, driver and library versions a run records;
//! - [`output`]: the profile (with provenance), the raw CSV and the JSON summary;
//! - [`gpu`]: the [`Bench`] of a real GPU, through cudarc (CUDA events, cuBLAS, cuBLASLt, a
//!   hand-written PTX module). It is the only part that has not run here: no GPU on this machine.
//!
//! Deliberately not measured yet: fused attention, NCCL collectives and copies between GPUs, and
//! whole layers (the `validate` subcommand is pending); docs/CALIBRATION.md lists them.

pub mod bench;
pub mod gpu;
pub mod machine;
pub mod output;
pub mod plan;
pub mod stats;

pub use bench::{Bench, BenchError, LaunchKind, Op, Record, Transfer, TransferSet};
use clustersim::hw::Dtype;
use plan::{Plan, output_dtype};
use stats::{MeasureError, Measurement, RepPolicy, measure};

/// How a section ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every planned point measured.
    Complete,
    /// Some points measured; the notes say why not all.
    Partial,
    /// Nothing measured: unsupported here, or no time left.
    Skipped,
    /// A fatal error stopped the run in this section.
    Failed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Partial => "partial",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
}

/// What happened in one section.
#[derive(Clone, Debug, PartialEq)]
pub struct SectionReport {
    pub name: String,
    pub status: Status,
    pub planned: usize,
    pub measured: usize,
    pub notes: Vec<String>,
}

/// Notes kept per section; the rest are counted.
const MAX_NOTES: usize = 12;

impl SectionReport {
    fn new(name: impl Into<String>, planned: usize) -> Self {
        SectionReport {
            name: name.into(),
            status: Status::Complete,
            planned,
            measured: 0,
            notes: Vec::new(),
        }
    }

    fn note(&mut self, note: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(note);
        } else if self.notes.len() == MAX_NOTES {
            self.notes.push("further notes left out".into());
        }
    }

    /// Sets the status from the counts, unless a failure or skip was recorded.
    fn finish(&mut self) {
        if matches!(self.status, Status::Failed | Status::Skipped) {
            return;
        }
        self.status = if self.measured == self.planned {
            Status::Complete
        } else if self.measured == 0 {
            Status::Skipped
        } else {
            Status::Partial
        };
    }
}

/// Everything a run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub records: Vec<Record>,
    pub sections: Vec<SectionReport>,
    /// The error that stopped the run, if one did.
    pub fatal: Option<String>,
    /// True when the time budget ran out before the plan was done.
    pub out_of_time: bool,
    pub elapsed_s: f64,
}

/// Drives `bench` through `plan`: sections in order, points within them, stopping new points
/// once `plan.budget_s` seconds (by `now`, seconds since the start) have passed or a fatal error
/// occurred. Progress lines go to `log`.
pub fn run(
    plan: &Plan,
    bench: &mut dyn Bench,
    now: &dyn Fn() -> f64,
    log: &mut dyn FnMut(String),
) -> Outcome {
    let mut out = Outcome::default();
    let mut runner = Runner {
        plan,
        bench,
        now,
        log,
        out: &mut out,
    };
    runner.launches();
    for set in &plan.transfers {
        runner.transfers(set);
    }
    let mut warmed = false;
    for &dtype in &plan.dtypes {
        runner.gemms(dtype, &mut warmed);
    }
    out.elapsed_s = now();
    out
}

struct Runner<'a> {
    plan: &'a Plan,
    bench: &'a mut dyn Bench,
    now: &'a dyn Fn() -> f64,
    log: &'a mut dyn FnMut(String),
    out: &'a mut Outcome,
}

/// Why a section cannot start, if it cannot.
enum Blocked {
    Fatal,
    OutOfTime,
}

impl Runner<'_> {
    fn blocked(&mut self) -> Option<Blocked> {
        if self.out.fatal.is_some() {
            return Some(Blocked::Fatal);
        }
        if (self.now)() >= self.plan.budget_s {
            self.out.out_of_time = true;
            return Some(Blocked::OutOfTime);
        }
        None
    }

    /// Starts a section; None (and a skipped report) when it cannot run.
    fn start(
        &mut self,
        name: String,
        planned: usize,
        support: Result<(), String>,
    ) -> Option<SectionReport> {
        let mut report = SectionReport::new(name, planned);
        let why = match (self.blocked(), support) {
            (Some(Blocked::Fatal), _) => {
                Some("not started: an earlier error stopped the run".into())
            }
            (Some(Blocked::OutOfTime), _) => Some(format!(
                "not started: the time budget ({:.0} s) was spent",
                self.plan.budget_s
            )),
            (None, Err(why)) => Some(why),
            (None, Ok(())) => None,
        };
        match why {
            Some(why) => {
                (self.log)(format!("{}: skipped ({why})", report.name));
                report.status = Status::Skipped;
                report.note(why);
                self.out.sections.push(report);
                None
            }
            None => Some(report),
        }
    }

    /// Records an error: fatal ones stop the run and fail the section.
    fn error(&mut self, report: &mut SectionReport, what: &str, err: BenchError) {
        let note = format!("{what}: {}", err.message);
        (self.log)(format!("{}: {note}", report.name));
        if err.fatal {
            report.status = Status::Failed;
            self.out.fatal = Some(format!("{} ({note})", report.name));
        }
        report.note(note);
    }

    /// Records a measurement error of one point.
    fn point_error(
        &mut self,
        report: &mut SectionReport,
        what: &str,
        err: MeasureError<BenchError>,
    ) {
        match err {
            MeasureError::Timer(e) => self.error(report, what, e),
            MeasureError::Invalid(m) => self.error(report, what, BenchError::skip(m)),
        }
    }

    /// Stops a section early when time or a fatal error says so; true when it must stop.
    fn must_stop(&mut self, report: &mut SectionReport) -> bool {
        match self.blocked() {
            None => false,
            Some(Blocked::Fatal) => true,
            Some(Blocked::OutOfTime) => {
                report.note(format!(
                    "stopped: the time budget ({:.0} s) was spent",
                    self.plan.budget_s
                ));
                true
            }
        }
    }

    fn finish(&mut self, mut report: SectionReport) {
        report.finish();
        self.out.sections.push(report);
    }

    fn launches(&mut self) {
        let support = self.bench.launch_support();
        let Some(mut report) = self.start("launch overhead".into(), 3, support) else {
            return;
        };
        let policy = self.plan.launch_policy;
        let mut host = Vec::new();
        let bench = &mut *self.bench;
        let batched = measure(&policy, |calls| {
            let (gpu, cpu) = bench.time_launches(calls)?;
            host.push(cpu / f64::from(calls));
            Ok(gpu)
        });
        match batched {
            Ok(m) => {
                let host_samples = host[host.len() - m.per_call_s.len()..].to_vec();
                if let Some(summary) = stats::summarize(&host_samples) {
                    let host_m = Measurement {
                        per_call_s: host_samples,
                        summary,
                        ..m.clone()
                    };
                    self.push(&mut report, Op::Launch(LaunchKind::HostSubmit), host_m);
                }
                self.push(&mut report, Op::Launch(LaunchKind::BackToBack), m);
            }
            Err(e) => self.point_error(&mut report, "back-to-back launches", e),
        }
        if !self.must_stop(&mut report) {
            let single = RepPolicy {
                warmup_calls: 3,
                warmup_s: 0.0,
                max_batch: 1,
                target_batch_s: 0.0,
                point_budget_s: 1.0,
                ..policy
            };
            let bench = &mut *self.bench;
            match measure(&single, |_| bench.time_single_launch()) {
                Ok(m) => self.push(&mut report, Op::Launch(LaunchKind::Single), m),
                Err(e) => self.point_error(&mut report, "single launch", e),
            }
        }
        let figures: Vec<String> = self
            .out
            .records
            .iter()
            .filter_map(|r| match r.op {
                Op::Launch(kind) => Some(format!(
                    "{} {:.2} us",
                    kind.name(),
                    r.measurement.summary.median * 1e6
                )),
                _ => None,
            })
            .collect();
        (self.log)(format!("launch overhead: {}", figures.join(", ")));
        self.finish(report);
    }

    fn transfers(&mut self, set: &TransferSet) {
        let support = self.bench.transfer_support(set.kind);
        let Some(mut report) = self.start(set.kind.label().into(), set.sizes.len(), support) else {
            return;
        };
        let mut best: f64 = 0.0;
        for &size in &set.sizes {
            if self.must_stop(&mut report) {
                break;
            }
            let what = format!("{size} bytes");
            if let Err(e) = self.bench.prepare_transfer(set.kind, size) {
                self.error(&mut report, &what, e);
                self.bench.release();
                continue;
            }
            let bench = &mut *self.bench;
            match measure(&self.plan.transfer_policy, |c| bench.time_transfer(c)) {
                Ok(m) => {
                    let op = Op::Transfer {
                        kind: set.kind,
                        size,
                    };
                    best = best.max(op.bytes() / m.summary.median);
                    self.push(&mut report, op, m);
                }
                Err(e) => self.point_error(&mut report, &what, e),
            }
            self.bench.release();
        }
        (self.log)(format!(
            "{}: {} of {} sizes, best {:.1} GB/s",
            report.name,
            report.measured,
            report.planned,
            best / 1e9
        ));
        self.finish(report);
    }

    fn gemms(&mut self, dtype: Dtype, warmed: &mut bool) {
        let support = self.bench.gemm_support(dtype);
        let planned = self.plan.shapes.len() * self.plan.m_values.len();
        let name = if dtype == plan::output_dtype(dtype) {
            format!("gemm {dtype}")
        } else {
            format!("gemm {dtype} (output {})", output_dtype(dtype))
        };
        let Some(mut report) = self.start(name, planned, support) else {
            return;
        };
        let plan = self.plan;
        let m_max = plan.m_max();
        for shape in &plan.shapes {
            if self.must_stop(&mut report) {
                break;
            }
            let (n, k) = (shape.n, shape.k);
            if let Err(e) = self.bench.prepare_gemm(dtype, n, k, m_max) {
                self.error(&mut report, &format!("n {n} k {k}"), e);
                self.bench.release();
                continue;
            }
            if !*warmed {
                if let Err(e) = self.warm_up(m_max) {
                    self.error(&mut report, "warm-up", e);
                    self.bench.release();
                    continue;
                }
                *warmed = true;
            }
            let started = (self.now)();
            let (mut points, mut best) = (0, (0.0f64, 0));
            for &m in &plan.m_values {
                if self.must_stop(&mut report) {
                    break;
                }
                let bench = &mut *self.bench;
                match measure(&plan.gemm_policy, |c| bench.time_gemm(m, c)) {
                    Ok(meas) => {
                        let op = Op::Gemm { dtype, m, n, k };
                        let rate = op.flops() / meas.summary.median;
                        if rate > best.0 {
                            best = (rate, m);
                        }
                        points += 1;
                        self.push(&mut report, op, meas);
                    }
                    Err(e) => self.point_error(&mut report, &format!("m {m} n {n} k {k}"), e),
                }
                if self.out.fatal.is_some() {
                    break;
                }
            }
            self.bench.release();
            (self.log)(format!(
                "{} n {n} k {k}: {points} points in {:.1} s, best {:.1} TFLOP/s (m {})",
                report.name,
                (self.now)() - started,
                best.0 / 1e12,
                best.1
            ));
        }
        self.finish(report);
    }

    /// Runs the largest GEMM of the prepared shape until `gemm_warmup_s` of GPU time has passed,
    /// in growing batches, to bring clocks up before the first GEMM point.
    fn warm_up(&mut self, m: u64) -> Result<(), BenchError> {
        let (mut spent, mut calls) = (0.0, 1u32);
        for _ in 0..32 {
            if spent >= self.plan.gemm_warmup_s {
                break;
            }
            let t = self.bench.time_gemm(m, calls)?;
            spent += t;
            let per_call = t / f64::from(calls);
            let left = self.plan.gemm_warmup_s - spent;
            calls = ((left / per_call.max(1e-9)).ceil().clamp(1.0, 1000.0)) as u32;
        }
        (self.log)(format!("gemm warm-up: {spent:.2} s of GPU time"));
        Ok(())
    }

    fn push(&mut self, report: &mut SectionReport, op: Op, measurement: Measurement) {
        report.measured += 1;
        self.out.records.push(Record { op, measurement });
    }
}

#[cfg(test)]
pub(crate) mod tests;
