//! What `measure` writes: the profile (schema of `clustersim::hw::profile`, with provenance), the
//! raw measurements as CSV, and a JSON summary of the run.
//!
//! Pure functions from the run's records to text, plus [`write_all`], which only writes the
//! files. The profile keeps the median of each point, rounded to 4 significant digits (the
//! spread between repetitions is typically above 0.1%, so more digits would be noise); the CSV
//! keeps every statistic unrounded.

use super::machine::{RunInfo, driver_api_version, utc_timestamp};
use super::plan::Plan;
use super::stats::Summary;
use super::{LaunchKind, Op, Outcome, Record, Status, Transfer};
use clustersim::hw::Dtype;
use clustersim::hw::gpu;
use clustersim::hw::profile::{GemmSeries, MemorySeries, Profile, Provenance};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// File names inside the output directory.
pub const PROFILE_FILE: &str = "profile.toml";
pub const RAW_FILE: &str = "raw.csv";
pub const SUMMARY_FILE: &str = "run.json";

/// Where the profile's `[memory]` table came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemorySource {
    Elementwise,
    DeviceCopy,
    None,
}

/// `x` rounded to `digits` significant digits.
pub fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// GEMM medians by (format name, n, k): the format and the time at each m.
type GemmTables = BTreeMap<(&'static str, u64, u64), (Dtype, BTreeMap<u64, f64>)>;

/// Which measurements give the profile's `[memory]` table: the elementwise kernel when it was
/// measured (an SM kernel like the norms and activations the table prices), else device copies.
pub fn memory_source(records: &[Record]) -> MemorySource {
    let has = |kind: Transfer| {
        records
            .iter()
            .any(|r| matches!(r.op, Op::Transfer { kind: k, .. } if k == kind))
    };
    if has(Transfer::Elementwise) {
        MemorySource::Elementwise
    } else if has(Transfer::DeviceCopy) {
        MemorySource::DeviceCopy
    } else {
        MemorySource::None
    }
}

/// The profile of the measured GEMMs and memory-bound points, checked by parsing it back.
/// `[memory]` comes from the elementwise kernel when it was measured, else from device copies.
pub fn build_profile(
    gpu_name: &str,
    provenance: Provenance,
    records: &[Record],
) -> Result<(Profile, MemorySource), String> {
    let spec = gpu::find(gpu_name).map_err(|close| {
        format!(
            "unknown GPU \"{gpu_name}\" (closest catalog names: {})",
            close.join(", ")
        )
    })?;
    let mut tables: GemmTables = BTreeMap::new();
    for r in records {
        if let Op::Gemm { dtype, m, n, k } = r.op {
            tables
                .entry((dtype.name(), n, k))
                .or_insert_with(|| (dtype, BTreeMap::new()))
                .1
                .insert(m, round_sig(r.measurement.summary.median, 4));
        }
    }
    let gemm: Vec<GemmSeries> = tables
        .into_iter()
        .map(|((_, n, k), (dtype, by_m))| {
            let (m, time_s) = by_m.into_iter().unzip();
            GemmSeries {
                dtype,
                n,
                k,
                m,
                time_s,
            }
        })
        .collect();
    let series = |kind: Transfer| {
        let points: BTreeMap<u64, f64> = records
            .iter()
            .filter_map(|r| match r.op {
                Op::Transfer { kind: k, size } if k == kind => Some((
                    kind.bytes_moved(size),
                    round_sig(r.measurement.summary.median, 4),
                )),
                _ => None,
            })
            .collect();
        (!points.is_empty()).then(|| {
            let (bytes, time_s) = points.into_iter().unzip();
            MemorySeries { bytes, time_s }
        })
    };
    let source = memory_source(records);
    let memory = match source {
        MemorySource::Elementwise => series(Transfer::Elementwise),
        MemorySource::DeviceCopy => series(Transfer::DeviceCopy),
        MemorySource::None => None,
    };
    if gemm.is_empty() && memory.is_none() {
        return Err(
            "nothing a profile holds was measured (no GEMM, no memory-bound kernel)".into(),
        );
    }
    let profile = Profile {
        gpu: &spec.name,
        provenance,
        gemm,
        memory,
        attention: Vec::new(),
        elementwise: Vec::new(),
    };
    let checked =
        Profile::parse(&profile.to_toml(), "the measured profile").map_err(|e| e.to_string())?;
    Ok((checked, source))
}

/// The provenance block of a measured profile.
pub fn provenance(
    info: &RunInfo,
    plan: &Plan,
    outcome: &Outcome,
    memory: MemorySource,
) -> Provenance {
    let gib = info.memory_bytes as f64 / (1u64 << 30) as f64;
    let l2 = info
        .l2_bytes
        .map(|b| format!(", L2 {} MiB", b >> 20))
        .unwrap_or_default();
    let device = format!(
        "{} (compute capability {}.{}, {} SMs, {gib:.1} GiB{l2}); device {} of {} visible to the \
         process",
        info.device_name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.sm_count,
        info.device_index,
        info.device_count
    );
    let api = format!(
        "CUDA driver API {} (cuDriverGetVersion {})",
        driver_api_version(info.driver_api),
        info.driver_api
    );
    let driver = match &info.kernel_module {
        Some(v) => format!("{v}; {api}"),
        None => format!("{api}; kernel module version not read (/proc/driver/nvidia/version)"),
    };
    let lib = |name: &str, v: &Option<String>| match v {
        Some(v) => format!("{name} {v}"),
        None => format!("{name} not loaded"),
    };
    let cuda = format!(
        "{}, {} (as loaded at run time); {api}; cudarc 0.19 bindings for CUDA 13.0",
        lib("cuBLAS", &info.cublas),
        lib("cuBLASLt", &info.cublaslt)
    );
    let mhz = |khz: Option<u32>| match khz {
        Some(k) => format!("{} MHz", k / 1000),
        None => "not reported".to_string(),
    };
    let clocks = format!(
        "not locked by this tool (whatever the machine was set to); the driver reports peak SM \
         clock {}, memory clock {}",
        mhz(info.max_sm_clock_khz),
        mhz(info.memory_clock_khz)
    );
    let tool = format!(
        "clustersim-calibrate {} ({}), command: {}",
        info.tool_version,
        if plan.quick {
            "quick plan"
        } else {
            "full plan"
        },
        info.command
    );
    let g = &plan.gemm_policy;
    let memory_text = match memory {
        MemorySource::Elementwise => {
            "[memory]: the fp32 elementwise add c = a + b (one float4 per thread), bytes = 3 x \
             buffer size (two read, one written)"
        }
        MemorySource::DeviceCopy => {
            "[memory]: device-to-device copies (cuMemcpyDtoDAsync), bytes = 2 x buffer size (read \
             and written)"
        }
        MemorySource::None => "[memory]: not measured",
    };
    let method = format!(
        "GPU time between two CUDA events (cuEventElapsedTime) around a batch of back-to-back calls \
         on one stream, the batch queued behind a spin kernel so that the host has submitted it \
         all before the GPU starts it; per point a warm-up of at least {} calls and {:.0} ms \
         (discarded), then {} timed batches (at least {}; fewer only when the point would take \
         over {:.2} s), each of enough calls to last {:.1} ms (at most {}); per-call time = batch \
         time / calls; the profile keeps the median, rounded to 4 significant digits (raw.csv has \
         min, p10, p90, max, mean). {:.1} s of the largest GEMM ran first to bring clocks up. \
         GEMMs C = A B^T as a linear layer computes it (A: m x k activations, B: n x k weights, \
         both row-major; cuBLAS column-major TN), alpha 1, beta 0, random inputs of magnitude \
         2^-8 to 1: bf16 and fp16 through cublasGemmEx with fp32 accumulation \
         (CUBLAS_COMPUTE_32F), tf32 as fp32 data with CUBLAS_COMPUTE_32F_FAST_TF32, fp8 as e4m3 \
         inputs with bf16 output through cublasLtMatmul (fp32 accumulation, no fast \
         accumulation, unit scales, the heuristic's first algorithm); the weight cycles through \
         copies spanning at least 4 times the L2 cache so that it is read from device memory as \
         in a model's forward pass, the activations are not flushed. {memory_text}. {} of {} \
         planned points measured{}{}.",
        g.warmup_calls,
        g.warmup_s * 1e3,
        g.reps,
        g.min_reps,
        g.point_budget_s,
        g.target_batch_s * 1e3,
        g.max_batch,
        plan.gemm_warmup_s,
        outcome.records.len(),
        plan.points(),
        if outcome.out_of_time {
            "; the time budget ran out before the plan was done"
        } else {
            ""
        },
        match &outcome.fatal {
            Some(f) => format!("; stopped by an error in {f}"),
            None => String::new(),
        }
    );
    let gemm_points = outcome
        .records
        .iter()
        .filter(|r| matches!(r.op, Op::Gemm { .. }))
        .count();
    let source = format!(
        "measured by clustersim-calibrate on {} on {} ({gemm_points} GEMM points); not \
         validated against whole layers yet",
        info.device_name,
        utc_timestamp(info.started_unix_s)
    );
    Provenance {
        device,
        driver,
        cuda,
        clocks,
        date: utc_timestamp(info.started_unix_s),
        tool,
        method,
        source,
    }
}

/// The header of [`raw_csv`].
pub const CSV_HEADER: &str = "section,dtype,m,n,k,size_bytes,bytes_moved,flop,calls_per_sample,\
                              samples,warmup_calls,median_s,min_s,p10_s,p90_s,max_s,mean_s,\
                              spread,tflops,gbps,uses";

/// Every record, one line each, unrounded; `uses` names the layers of a GEMM's weight shape.
pub fn raw_csv(records: &[Record], plan: &Plan) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in records {
        let s: &Summary = &r.measurement.summary;
        let (dtype, m, n, k, size, uses) = match r.op {
            Op::Gemm { dtype, m, n, k } => {
                let uses = plan
                    .shapes
                    .iter()
                    .find(|s| s.n == n && s.k == k)
                    .map(|s| s.uses.join(";"))
                    .unwrap_or_default();
                (
                    dtype.name().to_string(),
                    m.to_string(),
                    n.to_string(),
                    k.to_string(),
                    String::new(),
                    uses,
                )
            }
            Op::Transfer { size, .. } => (
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                size.to_string(),
                String::new(),
            ),
            Op::Launch(_) => Default::default(),
        };
        let (flop, bytes) = (r.op.flops(), r.op.bytes());
        let rate = |x: f64, unit: f64| {
            if x > 0.0 {
                format!("{:.3}", x / s.median / unit)
            } else {
                String::new()
            }
        };
        let count = |x: f64| {
            if x > 0.0 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            out,
            "{},{dtype},{m},{n},{k},{size},{},{},{},{},{},{:e},{:e},{:e},{:e},{:e},{:e},{:.4},{},{},{uses}",
            r.op.section(),
            count(bytes),
            count(flop),
            r.measurement.calls_per_sample,
            s.samples,
            r.measurement.warmup_calls,
            s.median,
            s.min,
            s.p10,
            s.p90,
            s.max,
            s.mean,
            s.spread(),
            rate(flop, 1e12),
            rate(bytes, 1e9),
        );
    }
    out
}

