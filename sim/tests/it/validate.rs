//! `clustersim validate` on the shipped published measurements (shared/validation/published.json,
//! beside the repository) and on broken files. Accuracy is not asserted here: only that the cases
//! the simulator can express are run and compared, and that the others say why not.

use crate::common;

use common::{root, run_in, text};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn published() -> PathBuf {
    let p = common::shared().join("validation/published.json");
    assert!(
        p.is_file(),
        "published measurements not found at {} (CI clones the repository beside shared/)",
        p.display()
    );
    p
}

/// A scratch directory of this test binary.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("validate-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn status(row: &Value) -> &str {
    row["status"].as_str().unwrap()
}

/// `clustersim validate --json` on a case file of `cases` (JSON text) written to a scratch
/// directory called `name`; the report.
fn validate_cases(name: &str, cases: &str) -> Value {
    let dir = scratch(name);
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, cases).unwrap();
    let out = run_in(&dir, &["validate", file.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn json_on_the_shipped_file_compares_what_the_simulator_expresses() {
    published();
    // No file argument: the default, ../shared/validation/published.json from the repository root.
    let out = run_in(&root(), &["validate", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut stream = serde_json::Deserializer::from_str(&stdout).into_iter::<Value>();
    let report = stream.next().expect("one object").expect("valid JSON");
    assert!(
        stream.next().is_none(),
        "more than one JSON value on stdout"
    );

    let rows = report["rows"].as_array().unwrap();
    let primary: Vec<&Value> = rows.iter().filter(|r| r["primary"] == true).collect();
    assert_eq!(primary.len(), 43, "one primary row per case");
    let row = |id: &str| {
        *primary
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no row {id}"))
    };

    // Every row is compared, not expressible or failed; none failed on the shipped file.
    for r in rows {
        let s = status(r);
        assert!(
            s == "compared" || s.starts_with("not expressible: "),
            "{}: {s}",
            r["id"]
        );
    }
    // Compared rows have a finite, positive prediction and the error that goes with it.
    for r in rows.iter().filter(|r| status(r) == "compared") {
        let predicted = r["predicted"].as_f64().unwrap();
        let measured = r["measured"].as_f64().unwrap();
        assert!(
            predicted.is_finite() && predicted > 0.0,
            "{}: predicted {predicted}",
            r["id"]
        );
        let error = r["error"].as_f64().unwrap();
        assert!(((predicted - measured) / measured - error).abs() < 1e-9);
    }
    // NCCL bus bandwidths: all seven compared.
    let nccl: Vec<&&Value> = primary
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("nccl-"))
        .collect();
    assert_eq!(nccl.len(), 7);
    for r in nccl {
        assert_eq!(status(r), "compared", "{}", r["id"]);
        assert_eq!(r["metric_short"], "busBW GB/s");
    }
    // Megatron-LM SC21 Table 1, tensor and pipeline parallel rows: compared, as hardware FLOPs.
    for id in [
        "megatron-sc21-t1-1p7B",
        "megatron-sc21-t1-3p6B",
        "megatron-sc21-t1-7p5B",
        "megatron-sc21-t1-18p4B",
        "megatron-sc21-t1-39p1B",
        "megatron-sc21-t1-76p1B",
        "megatron-sc21-t1-1008p0B",
    ] {
        let r = row(id);
        assert_eq!(status(r), "compared", "{id}: {}", r["assumptions"]);
        assert_eq!(r["metric_short"], "HW TFLOP/s/GPU", "{id}");
        let scenario = r["scenario"].as_str().unwrap();
        assert!(scenario.contains("recompute = \"full\""), "{scenario}");
        let assumptions = r["assumptions"].to_string();
        assert!(assumptions.contains("micro_batch = 1 (not stated)"), "{id}");
    }
    // Serving: compared, as offline runs of the stated lengths. Diffusion: compared, as one video
    // with the stated Ulysses degree and FlashAttention 2.
    for r in primary
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("trtllm-"))
    {
        assert_eq!(status(r), "compared");
        let scenario = r["scenario"].as_str().unwrap();
        assert!(scenario.contains("arrival = \"offline\""), "{scenario}");
    }
    let xdit: Vec<&&Value> = primary
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("xdit-"))
        .collect();
    assert_eq!(xdit.len(), 4);
    for r in &xdit {
        assert_eq!(status(r), "compared", "{}", r["assumptions"]);
        assert_eq!(r["metric_short"], "latency s");
        let scenario = r["scenario"].as_str().unwrap();
        assert!(scenario.contains("kind = \"diffusion\""), "{scenario}");
        // Unstated, the kernel is the scenario's own default, which the assumptions name.
        assert!(!scenario.contains("attention_kernel"), "{scenario}");
        let assumptions = r["assumptions"].to_string();
        assert!(
            assumptions.contains("flash-attention-2 (not stated"),
            "{assumptions}"
        );
    }
    // LLM Foundry's MPT runs name Triton's flash attention: the first FlashAttention algorithm,
    // at half of FlashAttention 2's speed.
    for r in primary
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("mpt-"))
    {
        let scenario = r["scenario"].as_str().unwrap();
        assert!(
            scenario.contains("attention_kernel = \"flash-attention-1\""),
            "{scenario}"
        );
        let assumptions = r["assumptions"].to_string();
        assert!(
            assumptions.contains("half of FlashAttention 2's"),
            "{assumptions}"
        );
    }
    // More GPUs, less latency.
    let latency = |i: usize| xdit[i]["predicted"].as_f64().unwrap();
    assert!(latency(0) > latency(1) && latency(1) > latency(2) && latency(2) > latency(3));
    // Context parallelism is refused by the simulator itself (until it lands).
    let cp = row("dgxc-llama3.1-70b-bf16-24.09-64gpu");
    assert!(
        status(cp) == "compared" || status(cp).contains("context parallelism"),
        "{}",
        status(cp)
    );

    let all = &report["summary"]["all"];
    assert_eq!(all["cases"], 43);
    let compared = all["compared"].as_u64().unwrap();
    assert!(compared >= 18, "compared {compared}");
    assert_eq!(
        compared + all["not_expressible"].as_u64().unwrap() + all["failed"].as_u64().unwrap(),
        43
    );
    assert!(all["median_abs_error"].as_f64().unwrap().is_finite());
    assert!(all["worst"]["id"].is_string());
    assert!(report["summary"]["groups"]["nccl"]["compared"] == 7);
}

