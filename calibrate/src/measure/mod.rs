//! `measure`: micro-benchmarks of one GPU, turned into a clustersim calibration profile.
//!
//! The work is split so that everything but the CUDA calls is plain Rust, tested without a GPU:
//!
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

pub mod gpu;
pub mod machine;
pub mod output;
pub mod plan;
pub mod stats;

use clustersim::hw::Dtype;
use plan::{Plan, output_dtype};
use stats::{MeasureError, Measurement, RepPolicy, measure};

/// A bandwidth-bound operation measured over buffer sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transfer {
    /// `cuMemcpyDtoDAsync` between two buffers on the GPU.
    DeviceCopy,
    /// `c = a + b` over fp32, one float4 per thread (a kernel of the PTX module).
    Elementwise,
    /// `cuMemcpyHtoDAsync` from pinned (page-locked) host memory.
    HostToDevice,
    /// `cuMemcpyDtoHAsync` into pinned host memory.
    DeviceToHost,
}

impl Transfer {
    /// Short name, as the CSV and JSON write it.
    pub fn name(self) -> &'static str {
        match self {
            Transfer::DeviceCopy => "device_copy",
            Transfer::Elementwise => "elementwise_add",
            Transfer::HostToDevice => "host_to_device",
            Transfer::DeviceToHost => "device_to_host",
        }
    }

    /// What it is, for people.
    pub fn label(self) -> &'static str {
        match self {
            Transfer::DeviceCopy => "device-to-device copy",
            Transfer::Elementwise => "elementwise add (fp32)",
            Transfer::HostToDevice => "host-to-device copy (pinned)",
            Transfer::DeviceToHost => "device-to-host copy (pinned)",
        }
    }

    /// Bytes moved for buffers of `size` bytes: read plus written in device memory for the
    /// on-device kinds (a copy reads and writes `size`; the add reads two and writes one), the
    /// bytes crossing the link for host copies.
    pub fn bytes_moved(self, size: u64) -> u64 {
        match self {
            Transfer::DeviceCopy => 2 * size,
            Transfer::Elementwise => 3 * size,
            Transfer::HostToDevice | Transfer::DeviceToHost => size,
        }
    }
}

/// One transfer kind and its buffer sizes (bytes), in order.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferSet {
    pub kind: Transfer,
    pub sizes: Vec<u64>,
}

impl TransferSet {
    pub fn new(kind: Transfer, sizes: Vec<u64>) -> Self {
        TransferSet { kind, sizes }
    }
}

/// The three launch-overhead figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchKind {
    /// GPU time per empty kernel in a long back-to-back sequence that the host enqueued ahead
    /// (events around the sequence, divided by its length).
    BackToBack,
    /// Host (CPU) time to submit one launch, in the same sequences (wall clock).
    HostSubmit,
    /// Events around one empty kernel launched alone: what a lone kernel costs, submission
    /// latency included.
    Single,
}

impl LaunchKind {
    pub fn name(self) -> &'static str {
        match self {
            LaunchKind::BackToBack => "launch_back_to_back",
            LaunchKind::HostSubmit => "launch_host_submit",
            LaunchKind::Single => "launch_single",
        }
    }
}

/// What one measurement timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// C (m x n) = A (m x k) B (k x n), B being the weight (see [`gpu`] for the layout).
    Gemm {
        dtype: Dtype,
        m: u64,
        n: u64,
        k: u64,
    },
    /// A transfer over buffers of `size` bytes.
    Transfer {
        kind: Transfer,
        size: u64,
    },
    Launch(LaunchKind),
}

impl Op {
    /// Floating-point operations per call (a multiply-add counts two).
    pub fn flops(&self) -> f64 {
        match *self {
            Op::Gemm { m, n, k, .. } => 2.0 * m as f64 * n as f64 * k as f64,
            Op::Transfer {
                kind: Transfer::Elementwise,
                size,
            } => (size / 4) as f64,
            _ => 0.0,
        }
    }

    /// Bytes read and written per call (for a GEMM, each operand once).
    pub fn bytes(&self) -> f64 {
        match *self {
            Op::Gemm { dtype, m, n, k } => plan::gemm_bytes(dtype, m, n, k) as f64,
            Op::Transfer { kind, size } => kind.bytes_moved(size) as f64,
            Op::Launch(_) => 0.0,
        }
    }

    /// The section it belongs to, as the CSV writes it ("gemm", "device_copy", ...).
    pub fn section(&self) -> &'static str {
        match self {
            Op::Gemm { .. } => "gemm",
            Op::Transfer { kind, .. } => kind.name(),
            Op::Launch(kind) => kind.name(),
        }
    }
}

