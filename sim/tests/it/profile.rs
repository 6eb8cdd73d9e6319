//! Calibration profiles (`hw::profile`): interpolation, the file format and its errors, the
//! compute model's tiers, and `[cluster] profile` in scenarios.

use std::path::{Path, PathBuf};

use clustersim::Scenario;
use clustersim::exec::{Graph, Op, OpKind};
use clustersim::hw::attention_series::AttentionSeries;
use clustersim::hw::profile::{self, ElementwiseSeries, GemmSeries, MemorySeries, Provenance};
use clustersim::hw::{ComputeModel, ComputeTier, Dtype, ElementwiseOp, Kernel, Pass, Profile, gpu};
use clustersim::report::training::TrainingReport;
use clustersim::report::typed::TypedReport;
use clustersim::scenario::error::{Location, ScenarioError};
use clustersim::workload::training;

fn h100() -> &'static clustersim::hw::GpuSpec {
    gpu::find("H100-SXM5-80GB").unwrap()
}

fn provenance() -> Provenance {
    Provenance {
        device: "NVIDIA H100 80GB HBM3".into(),
        driver: "550.54.15".into(),
        cuda: "12.4, cuBLAS 12.4.5".into(),
        clocks: "application clocks 1980 MHz SM, 2619 MHz memory".into(),
        date: "2025-01-01".into(),
        tool: "hand-written test data".into(),
        method: "none: invented numbers \"for tests\"\nsecond line".into(),
        source: "sim/tests/it/profile.rs".into(),
    }
}

/// A small profile: two GEMM weight shapes in fp16 and a memory table.
fn small() -> Profile {
    Profile {
        gpu: "H100-SXM5-80GB",
        provenance: provenance(),
        gemm: vec![
            GemmSeries {
                dtype: Dtype::Fp16,
                n: 4096,
                k: 4096,
                m: vec![1, 16, 256, 4096],
                time_s: vec![5e-6, 6e-6, 2.5e-5, 2.9e-4],
            },
            GemmSeries {
                dtype: Dtype::Fp16,
                n: 8192,
                k: 4096,
                m: vec![1, 4096],
                time_s: vec![8e-6, 5.6e-4],
            },
        ],
        memory: Some(MemorySeries {
            bytes: vec![1 << 20, 1 << 24, 1 << 30],
            time_s: vec![4e-6, 1.2e-5, 4.0e-4],
        }),
        attention: Vec::new(),
        elementwise: Vec::new(),
    }
}

fn gemm(m: u64, n: u64, k: u64, dtype: Dtype) -> Kernel {
    Kernel::Gemm {
        m,
        n,
        k,
        batch: 1,
        dtype,
    }
}

// ---- Interpolation ----

#[test]
fn gemm_times_are_exact_at_measured_points_and_linear_between() {
    let p = small();
    let g = h100();
    for s in &p.gemm {
        for (&m, &t) in s.m.iter().zip(&s.time_s) {
            assert_eq!(p.gemm_seconds(g, m, s.n, s.k, Dtype::Fp16), Some(t));
        }
    }
    // Half-way between m = 16 and m = 256.
    let mid = p.gemm_seconds(g, 136, 4096, 4096, Dtype::Fp16).unwrap();
    assert!((mid - 1.55e-5).abs() < 1e-18, "{mid}");
    // Beyond the largest m: proportional; below the smallest: the smallest m's time.
    let big = p.gemm_seconds(g, 8192, 4096, 4096, Dtype::Fp16).unwrap();
    assert!((big - 5.8e-4).abs() < 1e-15, "{big}");
    assert_eq!(p.gemm_seconds(g, 0, 4096, 4096, Dtype::Fp16), Some(5e-6));
}