/// Runs `validate FILE --write DIR/NAME`; its stdout and the Markdown written.
fn write_markdown(file: &Path, dir: &str, name: &str) -> (String, String) {
    let md = scratch(dir).join(name);
    let _ = std::fs::remove_file(&md);
    let out = run_in(
        &root(),
        &[
            "validate",
            file.to_str().unwrap(),
            "--write",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&md).expect("--write wrote the file");
    (text(&out.stdout), written)
}

/// The section of `markdown` on where the model is weak, up to the next section.
fn weaknesses(markdown: &str) -> &str {
    let weak = &markdown[markdown
        .find("## Where the model is weak")
        .expect("weaknesses")..];
    &weak[..weak.find("## Assumptions per case").unwrap_or(weak.len())]
}

#[test]
fn text_output_ends_with_a_summary_and_write_makes_markdown() {
    let file = published();
    let (stdout, written) = write_markdown(&file, "write", "VALIDATION.md");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("summary: 43 cases, "))
        .unwrap_or_else(|| panic!("no summary line in\n{stdout}"));
    assert!(summary.contains("compared") && summary.contains("median |error|"));
    assert!(stdout.contains("nccl-i1455-h100-8gpu-nvls-allreduce"));
    assert!(written.starts_with("# Validation against published measurements"));
    assert!(written.contains("Generated by `clustersim validate "));
    for section in ["## Summary", "## Results", "## Assumptions per case"] {
        assert!(written.contains(section), "no {section}");
    }
    assert!(written.contains("xdit-hunyuanvideo-720p-H100-8gpu"));
    // The section on weaknesses quotes its figures from the rows just computed: every ZeRO-3
    // row's error appears there as the results table prints it, and no placeholder is left.
    let weak = weaknesses(&written);
    assert!(!weak.contains('{'), "{weak}");
    let report = validate_repository_file(file.to_str().unwrap(), 43);
    for r in report["rows"].as_array().unwrap() {
        if r["id"].as_str().unwrap().contains("zero3") {
            let figure = format!("{:+.1}%", 100.0 * r["error"].as_f64().unwrap());
            assert!(weak.contains(&figure), "{figure} not in\n{weak}");
        }
    }
}

/// A file whose cases are not the shared file's gets a pointer instead of figures it lacks.
#[test]
fn another_files_markdown_points_to_the_shared_files_weaknesses() {
    let file = root().join("validation/sta-hunyuanvideo-h100.json");
    let (_, written) = write_markdown(&file, "write-other", "STA.md");
    let weak = weaknesses(&written);
    assert!(weak.contains("See `docs/VALIDATION.md`"), "{weak}");
    assert!(!weak.contains("DeepSpeed ZeRO-3"), "{weak}");
}