/// One measured point.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub op: Op,
    pub measurement: Measurement,
}

/// A failed call: `fatal` when the GPU can no longer be trusted (a driver error other than
/// running out of memory), so that the run stops; otherwise only that point or shape is skipped.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchError {
    pub fatal: bool,
    pub message: String,
}

impl BenchError {
    pub fn fatal(message: impl Into<String>) -> Self {
        BenchError {
            fatal: true,
            message: message.into(),
        }
    }

    pub fn skip(message: impl Into<String>) -> Self {
        BenchError {
            fatal: false,
            message: message.into(),
        }
    }
}

/// What the run needs from a GPU. Times are seconds of GPU time between two CUDA events unless
/// said otherwise; `calls` invocations run back to back between the events.
pub trait Bench {
    /// Ok when GEMMs in `dtype` can be measured, else why not.
    fn gemm_support(&self, dtype: Dtype) -> Result<(), String>;
    /// Ok when `kind` can be measured, else why not.
    fn transfer_support(&self, kind: Transfer) -> Result<(), String>;
    /// Ok when launch overhead can be measured, else why not.
    fn launch_support(&self) -> Result<(), String>;
    /// Allocates and fills operands for GEMMs of weight shape (n, k) with up to `m_max` rows.
    fn prepare_gemm(&mut self, dtype: Dtype, n: u64, k: u64, m_max: u64) -> Result<(), BenchError>;
    /// Times `calls` GEMMs of `m` rows on the prepared operands.
    fn time_gemm(&mut self, m: u64, calls: u32) -> Result<f64, BenchError>;
    /// Allocates the buffers of one transfer of `size` bytes.
    fn prepare_transfer(&mut self, kind: Transfer, size: u64) -> Result<(), BenchError>;
    /// Times `calls` of the prepared transfer.
    fn time_transfer(&mut self, calls: u32) -> Result<f64, BenchError>;
    /// Times `calls` empty kernels enqueued ahead: (GPU seconds, host seconds spent submitting).
    fn time_launches(&mut self, calls: u32) -> Result<(f64, f64), BenchError>;
    /// Times one empty kernel between two events, nothing enqueued ahead.
    fn time_single_launch(&mut self) -> Result<f64, BenchError>;
    /// Frees what the last prepare allocated.
    fn release(&mut self);
}

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
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A GPU that follows a roofline exactly (with a 4 us floor), advancing a shared fake clock
    /// by the GPU time it reports plus 1 ms per timed batch.
    pub(crate) struct FakeGpu {
        pub clock: Rc<Cell<f64>>,
        pub flops: f64,
        pub bandwidth: f64,
        pub link: f64,
        pub no_fp8: bool,
        /// Fail (not fatally) every GEMM with this m.
        pub bad_m: Option<u64>,
        /// A fatal error at this GEMM call count.
        pub fatal_at: Option<u64>,
        pub gemm: Option<(Dtype, u64, u64)>,
        pub transfer: Option<(Transfer, u64)>,
        pub gemm_calls: u64,
        pub prepared: Vec<String>,
        pub released: usize,
    }

    impl FakeGpu {
        pub(crate) fn new() -> Self {
            FakeGpu {
                clock: Rc::new(Cell::new(0.0)),
                flops: 700e12,
                bandwidth: 4e12,
                link: 50e9,
                no_fp8: false,
                bad_m: None,
                fatal_at: None,
                gemm: None,
                transfer: None,
                gemm_calls: 0,
                prepared: Vec::new(),
                released: 0,
            }
        }

        fn tick(&self, gpu: f64) -> f64 {
            self.clock.set(self.clock.get() + gpu + 1e-3);
            gpu
        }
    }

    impl Bench for FakeGpu {
        fn gemm_support(&self, dtype: Dtype) -> Result<(), String> {
            match dtype {
                Dtype::Fp8 if self.no_fp8 => {
                    Err("no fp8 tensor cores (compute capability 8.0)".into())
                }
                Dtype::Int8 | Dtype::Int4 | Dtype::Fp32 => Err("not in this tool".into()),
                _ => Ok(()),
            }
        }
        fn transfer_support(&self, _: Transfer) -> Result<(), String> {
            Ok(())
        }
        fn launch_support(&self) -> Result<(), String> {
            Ok(())
        }
        fn prepare_gemm(&mut self, dtype: Dtype, n: u64, k: u64, _: u64) -> Result<(), BenchError> {
            self.prepared.push(format!("{dtype} {n} {k}"));
            self.gemm = Some((dtype, n, k));
            Ok(())
        }
        fn time_gemm(&mut self, m: u64, calls: u32) -> Result<f64, BenchError> {
            self.gemm_calls += 1;
            if self.fatal_at == Some(self.gemm_calls) {
                return Err(BenchError::fatal("CUDA_ERROR_ILLEGAL_ADDRESS"));
            }
            if self.bad_m == Some(m) {
                return Err(BenchError::skip("CUBLAS_STATUS_NOT_SUPPORTED"));
            }
            let (dtype, n, k) = self.gemm.expect("prepared");
            let op = Op::Gemm { dtype, m, n, k };
            let t = (op.flops() / self.flops)
                .max(op.bytes() / self.bandwidth)
                .max(4e-6);
            Ok(self.tick(t * f64::from(calls)))
        }
        fn prepare_transfer(&mut self, kind: Transfer, size: u64) -> Result<(), BenchError> {
            self.transfer = Some((kind, size));
            Ok(())
        }
        fn time_transfer(&mut self, calls: u32) -> Result<f64, BenchError> {
            let (kind, size) = self.transfer.expect("prepared");
            let rate = match kind {
                Transfer::DeviceCopy | Transfer::Elementwise => self.bandwidth,
                _ => self.link,
            };
            let t = (kind.bytes_moved(size) as f64 / rate).max(4e-6);
            Ok(self.tick(t * f64::from(calls)))
        }
        fn time_launches(&mut self, calls: u32) -> Result<(f64, f64), BenchError> {
            Ok((self.tick(2e-6 * f64::from(calls)), 3e-6 * f64::from(calls)))
        }
        fn time_single_launch(&mut self) -> Result<f64, BenchError> {
            Ok(self.tick(6e-6))
        }
        fn release(&mut self) {
            self.gemm = None;
            self.transfer = None;
            self.released += 1;
        }
    }

    /// A small plan: two shapes, three m, two sizes per transfer kind.
    pub(crate) fn small_plan() -> Plan {
        let mut plan = Plan::quick();
        plan.shapes.truncate(2);
        plan.m_values = vec![1, 64, 4096];
        for set in &mut plan.transfers {
            set.sizes = vec![1 << 20, 1 << 26];
        }
        plan.gemm_warmup_s = 0.01;
        plan
    }

    pub(crate) fn run_fake(plan: &Plan, gpu: &mut FakeGpu) -> (Outcome, Vec<String>) {
        let clock = gpu.clock.clone();
        let mut lines = Vec::new();
        let out = run(plan, gpu, &|| clock.get(), &mut |l| lines.push(l));
        (out, lines)
    }

    #[test]
    fn a_full_small_run_measures_every_point() {
        let plan = small_plan();
        let mut gpu = FakeGpu::new();
        let (out, lines) = run_fake(&plan, &mut gpu);
        assert_eq!(out.fatal, None);
        assert!(!out.out_of_time);
        let names: Vec<&str> = out.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "launch overhead",
                "device-to-device copy",
                "elementwise add (fp32)",
                "host-to-device copy (pinned)",
                "device-to-host copy (pinned)",
                "gemm bf16",
                "gemm fp16",
                "gemm fp8 (output bf16)"
            ]
        );
        assert!(
            out.sections.iter().all(|s| s.status == Status::Complete),
            "{:?}",
            out.sections
        );
        assert_eq!(out.records.len(), 3 + 4 * 2 + 3 * 2 * 3);
        // Launch figures: 2 us back to back, 3 us host, 6 us alone.
        let launch = |kind| {
            out.records
                .iter()
                .find(|r| r.op == Op::Launch(kind))
                .unwrap()
                .measurement
                .summary
                .median
        };
        assert!((launch(LaunchKind::BackToBack) - 2e-6).abs() < 1e-12);
        assert!((launch(LaunchKind::HostSubmit) - 3e-6).abs() < 1e-12);
        assert!((launch(LaunchKind::Single) - 6e-6).abs() < 1e-12);
        // A large GEMM is timed at the fake's roofline.
        let (n, k) = (plan.shapes[0].n, plan.shapes[0].k);
        let big = out
            .records
            .iter()
            .find(|r| {
                r.op == Op::Gemm {
                    dtype: Dtype::Bf16,
                    m: 4096,
                    n,
                    k,
                }
            })
            .unwrap();
        let expect = 2.0 * 4096.0 * n as f64 * k as f64 / 700e12;
        assert!(
            (big.measurement.summary.median / expect.max(4e-6) - 1.0).abs() < 1e-9,
            "{big:?}"
        );
        // Every prepare is released.
        assert_eq!(gpu.released, 4 * 2 + 3 * 2);
        assert!(
            lines.iter().any(|l| l.starts_with("gemm warm-up")),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.contains("TFLOP/s")), "{lines:?}");
    }

    #[test]
    fn unsupported_formats_and_failing_points_are_skipped_with_reasons() {
        let plan = small_plan();
        let mut gpu = FakeGpu::new();
        gpu.no_fp8 = true;
        gpu.bad_m = Some(64);
        let (out, _) = run_fake(&plan, &mut gpu);
        assert_eq!(out.fatal, None);
        let fp8 = out
            .sections
            .iter()
            .find(|s| s.name.starts_with("gemm fp8"))
            .unwrap();
        assert_eq!(fp8.status, Status::Skipped);
        assert!(fp8.notes[0].contains("compute capability 8.0"), "{fp8:?}");
        let bf16 = out.sections.iter().find(|s| s.name == "gemm bf16").unwrap();
        assert_eq!(bf16.status, Status::Partial);
        assert_eq!(bf16.measured, 4);
        assert!(
            bf16.notes
                .iter()
                .all(|n| n.contains("m 64") && n.contains("NOT_SUPPORTED"))
        );
        assert!(
            !out.records
                .iter()
                .any(|r| matches!(r.op, Op::Gemm { m: 64, .. }))
        );
    }

    #[test]
    fn a_fatal_error_stops_the_run_and_keeps_what_was_measured() {
        let plan = small_plan();
        let mut gpu = FakeGpu::new();
        gpu.fatal_at = Some(40);
        let (out, _) = run_fake(&plan, &mut gpu);
        let fatal = out.fatal.as_deref().unwrap();
        assert!(fatal.contains("ILLEGAL_ADDRESS"), "{fatal}");
        let failed: Vec<&SectionReport> = out
            .sections
            .iter()
            .filter(|s| s.status == Status::Failed)
            .collect();
        assert_eq!(failed.len(), 1);
        // Sections after it are skipped, saying why; what came before is kept.
        let after = out
            .sections
            .iter()
            .skip_while(|s| s.status != Status::Failed)
            .skip(1);
        for s in after {
            assert_eq!(s.status, Status::Skipped);
            assert!(s.notes[0].contains("earlier error"), "{s:?}");
        }
        assert!(
            out.records
                .iter()
                .any(|r| matches!(r.op, Op::Transfer { .. }))
        );
    }

    #[test]
    fn the_time_budget_stops_new_points() {
        let mut plan = small_plan();
        // The whole run takes about 0.3 s of fake time (1 ms per timed batch): cut it.
        plan.budget_s = 0.12;
        let mut gpu = FakeGpu::new();
        let (out, _) = run_fake(&plan, &mut gpu);
        assert!(out.out_of_time);
        assert_eq!(out.fatal, None);
        let last = out.sections.last().unwrap();
        assert_eq!(last.status, Status::Skipped);
        assert!(last.notes[0].contains("time budget"), "{last:?}");
        assert!(
            out.sections
                .iter()
                .any(|s| s.notes.iter().any(|n| n.contains("time budget")))
        );
        assert!(out.elapsed_s >= 0.12);
    }

    #[test]
    fn op_accounting() {
        let g = Op::Gemm {
            dtype: Dtype::Bf16,
            m: 2,
            n: 3,
            k: 4,
        };
        assert_eq!(g.flops(), 48.0);
        assert_eq!(g.bytes(), (2.0 * 4.0 + 4.0 * 3.0 + 2.0 * 3.0) * 2.0);
        assert_eq!(g.section(), "gemm");
        let add = Op::Transfer {
            kind: Transfer::Elementwise,
            size: 1024,
        };
        assert_eq!((add.flops(), add.bytes()), (256.0, 3072.0));
        let h2d = Op::Transfer {
            kind: Transfer::HostToDevice,
            size: 1024,
        };
        assert_eq!(
            (h2d.flops(), h2d.bytes(), h2d.section()),
            (0.0, 1024.0, "host_to_device")
        );
        assert_eq!(Transfer::DeviceCopy.bytes_moved(10), 20);
        assert_eq!(Op::Launch(LaunchKind::Single).section(), "launch_single");
    }
}