/// The run as one JSON object: machine, plan, sections, headline figures and files.
pub fn summary_json(
    info: &RunInfo,
    plan: &Plan,
    outcome: &Outcome,
    catalog: Option<&str>,
    files: &[String],
    profile_error: Option<&str>,
) -> String {
    let launch: serde_json::Map<String, serde_json::Value> = outcome
        .records
        .iter()
        .filter_map(|r| match r.op {
            Op::Launch(kind) => Some((
                format!("{}_us", kind.name()),
                json!(r.measurement.summary.median * 1e6),
            )),
            _ => None,
        })
        .collect();
    let mut best_bw: BTreeMap<&str, f64> = BTreeMap::new();
    let mut best_flops: BTreeMap<&str, f64> = BTreeMap::new();
    for r in &outcome.records {
        let median = r.measurement.summary.median;
        match r.op {
            Op::Transfer { kind, .. } => {
                let e = best_bw.entry(kind.name()).or_default();
                *e = e.max(r.op.bytes() / median / 1e9);
            }
            Op::Gemm { dtype, .. } => {
                let e = best_flops.entry(dtype.name()).or_default();
                *e = e.max(r.op.flops() / median / 1e12);
            }
            Op::Launch(_) => {}
        }
    }
    let sections: Vec<serde_json::Value> = outcome
        .sections
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "status": s.status.name(),
                "planned": s.planned,
                "measured": s.measured,
                "notes": s.notes,
            })
        })
        .collect();
    let value = json!({
        "tool": format!("clustersim-calibrate {}", info.tool_version),
        "command": info.command,
        "started": utc_timestamp(info.started_unix_s),
        "elapsed_s": outcome.elapsed_s,
        "plan": if plan.quick { "quick" } else { "full" },
        "device": {
            "index": info.device_index,
            "count": info.device_count,
            "name": info.device_name,
            "catalog_gpu": catalog,
            "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            "sm_count": info.sm_count,
            "memory_bytes": info.memory_bytes,
            "l2_bytes": info.l2_bytes,
            "max_sm_clock_khz": info.max_sm_clock_khz,
            "memory_clock_khz": info.memory_clock_khz,
            "driver_api": driver_api_version(info.driver_api),
            "kernel_module": info.kernel_module,
            "cublas": info.cublas,
            "cublaslt": info.cublaslt,
        },
        "complete": outcome.fatal.is_none() && !outcome.out_of_time
            && outcome.sections.iter().all(|s| matches!(s.status, Status::Complete | Status::Skipped)),
        "fatal": outcome.fatal,
        "out_of_time": outcome.out_of_time,
        "points": outcome.records.len(),
        "planned_points": plan.points(),
        "launch": launch,
        "best_gbps": best_bw,
        "best_tflops": best_flops,
        "sections": sections,
        "profile_error": profile_error,
        "files": files,
    });
    let mut text = serde_json::to_string_pretty(&value).expect("plain JSON values serialize");
    text.push('\n');
    text
}