#[test]
fn without_write_no_file_is_written() {
    // An empty list of cases runs at once; no Markdown may appear unless asked for.
    let dir = scratch("nowrite");
    let bad = dir.join("empty.json");
    std::fs::write(&bad, "[]").unwrap();
    let out = run_in(&dir, &["validate", "empty.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("summary: 0 cases"));
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(entries.len(), 1, "validate wrote a file without --write");
}

#[test]
fn malformed_json_exits_2_naming_the_file_and_position() {
    let dir = scratch("malformed");
    let bad = dir.join("broken.json");
    std::fs::write(&bad, "[\n  {\"id\": \"x\",\n   \"value\": 12,,\n  }\n]\n").unwrap();
    let out = run_in(&dir, &["validate", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&bad.display().to_string()), "{stderr}");
    assert!(stderr.contains("not valid JSON"), "{stderr}");
    assert!(
        stderr.contains("broken.json:3:"),
        "line and column: {stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_case_without_a_value_exits_2() {
    let dir = scratch("shape");
    let bad = dir.join("novalue.json");
    std::fs::write(&bad, r#"[{"id": "a", "metric": "m", "unit": "u"}]"#).unwrap();
    let out = run_in(&dir, &["validate", bad.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("novalue.json") && stderr.contains("`value`"),
        "{stderr}"
    );
}

#[test]
fn a_missing_file_exits_2_and_says_a_path_can_be_given() {
    let dir = scratch("missing");
    let out = run_in(&dir, &["validate", "nowhere/published.json"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("not found: nowhere/published.json"),
        "{stderr}"
    );
    // The default path, from a directory that has no ../shared beside it.
    let deep = dir.join("a/b");
    std::fs::create_dir_all(&deep).unwrap();
    let out = run_in(&deep, &["validate"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("../shared/validation/published.json") && stderr.contains("give its path"),
        "{stderr}"
    );
}

/// Errors of the shipped cases stay where this release put them: the median within 6% (the
/// training target asks 8%), and the groups and cases that are within reach each inside its bound.
#[test]
fn errors_stay_within_their_bounds() {
    published();
    let out = run_in(&root(), &["validate", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let median = report["summary"]["all"]["median_abs_error"]
        .as_f64()
        .unwrap();
    assert!(median <= 0.06, "median |error| {median}");
    let group = |g: &str| {
        report["summary"]["groups"][g]["median_abs_error"]
            .as_f64()
            .unwrap()
    };
    assert!(group("korthikanti22") <= 0.05, "{}", group("korthikanti22"));
    assert!(group("nccl") <= 0.03, "{}", group("nccl"));
    // NeMo on H100 at its TDP: GEMMs at the Hopper boards' sustained clock.
    assert!(group("dgxc") <= 0.05, "{}", group("dgxc"));
    let error = |id: &str| {
        report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id && r["primary"] == true)
            .and_then(|r| r["error"].as_f64())
            .unwrap_or_else(|| panic!("no error for {id}"))
    };
    // torchtitan's eager FSDP run: its kernels, checkpointing and GPU as it ran them.
    let titan = error("torchtitan-h100-8b-fsdp-8gpu-eager");
    assert!(titan.abs() <= 0.15, "{titan}");
}

/// The same LLM Foundry configurations on A100 80GB (`validation/llm-foundry-a100.json`, from
/// the README whose H100 rows are in the shipped file): within 10% at the median.
#[test]
fn llm_foundry_a100_rows_are_within_ten_percent_at_the_median() {
    repository_file_within_ten_percent("validation/llm-foundry-a100.json", 7);
}

/// Validates the repository's case file `path` (all `cases` of it compared) and checks its median
/// |error| is at most 10%; the report.
fn repository_file_within_ten_percent(path: &str, cases: u64) -> Value {
    let report = validate_repository_file(path, cases);
    let median = report["summary"]["all"]["median_abs_error"]
        .as_f64()
        .unwrap();
    assert!(median <= 0.10, "median |error| {median}");
    report
}

/// `clustersim validate --json` on the case file `path` (relative to the repository root, or
/// absolute), all `cases` of it compared; the report.
fn validate_repository_file(path: &str, cases: u64) -> Value {
    let file = root().join(path);
    let out = run_in(&root(), &["validate", file.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["summary"]["all"]["compared"], cases);
    report
}

/// Every bf16 row of LLM Foundry's benchmark table run on one software image, H100 and A100
/// (`validation/llm-foundry-same-image.json`): within 10% at the median, and the long sequences
/// (attention most of the work) no further off than the short ones, which holds only while
/// their Triton attention is priced as the kernel it is.
#[test]
fn llm_foundry_same_image_rows_do_not_drift_with_sequence_length() {
    let report = repository_file_within_ten_percent("validation/llm-foundry-same-image.json", 128);
    let rows = report["rows"].as_array().unwrap();
    let median_error = |long: bool| {
        let mut e: Vec<f64> = rows
            .iter()
            .filter(|r| r["primary"] == true)
            .filter(|r| {
                let id = r["id"].as_str().unwrap();
                let seq: u64 = id
                    .split("-seq")
                    .nth(1)
                    .unwrap()
                    .split('-')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                (seq >= 16_384) == long
            })
            .map(|r| r["error"].as_f64().unwrap())
            .collect();
        e.sort_by(f64::total_cmp);
        e[e.len() / 2]
    };
    let (short, long) = (median_error(false), median_error(true));
    assert!((long - short).abs() <= 0.15, "short {short}, long {long}");
}

/// The rest of xDiT's HunyuanVideo page (`validation/xdit-hunyuanvideo-more.json`): every H100
/// 960 x 960 row within 10%, one H20 within 10% (FlashAttention 2 priced at the H20's own
/// measured speed, not the H100's fraction of peak, which made it 67% slow), and the L20's one-
/// and two-GPU rows within 10% (FlashAttention 2 at the tensor-core peak it reaches on an RTX
/// 4090's SMs; at the roofline's default fraction they were 69-73% slow).
#[test]
fn xdit_h100_960_h20_and_l20_are_within_ten_percent() {
    let report = validate_repository_file("validation/xdit-hunyuanvideo-more.json", 18);
    let mut l20 = 0;
    for r in report["rows"].as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        let small_l20 = id.contains("L20-1gpu") || id.contains("L20-2gpu");
        if id.contains("960p-H100") || id == "xdit-hunyuanvideo-720p-H20-1gpu" || small_l20 {
            let e = r["error"].as_f64().unwrap();
            assert!(e.abs() <= 0.10, "{id}: {e}");
        }
        if small_l20 {
            l20 += 1;
            let notes = r["assumptions"].to_string();
            assert!(notes.contains("FlashAttention 2 on Ada"), "{id}: {notes}");
        }
    }
    assert_eq!(l20, 4);
}

/// The HunyuanVideo repository's rounded single-GPU timings
/// (`validation/hunyuanvideo-repo-issues.json`): H800 for 30 steps and A100 for 50, each within
/// 15% (the H800 row came to +12.8% when the queries' and keys' normalisation and rotary passes
/// were priced, from +8.6%), the A100's FlashAttention 2 priced by Ampere's own figure.
#[test]
fn hunyuanvideo_issue_timings_on_h800_and_a100_are_within_fifteen_percent() {
    let report = validate_repository_file("validation/hunyuanvideo-repo-issues.json", 2);
    for r in report["rows"].as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        let e = r["error"].as_f64().unwrap();
        assert!(e.abs() <= 0.15, "{id}: {e}");
        if id.contains("A100") {
            let notes = r["assumptions"].to_string();
            assert!(
                notes.contains("FlashAttention 2 on Ampere"),
                "{id}: {notes}"
            );
        }
    }
}

/// Every row of torchtitan's December 2024 H100 page (`validation/torchtitan-h100-202412.json`)
/// fits in memory, as measured (72-85 GiB of 96): its context-parallel rows need the optimizer
/// sharded over the context ranks too (torchtitan's FSDP mesh), without which three of them did
/// not fit.
#[test]
fn torchtitan_page_rows_all_fit_as_measured() {
    let report = validate_repository_file("validation/torchtitan-h100-202412.json", 18);
    for r in report["rows"].as_array().unwrap() {
        if r["primary"] == true {
            assert_eq!(r["fits_in_memory"], true, "{}", r["id"]);
        }
    }
}

/// Sliding Tile Attention's full-attention baseline (`validation/sta-hunyuanvideo-h100.json`):
/// HunyuanVideo's denoising alone on one H100 with FlashAttention 3, as the case states, within
/// 15%; priced with the whole pipeline's latency (VAE included) or FlashAttention 2 it is not
/// the same figure, so the row says which it compared.
#[test]
fn sta_baseline_compares_the_denoising_alone_with_flash_attention_3() {
    let report = validate_repository_file("validation/sta-hunyuanvideo-h100.json", 1);
    let row = &report["rows"][0];
    let e = row["error"].as_f64().unwrap();
    assert!(e.abs() <= 0.15, "{e}");
    let scenario = row["scenario"].as_str().unwrap();
    assert!(scenario.contains("flash-attention-3"), "{scenario}");
    let notes = row["assumptions"].to_string();
    assert!(notes.contains("breakdown_s.denoise"), "{notes}");
}

/// A case whose recomputation is not stated and which fits at no level in the memory model (a
/// 529.6B GPT on one server under ZeRO-3) is compared with full recomputation, the most there is,
/// says so, and is marked as not fitting, rather than compared without recomputation.
#[test]
fn a_case_that_fits_at_no_recomputation_level_is_compared_with_full() {
    let report = validate_cases(
        "nofit",
        r#"[{
  "id": "gpt-530b-8gpu-zero3",
  "source": "a test case",
  "hardware": {"gpu": "A100-SXM4-80GB", "count": 8, "gpus_per_node": 8, "nodes": 1},
  "model": {"arch": "GPT", "layers": 105, "hidden": 20480, "heads": 128, "ffn": 81920,
            "vocab": 51200, "seq_len": 2048},
  "parallel": {"TP": 1, "PP": 1, "DP": 8, "zero": "ZeRO-3", "global_batch": 8,
               "micro_batch": 1},
  "metric": "achieved TFLOP/s per GPU",
  "value": 100,
  "unit": "TFLOP/s/GPU"
}]"#,
    );
    let row = &report["rows"][0];
    let scenario = row["scenario"].as_str().unwrap();
    assert!(scenario.contains(r#"recompute = "full""#), "{scenario}");
    assert_eq!(row["fits_in_memory"], false, "{row}");
    let said = row["assumptions"].to_string();
    assert!(
        said.contains("raised from none to full") && said.contains("does not fit either"),
        "{said}"
    );
}

/// The 529.6B ZeRO-3 rows of Megatron-LM's Table 2 (`validation/megatron-sc21-zero3-530b.json`)
/// run as DeepSpeed v0.3 ran them: parameters gathered on demand, full recomputation (none fits
/// without it), Selene's InfiniBand routed by destination. Their accuracy is a documented
/// weakness (docs/VALIDATION.md), not asserted here.
#[test]
fn zero3_530b_rows_run_as_deepspeed_v03_did() {
    let report = validate_repository_file("validation/megatron-sc21-zero3-530b.json", 3);
    for row in report["rows"].as_array().unwrap() {
        let scenario = row["scenario"].as_str().unwrap();
        for key in [
            r#"param_gather = "on-demand""#,
            r#"recompute = "full""#,
            r#"routing = "destination""#,
        ] {
            assert!(scenario.contains(key), "{key} in {scenario}");
        }
    }
}

/// xDiT's ConsisID page (`validation/xdit-consisid-h100.json`): every row runs the ConsisID
/// preset with guidance on (the stated guidance_scale 6.0, both branches a step even where
/// cfg_parallel is 1), and of the three ways to split one video over two GPUs the simulator
/// ranks them as measured: the guidance branches apart fastest, Ring next, Ulysses slowest. The
/// rows' accuracy is a documented weakness (docs/DIFFUSION.md), not asserted here.
#[test]
fn consisid_rows_run_guided_and_rank_the_two_gpu_layouts_as_measured() {
    let report = validate_repository_file("validation/xdit-consisid-h100.json", 12);
    let rows = report["rows"].as_array().unwrap();
    for row in rows {
        let scenario = row["scenario"].as_str().unwrap();
        assert!(
            scenario.contains(r#"preset = "consisid""#) && scenario.contains("cfg = true"),
            "{scenario}"
        );
    }
    let two_gpu = |layout: &str| {
        let row = rows
            .iter()
            .find(|r| r["id"] == format!("xdit-consisid-720x480-H100-2gpu-{layout}"))
            .unwrap();
        (
            row["measured"].as_f64().unwrap(),
            row["predicted"].as_f64().unwrap(),
        )
    };
    let (cfg, ring, ulysses) = (two_gpu("u1r1c2"), two_gpu("u1r2c1"), two_gpu("u2r1c1"));
    assert!(cfg.0 < ring.0 && ring.0 < ulysses.0);
    assert!(
        cfg.1 < ring.1 && ring.1 < ulysses.1,
        "{cfg:?} {ring:?} {ulysses:?}"
    );
}

/// A guidance scale that is not a number fails its case and says what would be valid, rather
/// than being read as unstated.
#[test]
fn a_guidance_scale_that_is_not_a_number_fails_the_case() {
    let report = validate_cases(
        "guidance",
        r#"[{"id": "g", "source": "a test case",
  "hardware": {"gpu": "H100", "count": 1},
  "model": {"arch": "ConsisID", "resolution": "720x480", "frames": 49, "steps": 50,
            "guidance_scale": "six"},
  "parallel": {}, "metric": "end-to-end generation latency", "value": 100, "unit": "s"}]"#,
    );
    let status = status(&report["rows"][0]);
    assert!(
        status.contains("guidance_scale") && status.contains("a number is needed"),
        "{status}"
    );
}

/// Asserts that a case's scenario states every one of `keys`.
fn has_all(s: &str, keys: &[&str]) {
    for key in keys {
        assert!(s.contains(key), "{key} in {s}");
    }
}

/// AMD's 405B rows (`validation/holdout/rocm-405b.json`) run as Llama 3.1 405B: every row is
/// compared, on 8 MI300X at TP8 with the fp8 KV cache the checkpoint carries. Accuracy is not
/// asserted (validation/README.md has it).
#[test]
fn the_405b_rows_run_as_the_405b_preset() {
    let report = validate_repository_file("validation/holdout/rocm-405b.json", 4);
    for row in report["rows"].as_array().unwrap() {
        let s = row["scenario"].as_str().unwrap();
        has_all(
            s,
            &[
                "preset = \"llama-3.1-405b\"",
                "gpu = \"MI300X\"",
                "tp = 8",
                "kv_cache_dtype = \"fp8\"",
            ],
        );
    }
}

/// The small-batch serving file (`validation/serving-small-batch.json`): every row of a model the
/// catalog has is set up as its benchmark ran it, and the rows that sample ShareGPT say why not.
/// Accuracy is not asserted (docs/VALIDATION-SERVING-SMALL-BATCH.md has it).
#[test]
fn small_batch_serving_rows_run_as_their_benchmarks_did() {
    let report = validate_repository_file("validation/serving-small-batch.json", 35);
    let rows = report["rows"].as_array().unwrap();
    let scenario = |id: &str| -> String {
        let row = rows.iter().find(|r| r["id"] == id).expect(id);
        row["scenario"].as_str().expect("a scenario").to_string()
    };
    // TensorRT-LLM's first-token table: one request of the stated prompt and one output token.
    let s = scenario("trtllm-v05-llama2-7b-h100-fp8-tp1-bs1-ttft-isl128");
    has_all(
        &s,
        &[
            "requests = 1\n",
            "prompt_tokens = 128\n",
            "output_tokens = 1\n",
            "kv_cache_dtype = \"fp8\"",
        ],
    );
    // LMDeploy's static batch of 16 in fp16.
    let s = scenario("lmdeploy-v010a1-llama2-7b-a100-fp16-tp1-bs16-128-128");
    has_all(
        &s,
        &[
            "scheduler = \"static\"",
            "requests = 16\n",
            "dtype = \"fp16\"",
        ],
    );
    // SGLang's Poisson run of uniform random lengths, Llama 3.3 as Llama 3.1's shapes.
    let s = scenario("sglang-llama33-70b-h200x4-bf16-tp4-random1024-rps1");
    has_all(
        &s,
        &[
            "preset = \"llama-3.1-70b\"",
            "arrival = \"poisson\"",
            "rate = \"1/s\"",
            "requests = 300\n",
            "{ dist = \"uniform\", min = 1, max = 1024 }",
        ],
    );
    let short = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap()["metric_short"].clone();
    assert_eq!(
        short("vllm-ci-build9515-llama8b-h200-tp1-bs8-32-128"),
        "batch ms"
    );
    assert_eq!(
        short("nim-180-llama33-70b-h100x2-fp8-tp2-c1-5000-500"),
        "per token ms"
    );
    let sharegpt: Vec<&Value> = rows
        .iter()
        .filter(|r| r["id"].as_str().unwrap().contains("sharegpt"))
        .collect();
    assert_eq!(sharegpt.len(), 6);
    assert!(
        sharegpt
            .iter()
            .all(|r| status(r).starts_with("not expressible")),
        "{sharegpt:?}"
    );
}
