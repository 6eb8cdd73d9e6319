//! The run, driven by a fake GPU that follows a roofline on a fake clock.

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
            Dtype::Fp8 if self.no_fp8 => Err("no fp8 tensor cores (compute capability 8.0)".into()),
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