/// The human summary printed at the end of a run.
pub fn summary_text(outcome: &Outcome, files: &[String]) -> String {
    let mut out = String::new();
    for s in &outcome.sections {
        let _ = writeln!(
            out,
            "{:<32} {:<9} {:>5} of {:<5} points",
            s.name,
            s.status.name(),
            s.measured,
            s.planned
        );
        for note in s.notes.iter().take(3) {
            let _ = writeln!(out, "    {note}");
        }
    }
    let median = |kind: LaunchKind| {
        outcome
            .records
            .iter()
            .find(|r| r.op == Op::Launch(kind))
            .map(|r| r.measurement.summary.median * 1e6)
    };
    if let (Some(b), Some(h), Some(s)) = (
        median(LaunchKind::BackToBack),
        median(LaunchKind::HostSubmit),
        median(LaunchKind::Single),
    ) {
        let _ = writeln!(
            out,
            "launch overhead: {b:.2} us per kernel back to back, {h:.2} us host submission, \
             {s:.2} us for a lone kernel"
        );
    }
    let _ = writeln!(
        out,
        "{} points in {:.0} s",
        outcome.records.len(),
        outcome.elapsed_s
    );
    for f in files {
        let _ = writeln!(out, "wrote {f}");
    }
    out
}

/// Writes `(name, text)` files into `dir` (created if needed); returns the paths written.
pub fn write_all(dir: &Path, files: &[(&str, &str)]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{FakeGpu, run_fake, small_plan};
    use super::*;
    use clustersim::hw::{ComputeModel, ComputeTier, Kernel};

    fn info() -> RunInfo {
        RunInfo {
            tool_version: "0.1.0".into(),
            command: "clustersim-calibrate measure --out x --quick".into(),
            started_unix_s: 1_795_000_000,
            device_index: 0,
            device_count: 1,
            device_name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            memory_bytes: 150_000_000_000,
            l2_bytes: Some(60 << 20),
            max_sm_clock_khz: Some(1_980_000),
            memory_clock_khz: Some(3_201_000),
            driver_api: 13000,
            kernel_module: Some("580.159.03".into()),
            cublas: Some("13.1.0".into()),
            cublaslt: None,
        }
    }

    #[test]
    fn rounding() {
        assert_eq!(round_sig(1.23456e-5, 4), 1.235e-5);
        assert_eq!(round_sig(9.99951, 4), 10.0);
        assert_eq!(round_sig(0.0, 4), 0.0);
        assert_eq!(round_sig(123456.0, 2), 120000.0);
    }

    #[test]
    fn a_fake_run_becomes_a_valid_profile_that_prices_its_points() {
        let plan = small_plan();
        let mut fake = FakeGpu::new();
        let (outcome, _) = run_fake(&plan, &mut fake);
        let prov = provenance(&info(), &plan, &outcome, MemorySource::Elementwise);
        let (profile, source) = build_profile("H200", prov, &outcome.records).unwrap();
        assert_eq!(source, MemorySource::Elementwise);
        assert_eq!(profile.gpu, "H200-SXM-141GB");
        // Two shapes in three formats, three m each.
        assert_eq!(profile.gemm.len(), 6);
        assert!(profile.gemm.iter().all(|g| g.m == [1, 64, 4096]));
        let dtypes: Vec<Dtype> = profile.gemm.iter().map(|g| g.dtype).collect();
        assert!(dtypes.contains(&Dtype::Fp8) && dtypes.contains(&Dtype::Bf16));
        let mem = profile.memory.as_ref().unwrap();
        assert_eq!(mem.bytes, [3 << 20, 3 << 26]);
        // The simulator's profile tier prices a measured GEMM at its (rounded) median.
        let gpu = profile.gpu_spec();
        let model = ComputeModel::with_profile(gpu, profile.clone()).unwrap();
        let r = outcome
            .records
            .iter()
            .find(|r| {
                matches!(
                    r.op,
                    Op::Gemm {
                        dtype: Dtype::Bf16,
                        m: 64,
                        ..
                    }
                )
            })
            .unwrap();
        let Op::Gemm { m, n, k, dtype } = r.op else {
            unreachable!()
        };
        let cost = model
            .cost(&Kernel::Gemm {
                m,
                n,
                k,
                batch: 1,
                dtype,
            })
            .unwrap();
        assert_eq!(cost.tier, ComputeTier::Profile);
        assert_eq!(cost.seconds, round_sig(r.measurement.summary.median, 4));
        // Provenance says what the machine and method were.
        let p = &profile.provenance;
        assert!(
            p.device.contains("NVIDIA H200") && p.device.contains("132 SMs"),
            "{}",
            p.device
        );
        assert!(
            p.driver.starts_with("580.159.03; CUDA driver API 13.0"),
            "{}",
            p.driver
        );
        assert!(p.cuda.contains("cuBLAS 13.1.0") && p.cuda.contains("cuBLASLt not loaded"));
        assert!(p.clocks.contains("1980 MHz") && p.clocks.contains("not locked"));
        assert_eq!(p.date, "2026-11-18T11:06:40Z");
        assert!(p.tool.contains("measure --out x --quick"), "{}", p.tool);
        assert!(
            p.method.contains("CUDA events") && p.method.contains("median"),
            "{}",
            p.method
        );
        assert!(p.method.contains("elementwise add"), "{}", p.method);
    }

    #[test]
    fn memory_falls_back_to_copies_and_an_empty_run_has_no_profile() {
        let plan = small_plan();
        let mut fake = FakeGpu::new();
        let (outcome, _) = run_fake(&plan, &mut fake);
        let copies_only: Vec<Record> = outcome
            .records
            .iter()
            .filter(|r| {
                matches!(
                    r.op,
                    Op::Transfer {
                        kind: Transfer::DeviceCopy,
                        ..
                    }
                )
            })
            .cloned()
            .collect();
        let prov = provenance(&info(), &plan, &outcome, MemorySource::DeviceCopy);
        let (p, source) = build_profile("H200", prov.clone(), &copies_only).unwrap();
        assert_eq!(source, MemorySource::DeviceCopy);
        assert!(p.gemm.is_empty());
        assert_eq!(p.memory.unwrap().bytes, [2 << 20, 2 << 26]);
        let launches_only: Vec<Record> = outcome
            .records
            .iter()
            .filter(|r| matches!(r.op, Op::Launch(_)))
            .cloned()
            .collect();
        assert!(build_profile("H200", prov.clone(), &launches_only).is_err());
        assert!(
            build_profile("no such gpu", prov, &copies_only)
                .unwrap_err()
                .contains("unknown GPU")
        );
    }

    #[test]
    fn csv_has_one_line_per_record_and_consistent_columns() {
        let plan = small_plan();
        let mut fake = FakeGpu::new();
        let (outcome, _) = run_fake(&plan, &mut fake);
        let csv = raw_csv(&outcome.records, &plan);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), outcome.records.len() + 1);
        let columns = CSV_HEADER.split(',').count();
        assert_eq!(columns, 21);
        for line in &lines {
            assert_eq!(line.split(',').count(), columns, "{line}");
        }
        let header: Vec<&str> = lines[0].split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let gemm = lines
            .iter()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|f| f[0] == "gemm" && f[col("m")] == "4096")
            .unwrap();
        let median: f64 = gemm[col("median_s")].parse().unwrap();
        let flop: f64 = gemm[col("flop")].parse().unwrap();
        let tflops: f64 = gemm[col("tflops")].parse().unwrap();
        assert!((flop / median / 1e12 - tflops).abs() < 1e-3 * tflops.max(1.0));
        assert!(!gemm[col("uses")].is_empty());
        let launch = lines
            .iter()
            .find(|l| l.starts_with("launch_single,"))
            .unwrap();
        assert!(
            launch
                .split(',')
                .nth(col("median_s"))
                .unwrap()
                .parse::<f64>()
                .is_ok()
        );
    }

    #[test]
    fn json_summary_and_text() {
        let plan = small_plan();
        let mut fake = FakeGpu::new();
        fake.no_fp8 = true;
        let (outcome, _) = run_fake(&plan, &mut fake);
        let files = vec!["out/profile.toml".to_string()];
        let text = summary_json(
            &info(),
            &plan,
            &outcome,
            Some("H200-SXM-141GB"),
            &files,
            None,
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["plan"], "quick");
        assert_eq!(v["device"]["catalog_gpu"], "H200-SXM-141GB");
        assert_eq!(v["complete"], true);
        assert!((v["launch"]["launch_back_to_back_us"].as_f64().unwrap() - 2.0).abs() < 1e-9);
        assert!(v["best_tflops"]["bf16"].as_f64().unwrap() > 100.0);
        assert!(v["best_gbps"]["device_to_host"].as_f64().unwrap() > 10.0);
        let fp8 = v["sections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str().unwrap().starts_with("gemm fp8"))
            .unwrap();
        assert_eq!(fp8["status"], "skipped");
        let human = summary_text(&outcome, &files);
        assert!(human.contains("launch overhead: 2.00 us"), "{human}");
        assert!(human.contains("wrote out/profile.toml"), "{human}");
    }

    #[test]
    fn files_are_written_into_a_new_directory() {
        let dir = std::env::temp_dir().join(format!("calibrate-write-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let nested = dir.join("a").join("b");
        let written = write_all(&nested, &[("x.txt", "hello"), ("y.csv", "a,b\n")]).unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(
            std::fs::read_to_string(nested.join("x.txt")).unwrap(),
            "hello"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