#[test]
fn gemm_times_are_monotonic_between_measured_points() {
    // On the shipped H100 profile: every m between two measured ones lies between their times.
    let p = profile::shipped_profile("h100-sxm5-80gb-vidur").unwrap();
    let g = h100();
    let mut checked = 0;
    for s in &p.gemm {
        for i in 0..s.m.len() - 1 {
            let (lo, hi) = (
                s.time_s[i].min(s.time_s[i + 1]),
                s.time_s[i].max(s.time_s[i + 1]),
            );
            let rising = s.time_s[i + 1] >= s.time_s[i];
            let mut previous = s.time_s[i];
            for m in s.m[i]..=s.m[i + 1] {
                let t = p.gemm_seconds(g, m, s.n, s.k, Dtype::Bf16).unwrap();
                assert!(t >= lo && t <= hi, "n {} k {} m {m}: {t}", s.n, s.k);
                assert!(
                    if rising { t >= previous } else { t <= previous },
                    "n {} k {} m {m}: {t} after {previous}",
                    s.n,
                    s.k
                );
                previous = t;
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

#[test]
fn unmeasured_weight_shapes_scale_by_flops_from_a_close_one_or_fall_back() {
    let p = small();
    let g = h100();
    // n = 5120 is 1.25x the measured 4096 (and 1.6x from 8192): scaled by 5120 / 4096.
    let t = p.gemm_seconds(g, 256, 5120, 4096, Dtype::Fp16).unwrap();
    assert!((t - 2.5e-5 * 1.25).abs() < 1e-18, "{t}");
    // 6144 is 1.5x from 4096 and 1.33x from 8192: nothing close enough.
    assert_eq!(p.gemm_seconds(g, 256, 6144, 4096, Dtype::Fp16), None);
    // A format with no tables and no stand-in.
    assert_eq!(p.gemm_seconds(g, 256, 4096, 4096, Dtype::Fp8), None);
    assert_eq!(p.gemm_seconds(g, 256, 4096, 4096, Dtype::Fp32), None);
    // bf16 uses the fp16 tables on H100 (same size and peak).
    assert_eq!(p.gemm_dtype_for(g, Dtype::Bf16), Some(Dtype::Fp16));
    assert_eq!(
        p.gemm_seconds(g, 256, 4096, 4096, Dtype::Bf16),
        Some(2.5e-5)
    );
}

#[test]
fn memory_times_interpolate_bandwidth_and_are_monotonic() {
    let p = small();
    let mem = p.memory.as_ref().unwrap();
    for (&b, &t) in mem.bytes.iter().zip(&mem.time_s) {
        assert_eq!(p.memory_seconds(b as f64), Some(t));
    }
    let mut previous = 0.0;
    let mut bytes = 1e5;
    while bytes < 4e9 {
        let t = p.memory_seconds(bytes).unwrap();
        assert!(t >= previous, "{bytes}: {t} after {previous}");
        previous = t;
        bytes *= 1.07;
    }
    // Beyond the largest size: its bandwidth.
    let t = p.memory_seconds(2.0 * (1u64 << 30) as f64).unwrap();
    assert!((t - 8.0e-4).abs() < 1e-15, "{t}");
}

// ---- The compute model's tiers ----

#[test]
fn the_profile_prices_what_it_measured_and_the_roofline_the_rest() {
    let model = ComputeModel::with_profile(h100(), small()).unwrap();
    let roofline = ComputeModel::new(h100());
    let c = model.cost(&gemm(256, 4096, 4096, Dtype::Bf16)).unwrap();
    assert_eq!((c.tier, c.seconds), (ComputeTier::Profile, 2.5e-5));
    assert_eq!(c.tier.name(), "profile");
    // Same FLOPs and bytes as the roofline's; only the time comes from the profile.
    let r = roofline.cost(&gemm(256, 4096, 4096, Dtype::Bf16)).unwrap();
    assert_eq!((c.flops, c.bytes), (r.flops, r.bytes));
    assert_eq!(r.tier, ComputeTier::Roofline);
    // Not measured: far shapes, batched GEMMs, attention.
    let far = model.cost(&gemm(256, 6144, 4096, Dtype::Bf16)).unwrap();
    assert_eq!(
        far,
        roofline.cost(&gemm(256, 6144, 4096, Dtype::Bf16)).unwrap()
    );
    let batched = Kernel::Gemm {
        m: 256,
        n: 4096,
        k: 4096,
        batch: 4,
        dtype: Dtype::Bf16,
    };
    assert_eq!(model.cost(&batched).unwrap().tier, ComputeTier::Roofline);
    let attention = Kernel::Attention {
        batch_heads: 32,
        q_len: 2048,
        kv_len: 2048,
        head_dim: 128,
        causal: true,
        backward: false,
        dtype: Dtype::Bf16,
    };
    assert_eq!(model.cost(&attention).unwrap().tier, ComputeTier::Roofline);
    let copy = Kernel::Memory {
        bytes: (1u64 << 24) as f64,
        flops: 0.0,
    };
    assert_eq!(model.cost(&copy).unwrap().tier, ComputeTier::Profile);
    assert_eq!(model.cost(&copy).unwrap().seconds, 1.2e-5);
    // Without a memory table the roofline prices memory-bound kernels.
    let mut gemm_only = small();
    gemm_only.memory = None;
    let model = ComputeModel::with_profile(h100(), gemm_only).unwrap();
    assert_eq!(model.cost(&copy).unwrap().tier, ComputeTier::Roofline);
    // Formats the GPU lacks stay refused.
    let a100 = gpu::find("A100").unwrap();
    let mut a100_profile = small();
    a100_profile.gpu = &a100.name;
    let model = ComputeModel::with_profile(a100, a100_profile).unwrap();
    assert!(model.cost(&gemm(256, 4096, 4096, Dtype::Fp8)).is_none());
}

#[test]
fn a_profile_of_another_gpu_is_refused() {
    let e = ComputeModel::with_profile(gpu::find("A100").unwrap(), small()).unwrap_err();
    assert_eq!(e.measured_on, "H100-SXM5-80GB");
    assert_eq!(e.gpu, "A100-SXM4-80GB");
    assert_eq!(
        e.to_string(),
        "the profile was measured on H100-SXM5-80GB, not on A100-SXM4-80GB"
    );
}

// ---- The file format ----

#[test]
fn profiles_round_trip_through_files() {
    let p = small();
    let text = p.to_toml();
    assert!(text.contains("schema_version = 1"), "{text}");
    assert_eq!(Profile::parse(&text, "mem").unwrap(), p);
    let dir = temp_dir("round-trip");
    let path = dir.join("p.toml");
    std::fs::write(&path, &text).unwrap();
    let back = clustersim::files::profile(&path).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.to_toml(), text);
    // Every shipped profile too.
    for (name, shipped) in profile::shipped() {
        assert_eq!(
            Profile::parse(&shipped.to_toml(), name).unwrap(),
            shipped,
            "{name}"
        );
        if name.ends_with("-vidur") {
            assert!(shipped.provenance.source.contains("MIT license"), "{name}");
        } else {
            assert!(shipped.provenance.source.contains("measured by"), "{name}");
        }
    }
}

#[test]
fn gpu_aliases_are_read_as_the_catalog_name() {
    let text = small()
        .to_toml()
        .replace("gpu = \"H100-SXM5-80GB\"", "gpu = \"h100\"");
    assert_eq!(Profile::parse(&text, "x").unwrap().gpu, "H100-SXM5-80GB");
}

/// (what to change in a valid file, words the error must contain)
/// `small()` with schema-2 tables: causal forward attention at head_dim 128 (prefill at 2k and
/// 8k tokens, 200 and 300 TFLOP/s) and a forward norm table (1 and 64 MiB at 1 and 3 TB/s).
fn with_schema_2() -> Profile {
    let mut p = small();
    let mut a = AttentionSeries {
        dtype: Dtype::Bf16,
        pass: Pass::Forward,
        causal: true,
        head_dim: 128,
        batch_heads: vec![64, 16],
        q_len: vec![2048, 8192],
        kv_len: vec![2048, 8192],
        time_s: vec![0.0, 0.0],
    };
    for (i, rate) in [(0, 200e12), (1, 300e12)] {
        a.time_s[i] = attention(a.batch_heads[i], a.q_len[i], false).flops() / rate;
    }
    p.attention = vec![a];
    let mb = 1u64 << 20;
    p.elementwise = vec![ElementwiseSeries {
        op: ElementwiseOp::Norm,
        pass: Pass::Forward,
        bytes: vec![mb, 64 * mb],
        time_s: vec![mb as f64 / 1e12, 64.0 * mb as f64 / 3e12],
    }];
    p
}

fn attention(batch_heads: u64, len: u64, backward: bool) -> Kernel {
    Kernel::Attention {
        batch_heads,
        q_len: len,
        kv_len: len,
        head_dim: 128,
        causal: true,
        backward,
        dtype: Dtype::Bf16,
    }
}

fn norm(backward: bool, bytes: f64) -> Kernel {
    Kernel::Elementwise {
        op: ElementwiseOp::Norm,
        backward,
        bytes,
        flops: 0.0,
    }
}

#[test]
fn schema_2_tables_round_trip_and_price_attention_and_elementwise_kernels() {
    let p = with_schema_2();
    let text = p.to_toml();
    assert!(text.contains("schema_version = 2"), "{text}");
    assert_eq!(Profile::parse(&text, "mem").unwrap(), p);
    // A version-1 file may not hold them.
    let old = text.replace("schema_version = 2", "schema_version = 1");
    let e = Profile::parse(&old, "old.toml").unwrap_err().to_string();
    assert!(e.contains("need schema_version = 2"), "{e}");

    let model = ComputeModel::with_profile(h100(), p.clone()).unwrap();
    // Attention at 4k tokens: half-way (in ln length) between the measured rates.
    let k = attention(32, 4096, false);
    let cost = model.cost(&k).unwrap();
    assert_eq!(cost.tier, ComputeTier::Profile);
    assert!(
        (k.flops() / cost.seconds / 250e12 - 1.0).abs() < 1e-6,
        "{cost:?}"
    );
    // No backward table: the roofline.
    assert_eq!(
        model.cost(&attention(32, 4096, true)).unwrap().tier,
        ComputeTier::Roofline
    );
    // The norm table, exact at a measured size; its backward (no table of its own) by the
    // forward's curve; another kind by the [memory] table.
    let mb = (1u64 << 20) as f64;
    assert!((p.seconds(h100(), &norm(false, 64.0 * mb)).unwrap() - 64.0 * mb / 3e12).abs() < 1e-15);
    assert_eq!(
        p.seconds(h100(), &norm(true, 64.0 * mb)),
        p.seconds(h100(), &norm(false, 64.0 * mb))
    );
    let add = Kernel::Elementwise {
        op: ElementwiseOp::Add,
        backward: false,
        bytes: 16.0 * mb,
        flops: 0.0,
    };
    assert_eq!(p.seconds(h100(), &add), p.memory_seconds(16.0 * mb));
    // Two tables of the same kind are refused.
    let mut twice = p.clone();
    twice.elementwise.push(twice.elementwise[0].clone());
    let e = Profile::parse(&twice.to_toml(), "twice.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("same op and pass"), "{e}");
}

/// A measured shipped profile is the calibrator's output, unedited: the copy kept with the run's
/// raw numbers under calibration/ is the same file.
#[test]
fn measured_shipped_profiles_are_the_runs_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let run = root.join("calibration/h200-2026-11-30/3-device-check/profile.toml");
    let kept = std::fs::read_to_string(&run).unwrap();
    assert_eq!(
        profile::shipped_text("h200-sxm-141gb-measured"),
        Some(kept.as_str())
    );
    let p = profile::shipped_profile("h200-sxm-141gb-measured").unwrap();
    assert_eq!(p.gpu, "H200-SXM-141GB");
    assert!(!p.attention.is_empty() && !p.elementwise.is_empty() && p.memory.is_some());
}

fn bad_cases() -> Vec<(String, &'static [&'static str])> {
    let good = small().to_toml();
    let swap = |from: &str, to: &str| {
        assert!(good.contains(from), "{from}");
        good.replacen(from, to, 1)
    };
    vec![
        (
            swap("schema_version = 1\n", ""),
            &["missing `schema_version`", "schema_version = 1"],
        ),
        (
            swap("schema_version = 1", "schema_version = 3"),
            &["schema_version = 3 is not supported"],
        ),
        (
            swap("schema_version = 1", "schema_version = \"1\""),
            &["schema_version = \"1\" is not supported"],
        ),
        (
            swap("[provenance]\n", "[provenance]\nlicense = \"MIT\"\n"),
            &["unknown field `license`", "line"],
        ),
        (
            swap("dtype = \"fp16\"", "dtype = \"fp17\""),
            &["unknown variant `fp17`"],
        ),
        (
            swap("gpu = \"H100-SXM5-80GB\"", "gpu = \"H10O\""),
            &["unknown GPU \"H10O\"", "H100"],
        ),
        (
            swap("driver = \"550.54.15\"", "driver = \" \""),
            &["provenance.driver is empty", "not recorded"],
        ),
        (swap("cuda = ", "kuda = "), &["unknown field `kuda`"]),
        (
            swap("  1, 16, 256, 4096,", "  1, 16, 16, 4096,"),
            &[
                "[[gemm]] #1 (fp16, n = 4096, k = 4096)",
                "m[2] = 16 follows 16",
            ],
        ),
        (
            swap("  1, 16, 256, 4096,", "  1, 16, 256,"),
            &["[[gemm]] #1", "3 values in `m` but 4 in `time_s`"],
        ),
        (
            swap("5e-6, 6e-6", "-5e-6, 6e-6"),
            &["time_s[0] = -0.000005", "positive number of seconds"],
        ),
        (
            swap("  1, 16, 256, 4096,", "  0, 16, 256, 4096,"),
            &["m[0] = 0 must be at least 1"],
        ),
        (
            swap("n = 8192", "n = 4096"),
            &["[[gemm]] #2", "same dtype and weight shape as [[gemm]] #1"],
        ),
        (
            good[..good.find("\n# GEMMs").unwrap()].to_string(),
            &["no measurements"],
        ),
        (
            swap("n = 4096", "n = 4096 4096"),
            &["not a valid profile", "line"],
        ),
        (swap("n = 4096", "n = -4096"), &["-4096"]),
    ]
}

#[test]
fn bad_profile_files_are_refused_with_the_file_and_the_fault() {
    let dir = temp_dir("bad");
    for (i, (text, words)) in bad_cases().into_iter().enumerate() {
        let path = dir.join(format!("bad-{i}.toml"));
        std::fs::write(&path, &text).unwrap();
        let e = clustersim::files::profile(&path).expect_err(&format!("case {i} was accepted"));
        let shown = e.to_string();
        println!("case {i}: {shown}\n");
        assert!(
            shown.starts_with(&path.display().to_string()),
            "case {i} does not name its file: {shown}"
        );
        for w in words {
            assert!(shown.contains(w), "case {i}: `{w}` not in: {shown}");
        }
    }
    let missing = clustersim::files::profile(&dir.join("nope.toml")).unwrap_err();
    assert!(
        missing.to_string().contains("nope.toml") && missing.message.contains("no such file"),
        "{missing}"
    );
}

// ---- Importing Vidur tables ----

#[test]
fn vidur_rows_become_gemms_of_one_tensor_parallel_shard() {
    // Llama-2-7B at 64 tokens, TP 2 (only the columns the importer reads).
    let csv = "time_stats.attn_pre_proj.median,time_stats.attn_post_proj.median,\
               time_stats.mlp_up_proj.median,time_stats.mlp_down_proj.median,n_head,n_kv_head,\
               n_embd,n_expanded_embd,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n\
               0.02,0.01,0.03,0.015,32,32,4096,11008,True,64,2\n\
               0.04,0.01,0.03,0.015,32,32,4096,11008,True,64,2\n";
    let g = profile::vidur_mlp_gemms(csv).unwrap();
    let shapes: Vec<(&str, u64, u64, u64)> =
        g[..4].iter().map(|g| (g.operator, g.m, g.n, g.k)).collect();
    assert_eq!(
        shapes,
        [
            ("attn_pre_proj", 64, 6144, 4096),
            ("attn_post_proj", 64, 4096, 2048),
            ("mlp_up_proj", 64, 11008, 4096),
            ("mlp_down_proj", 64, 4096, 5504),
        ]
    );
    assert!((g[0].time_s - 2e-5).abs() < 1e-18);
    // Duplicates merged by the median; a second model with the same (m, n, k) joins it.
    let p = profile::from_vidur_mlp_csv("H100", &[("a", csv), ("b", csv)]).unwrap();
    let qkv = p.gemm.iter().find(|s| (s.n, s.k) == (6144, 4096)).unwrap();
    assert_eq!(
        (qkv.m.as_slice(), qkv.time_s.as_slice()),
        (&[64][..], &[3e-5][..])
    );
    assert!(p.provenance.source.contains("Models: a, b"));
    // Errors name what is wrong.
    let e = profile::vidur_mlp_gemms(&csv.replace("n_head,", "heads,")).unwrap_err();
    assert!(e.contains("no column `n_head`"), "{e}");
    let e = profile::vidur_mlp_gemms(&csv.replace("True,64", "Maybe,64")).unwrap_err();
    assert!(e.contains("line 2") && e.contains("use_gated_mlp"), "{e}");
    let e = profile::from_vidur_mlp_csv("H100", &[("m", "x\n")]).unwrap_err();
    assert_eq!(e.origin, "m");
}

// ---- Scenarios ----

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "clustersim-profile-test-{}-{what}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn scenario_text(gpu: &str, profile: Option<&str>) -> String {
    let profile = profile
        .map(|p| format!("profile = \"{p}\"\n"))
        .unwrap_or_default();
    format!(
        "name = \"profile test\"\nkind = \"training\"\n\n[cluster]\ngpu = \"{gpu}\"\nnodes = 1\n\
         gpus_per_node = 8\n{profile}\n[model]\npreset = \"gpt3-1.3b\"\n\n[parallel]\n\
         micro_batch = 8\nglobal_batch = 64\n"
    )
}

fn run_at(path: &Path, text: String) -> Result<TrainingReport, ScenarioError> {
    let s = Scenario::parse(path, text, &[])?;
    clustersim::run::training(&s).map(|r| TrainingReport::of_run(&r.report))
}

fn run(gpu: &str, profile: Option<&str>) -> Result<TrainingReport, ScenarioError> {
    run_at(Path::new("test.toml"), scenario_text(gpu, profile))
}

/// The error is placed on the `profile = ...` line.
fn at_profile_key(e: &ScenarioError) {
    match &e.location {
        Location::File { text, .. } => assert!(text.contains("profile ="), "{text}"),
        other => panic!("not located in the file: {other:?}"),
    }
}

#[test]
fn a_shipped_profile_prices_the_step_and_the_report_says_so() {
    let with = run("H100", Some("h100-sxm5-80gb-vidur")).unwrap();
    let compute = &with.fidelity.compute;
    assert!(compute.starts_with("profile (GEMM: "), "{compute}");
    assert!(compute.ends_with(" other kernels)"), "{compute}");
    assert_eq!(
        with.cluster.profile.as_deref(),
        Some("h100-sxm5-80gb-vidur")
    );
    let assumptions = with.assumptions.join("\n");
    assert!(
        assumptions.contains("bf16 GEMMs priced from the profile's fp16 measurements"),
        "{assumptions}"
    );
    // Without: the roofline everywhere, and the default is said.
    let without = run("H100", None).unwrap();
    assert_eq!(without.fidelity.compute, "roofline");
    assert!(without.cluster.profile.is_none());
    let assumptions = without.assumptions.join("\n");
    assert!(
        assumptions.contains("roofline compute tier (no calibration profile; shipped for H100-SXM5-80GB: h100-sxm5-80gb-vidur)"),
        "{assumptions}"
    );
    // Measured GEMMs move the step time, within reason.
    let (a, b) = (with.iteration_time_s, without.iteration_time_s);
    assert!(a != b && (a / b - 1.0).abs() < 0.2, "{a} vs {b}");
}

#[test]
fn unknown_profile_names_list_the_shipped_ones() {
    let e = run("H100", Some("h100-sxm5-80gb-vidr")).unwrap_err();
    at_profile_key(&e);
    assert!(
        e.message
            .contains("unknown profile \"h100-sxm5-80gb-vidr\""),
        "{e:?}"
    );
    let help = e.help.unwrap();
    assert!(
        help.contains("did you mean \"h100-sxm5-80gb-vidur\""),
        "{help}"
    );
    for name in profile::shipped_names() {
        assert!(help.contains(name), "{help}");
    }
}

#[test]
fn a_profile_of_another_gpu_is_an_error_at_the_key() {
    let e = run("A100", Some("h100-sxm5-80gb-vidur")).unwrap_err();
    at_profile_key(&e);
    assert!(
        e.message
            .contains("measured on H100-SXM5-80GB, but cluster.gpu is A100-SXM4-80GB"),
        "{}",
        e.message
    );
    assert!(e.help.unwrap().contains("a100-sxm4-80gb-vidur"));
    let e = run("A100-40GB", Some("h100-sxm5-80gb-vidur")).unwrap_err();
    assert!(e.help.unwrap().contains("no shipped profile"));
}

#[test]
fn profile_files_are_found_relative_to_the_scenario() {
    let dir = temp_dir("scenario");
    std::fs::create_dir_all(dir.join("profiles")).unwrap();
    std::fs::write(dir.join("profiles/mine.toml"), small().to_toml()).unwrap();
    let scenario = dir.join("s.toml");
    let report = run_at(&scenario, scenario_text("H100", Some("profiles/mine.toml"))).unwrap();
    let compute = &report.fidelity.compute;
    // The small profile has a memory table, so memory-bound kernels are measured too.
    assert!(compute.contains("memory-bound"), "{compute}");
    assert!(compute.starts_with("profile ("), "{compute}");
    // A broken or missing file: located at the key, naming the file and the fault.
    std::fs::write(dir.join("profiles/broken.toml"), "schema_version = 3\n").unwrap();
    let e = run_at(
        &scenario,
        scenario_text("H100", Some("profiles/broken.toml")),
    )
    .unwrap_err();
    at_profile_key(&e);
    assert!(
        e.message.contains("broken.toml") && e.message.contains("schema_version = 3"),
        "{}",
        e.message
    );
    let e = run_at(&scenario, scenario_text("H100", Some("profiles/none.toml"))).unwrap_err();
    assert!(
        e.message.contains("none.toml") && e.message.contains("no such file"),
        "{}",
        e.message
    );
}

// ---- fidelity.compute from the ops' tiers ----

fn op(name: &'static str, kind: OpKind, tier: &'static str) -> Op {
    Op {
        name: name.into(),
        lane: 0,
        kind,
        duration: Default::default(),
        flops: 0.0,
        bytes: 0.0,
        tier,
        layer: None,
        micro_batch: None,
        model_flops: true,
        chain: None,
    }
}

fn fidelity(ops: &[(&'static str, OpKind, &'static str)]) -> String {
    let mut g = Graph::new();
    g.add_lane("compute", "GPU 0");
    for &(name, kind, tier) in ops {
        g.add(op(name, kind, tier), &[]);
    }
    training::compute_fidelity(&g)
}

#[test]
fn fidelity_names_the_tiers_that_priced_the_ops() {
    use OpKind::*;
    let comm = ("grad_reduce", Communication, "analytical");
    assert_eq!(
        fidelity(&[
            ("qkv_proj", Compute, "roofline"),
            ("layernorm", Memory, "roofline"),
            comm
        ]),
        "roofline"
    );
    assert_eq!(
        fidelity(&[
            ("qkv_proj", Compute, "profile"),
            ("attention", Compute, "roofline"),
            ("layernorm", Memory, "roofline"),
            comm
        ]),
        "profile (GEMM), roofline (other kernels)"
    );
    assert_eq!(
        fidelity(&[
            ("qkv_proj", Compute, "profile"),
            ("out_proj", Compute, "roofline"),
            ("mlp_up", Compute, "profile"),
            ("attention_bwd", Compute, "roofline"),
            ("layernorm", Memory, "profile"),
        ]),
        "profile (GEMM: 2 of 3 ops, memory-bound), roofline (GEMM: 1 of 3 ops, other kernels)"
    );
    assert_eq!(
        fidelity(&[
            ("qkv_proj", Compute, "profile"),
            ("layernorm", Memory, "profile")
        ]),
        "profile"
    );
}
