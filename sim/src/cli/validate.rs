//! `clustersim validate`: published measurements against the simulator's predictions. The work is
//! in `clustersim::validate`; this prints the table, the JSON or the Markdown.

use clap::Args;
use clustersim::validate::{self, DEFAULT_FILE, Row, Stats, Status, Validation};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ValidateArgs {
    /// The published cases (JSON). Default: ../shared/validation/published.json, relative to the
    /// current directory (the repository root, cloned beside shared/).
    #[arg(value_name = "FILE.json")]
    file: Option<PathBuf>,
    /// Print exactly one JSON object (rows, summary) on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the results as Markdown to this path (e.g. docs/VALIDATION.md).
    #[arg(long, value_name = "PATH")]
    write: Option<PathBuf>,
    /// How often the 80% prediction intervals hold: over FILE's cases (or every *.json of a
    /// folder), or without FILE over the shipped residuals, each case's source left out
    /// (docs/UNCERTAINTY.md).
    #[arg(long, conflicts_with = "json")]
    coverage: bool,
    /// Regenerate the residual table the intervals come from (validation/residuals.json) from
    /// the shared published.json and every validation/*.json; run from the repository root.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["file", "json", "write", "coverage"])]
    residuals: Option<PathBuf>,
}

pub fn run(args: &ValidateArgs) -> ExitCode {
    if let Some(path) = &args.residuals {
        return super::printed(super::coverage::write_residuals(path));
    }
    if args.coverage {
        return super::printed(super::coverage::report(
            args.file.as_ref(),
            args.write.as_ref(),
        ));
    }
    let file = args
        .file
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_FILE));
    let cases = match validate::load(&file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let file_name = file.file_name().map_or("published.json".into(), |n| {
        n.to_string_lossy().into_owned()
    });
    let result = validate::validate(&cases, &file_name);
    if let Some(path) = &args.write {
        let command = format!(
            "clustersim validate {} --write {}",
            file.display(),
            path.display()
        );
        if let Err(e) = std::fs::write(path, markdown(&result, &command)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&result.to_json(&file)).expect("rows serialise")
        );
    } else {
        print!("{}", table(&result));
        if let Some(path) = &args.write {
            println!("written to {}", path.display());
        }
    }
    ExitCode::SUCCESS
}

/// A value with about four significant digits.
fn value(v: f64) -> String {
    match v.abs() {
        a if a >= 1000.0 => format!("{v:.0}"),
        a if a >= 100.0 => format!("{v:.1}"),
        a if a >= 10.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

fn percent(e: f64) -> String {
    format!("{:+.1}%", 100.0 * e)
}

fn opt_percent(e: Option<f64>) -> String {
    e.map_or("-".into(), |e| format!("{:.1}%", 100.0 * e))
}

fn worst(s: &Stats) -> String {
    s.worst
        .as_ref()
        .map_or("-".into(), |(id, e)| format!("{id} ({})", percent(*e)))
}

fn summary_line(s: &Stats) -> String {
    format!(
        "{} cases, {} compared, {} not expressible, {} failed; median |error| {} (median error {}), worst {}",
        s.cases,
        s.compared,
        s.not_expressible,
        s.failed,
        opt_percent(s.median_abs_error),
        s.median_error.map_or("-".into(), percent),
        worst(s)
    )
}

fn table(v: &Validation) -> String {
    let mut out = String::new();
    let w = v.rows.iter().map(|r| r.id.len()).max().unwrap_or(0).max(12);
    let _ = writeln!(
        out,
        "{:<w$} {:<17} {:>10} {:>10} {:>8}  status",
        "case", "metric", "measured", "predicted", "error"
    );
    for r in &v.rows {
        let id = if r.primary {
            r.id.clone()
        } else {
            "  + same row".to_string()
        };
        let status = match (&r.status, r.fits) {
            (Status::Compared, Some(false)) => "does not fit in memory".to_string(),
            (Status::Compared, _) => String::new(),
            (other, _) => other.to_string(),
        };
        let _ = writeln!(
            out,
            "{id:<w$} {:<17} {:>10} {:>10} {:>8}  {status}",
            r.short,
            value(r.measured),
            r.predicted.map_or("-".into(), value),
            r.error.map_or("-".into(), percent),
        );
    }
    let s = &v.summary;
    let _ = writeln!(out);
    for (group, g) in &s.groups {
        let _ = writeln!(
            out,
            "  {group:<14} {}/{} compared, median |error| {}, worst {}",
            g.compared,
            g.cases,
            opt_percent(g.median_abs_error),
            worst(g)
        );
    }
    if s.secondary.cases > 0 {
        let _ = writeln!(
            out,
            "  secondary figures (extra_metrics): {}/{} compared, median |error| {}",
            s.secondary.compared,
            s.secondary.cases,
            opt_percent(s.secondary.median_abs_error)
        );
    }
    let _ = writeln!(out, "summary: {}", summary_line(&s.all));
    let _ = writeln!(out, "validated in {:.1} s", v.wall_s);
    out
}

/// [`WEAKNESSES`] with each `{ID}` replaced by that row's error, or `None` when a named row is
/// not among `v`'s compared rows.
fn weaknesses(v: &Validation) -> Option<String> {
    let mut out = String::new();
    let mut rest = WEAKNESSES;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}')?;
        let id = &rest[open + 1..close];
        let row = v.rows.iter().find(|r| r.id == id)?;
        out.push_str(&rest[..open]);
        out.push_str(&percent(row.error?));
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Some(rewrap(&out, 100))
}

/// Refills each paragraph and list item of `text` to `width` columns (items' continuation lines
/// indented by two spaces), so that figures put in place of longer names leave no ragged lines.
fn rewrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut block: Vec<&str> = Vec::new();
    let flush = |block: &mut Vec<&str>, out: &mut String| {
        if block.is_empty() {
            return;
        }
        let item = block[0].starts_with("- ");
        let indent = if item { "  " } else { "" };
        let mut line = String::new();
        for word in block.iter().flat_map(|l| l.split_whitespace()) {
            if !line.is_empty() && line.len() + 1 + word.len() > width {
                out.push_str(&line);
                out.push('\n');
                line = indent.to_string();
            } else if !line.is_empty() && line != indent {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
        block.clear();
    };
    for l in text.lines() {
        if l.trim().is_empty() || l.starts_with('#') {
            flush(&mut block, &mut out);
            out.push_str(l);
            out.push('\n');
        } else {
            if l.starts_with("- ") {
                flush(&mut block, &mut out);
            }
            block.push(l);
        }
    }
    flush(&mut block, &mut out);
    out
}

/// Escapes the characters that would break a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn markdown(v: &Validation, command: &str) -> String {
    let s = &v.summary;
    let mut md = String::new();
    let _ = writeln!(md, "# Validation against published measurements\n");
    let _ = writeln!(
        md,
        "Generated by `{command}` (run from the repository root); do not edit by hand, run the \
         command again. `clustersim validate --json` prints the same rows with the scenario each \
         case became.\n"
    );
    let _ = writeln!(
        md,
        "Each case of the file is a measurement from a paper, a vendor report or a public \
         benchmark (see `shared/validation/README.md`). It is set up as its source states it and \
         run through the normal scenario pipeline; the predicted value is read in the case's own \
         convention. Nothing is tuned per case: where a source is silent, one documented default \
         applies to every case and is listed under the case's assumptions below. Error is \
         (predicted - measured) / measured.\n"
    );
    let _ = writeln!(md, "## Summary\n");
    let _ = writeln!(md, "- {}", summary_line(&s.all));
    if s.secondary.cases > 0 {
        let _ = writeln!(
            md,
            "- secondary figures of the same rows (`extra_metrics`): {} of {} compared, median \
             |error| {}, worst {}",
            s.secondary.compared,
            s.secondary.cases,
            opt_percent(s.secondary.median_abs_error),
            worst(&s.secondary)
        );
    }
    let _ = writeln!(
        md,
        "\n| group | cases | compared | not expressible | failed | median \\|error\\| | median error | worst |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---|");
    for (group, g) in &s.groups {
        let _ = writeln!(
            md,
            "| {group} | {} | {} | {} | {} | {} | {} | {} |",
            g.cases,
            g.compared,
            g.not_expressible,
            g.failed,
            opt_percent(g.median_abs_error),
            g.median_error.map_or("-".into(), percent),
            cell(&worst(g))
        );
    }
    let _ = writeln!(md, "\n## Results\n");
    let _ = writeln!(
        md,
        "| case | metric | unit | measured | predicted | error | status |"
    );
    let _ = writeln!(md, "|---|---|---|---:|---:|---:|---|");
    for r in &v.rows {
        let id = if r.primary {
            format!("`{}`", r.id)
        } else {
            format!("`{}` (extra)", r.id)
        };
        let status = match &r.status {
            Status::Compared if r.fits == Some(false) => {
                "compared; does not fit in memory".to_string()
            }
            Status::Compared => "compared".to_string(),
            Status::NotExpressible(_) => "not expressible".to_string(),
            Status::Failed(_) => "failed".to_string(),
        };
        let _ = writeln!(
            md,
            "| {id} | {} | {} | {} | {} | {} | {status} |",
            cell(&r.short),
            cell(&r.unit),
            value(r.measured),
            r.predicted.map_or("-".into(), value),
            r.error.map_or("-".into(), percent)
        );
    }
    let not_expressible = v.not_expressible();
    if !not_expressible.is_empty() {
        let _ = writeln!(md, "\n## Not expressible\n");
        let _ = writeln!(
            md,
            "The reason is the simulator's own refusal of the scenario the case became (or of a \
             minimal scenario of its kind), so a case becomes expressible when the feature lands.\n"
        );
        for (why, ids) in &not_expressible {
            let ids: Vec<String> = ids.iter().map(|i| format!("`{i}`")).collect();
            let _ = writeln!(md, "- **{}**: {}", cell(why), ids.join(", "));
        }
    }
    let failed: Vec<&Row> = v
        .rows
        .iter()
        .filter(|r| matches!(r.status, Status::Failed(_)))
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(md, "\n## Failed\n");
        for r in failed {
            let _ = writeln!(md, "- `{}`: {}", r.id, cell(&r.status.to_string()));
        }
    }
    md.push_str(CONVENTIONS);
    match weaknesses(v) {
        Some(weak) => {
            md.push_str(&weak);
            md.push_str(&super::coverage::intervals_section());
        }
        None => md.push_str(
            "\n## Where the model is weak\n\nSee `docs/VALIDATION.md` (the shared file's \
             cases), whose figures it quotes from its own rows.\n",
        ),
    }
    let _ = writeln!(md, "\n## Assumptions per case\n");
    for r in v.rows.iter().filter(|r| r.primary) {
        let _ = writeln!(md, "### `{}`\n", r.id);
        let _ = writeln!(md, "Metric: {} ({}).\n", r.metric, r.unit);
        if r.assumptions.is_empty() {
            let _ = writeln!(md, "- none\n");
        } else {
            for a in &r.assumptions {
                let _ = writeln!(md, "- {a}");
            }
            let _ = writeln!(md);
        }
    }
    // One trailing newline.
    while md.ends_with("\n\n") {
        md.pop();
    }
    md
}

const CONVENTIONS: &str = "
## How cases are mapped

- **GPU**: the source's name through the catalog (`clustersim list gpus`): as written, without its
  parenthesis, or its longest leading words the catalog knows (\"H100-SXM 80GB (DGX H100)\" is
  H100-SXM5-80GB). A variant the catalog lacks is read as the nearest entry and the case says
  so; torchtitan's Grand Teton H100 (96 GB HBM2e at 2.4 TB/s) has its own entry, from the figures
  its source states.
- **Links**: intra-node bandwidth from the GPU's datasheet unless the source states another figure
  (\"600 GB/s bidirectional\" is 300 GB/s per direction, the datasheet's). Inter-node: the count
  and rate as written (\"8x ... 200 Gb/s HCAs per node\": 8 NICs of 200 Gb/s; \"400 Gb/s per GPU\":
  one NIC per GPU); a fat tree unless stated otherwise; when not stated at all, 8 x 400 Gb/s for
  H100 and 8 x 200 Gb/s for A100. A network named InfiniBand routes by destination, as its subnet
  manager's forwarding tables do (`routing = \"destination\"`); any other is hashed per flow
  (ECMP, the scenario default). The flow-level network tier prices every case.
- **Model**: the stated shape; `ffn = 4 x hidden` when not stated; `ffn_expansion` times hidden;
  vocabulary 51200 when not stated (it does not enter a layer's time); Llama architectures have a
  gated (SwiGLU) MLP and untied embeddings. A case may instead name a simulator preset
  (`model.preset`, with its `seq_len`) for a shape its fields cannot carry (mixtures of experts).
- **Parallelism**: TP, PP, DP (or the FSDP degree), CP, EP as stated (1 when not stated);
  micro-batch 1 when not stated (torchtitan's `local_batch` when there is no pipeline, and with
  one its local batch over as many micro-batches as stages); the
  interleaved schedule with the stated VP, or 2 model chunks (the fewest it allows) when VP is
  not stated; \"full\"/\"selective\" recomputation as worded, `activation_checkpointing = true` as
  full, none when not stated; ZeRO-3/FSDP FULL_SHARD as `zero = 3`. A feature the simulator does
  not model is refused by the scenario pipeline, and that refusal is the case's reason (above).
  A configuration the simulator's memory model says does not fit is still compared, and marked.
- **Framework defaults**: where a case is silent, the documented default of the framework it
  ran on (named by its source, or by its sharding when that names DeepSpeed), the same for every
  case of that framework: NeMo (the DGX Cloud recipes, on Megatron-Core) shards the optimizer
  over the data-parallel ranks (its distributed optimizer, `zero = 1`), runs sequence
  parallelism with TP, and runs each column-split GEMM's backward collective beside its
  weight-gradient GEMM (`tp_dgrad_overlap = true`); Megatron-LM as its 2021 and 2022 papers ran
  it materialises the attention scores (`attention_kernel = \"unfused\"`: batched GEMMs around a
  fused softmax and dropout, with the scores kept for the backward unless selective
  recomputation recomputes them), and from 2022 (v3.0, Korthikanti et al.) overlaps the same
  backward collectives; DeepSpeed as a 2021 source ran it (v0.3, the first ZeRO-3) gathers each
  parameter on demand after draining the GPU and building the gather's per-rank list in Python,
  and reduces 16-bit gradients (`param_gather = \"on-demand\"`, `grad_dtype` the model's
  format); torchtitan (December 2024) runs its model code eagerly unless torch.compile is named
  (`elementwise = \"eager\"`), means its per-operator policy by \"selective\" checkpointing
  (`recompute = \"op\"`), attends with PyTorch's SDPA (FlashAttention 2: the cuDNN backend was
  opt-in), shards the norms over the sequence under TP (sequence parallelism), splits the local
  batch into as many micro-batches as pipeline stages, and overlaps TP collectives when AsyncTP
  is named (`tp_comm_overlap`).
- **Metrics**: Megatron-LM's TFLOP/s per GPU count FLOPs by its Eq. 3, which includes the
  recomputed forward pass: `hardware_tflops_per_gpu`. A plain \"achieved TFLOP/s per GPU\" (Table 2)
  is `hardware_tflops_per_gpu` when recomputation is on (the paper counts every figure by Eq. 3),
  else `tflops_per_gpu` (the two are then equal). MPT's \"MFU (incl. attention FLOPs)\" is `mfu` x
  100 (both count non-causal attention, 12 s^2 h per layer and sequence), with
  `tokens_per_s_per_gpu` as a second, convention-free row. \"training step time\" is
  `iteration_time_s`; \"tokens/s/GPU\" is `tokens_per_s` over the GPU count. Korthikanti et al.'s
  per-layer time is read from the simulated timeline of one micro-batch: from the start of a
  middle layer's forward to the start of the next layer's, plus the same in the backward (which
  with full recomputation begins with the recomputed forward); forward and backward are second
  rows. NCCL's all-reduce busBW is the bus bandwidth (nccl-tests' definition) of the collective
  priced at the sweep's largest size (4 GiB) on an 8-GPU H100 board, with the stated NCCL_ALGO.
  A video generation latency is `latency_s` (text encoding, denoising and the VAE), or
  `breakdown_s.denoise` when the metric says it excludes the VAE and the text encoder; a
  diffusion case's attention kernel is the one its model names (`attn`, read as for training
  cases), else FlashAttention 2.
";

/// The section on where the model is weak, written for a file whose cases include every
/// `{ID}` it names: each `{ID}` becomes that row's error (`+11.4%`), so the figures follow the
/// model when it moves. Elsewhere a pointer to docs/VALIDATION.md stands in for it.
const WEAKNESSES: &str = "
## Where the model is weak

The simulator prices the kernels and collectives a well-tuned stack runs, one after another as
the schedule orders them. Its errors follow the software stack more than the model or the GPU:

- **Megatron-LM and NeMo** (Megatron-LM's papers, the DGX Cloud recipes): within 15%, on either
  side; Korthikanti et al.'s layer times within 5%; the DGX Cloud (NeMo, H100) step times
  {dgxc-gpt3-175b-bf16-128gpu} and {dgxc-llama3.1-70b-bf16-24.09-64gpu}, with Hopper's
  sustained clock under 700 W and the collectives' share of the SMs priced.
  What a Megatron-LM run did that a case does not state (micro-batch, data loading) is the rest.
- **fp8 training with Transformer Engine** (NeMo and the DGX Cloud recipes on H100,
  `validation/nemo-fp8.json`, docs/VALIDATION-NEMO-FP8.md; held out:
  `validation/holdout/nemo-fp8.json`): each weight's fp8 copy is made once a step and reused by
  the step's micro-batches, as Transformer Engine does, where casting it at every micro-batch
  made large fp8 models 10-27% slow while their bf16 rows were right. NeMo's models train
  without dropout, so keep no dropout masks: Nemotron-4 340B fits on 128 GPUs without
  recomputation, as NeMo runs it (it was 31-35% slow, priced with full recomputation). Median
  |errors| 5% and 8%; Llama 3.1 405B in fp8 is still 10-12% slow, GPT-3 175B (held out) 8-17%
  fast, and the activation casts Transformer Engine fuses into the layer norms and activations
  are still priced as passes of their own. Held out, Megatron-Bridge's 25.11 tables
  (`validation/holdout/megatron-bridge-2511.json`): dense Llama on H100 within 7%, on B200 1% and
  6% fast, with the B200's GEMMs at 0.85 of the datasheet's clock under sustained load (about
  1,580 MHz at 1,000 W, flashinfer's telemetry; 14-19% fast at the rated clock, which the rows
  sent us to look up) and the roofline's default attention.
- **Mixtures of experts in training** (held out, the same tables: Qwen3 30B-A3B on 16 H100 and 8
  B200, Qwen3 235B-A22B on 64 B200, DeepSeek-V3 on 256 B200): two to three and a half times too
  fast, a known gap. NVIDIA measured 121 model TFLOP/s per H100 for Qwen3 30B-A3B; the simulator prices
  its router, the tokens' permutation into expert order and back, the all-to-all dispatch and
  combine, and the local experts as one batched GEMM, but not the host synchronisation a
  dropless dispatcher makes each layer to learn the all-to-all's split sizes (after which the GPU
  waits on kernel launches), nor the grouped GEMMs' lower efficiency at 128 small experts, nor
  Megatron-Core's folding of expert parallelism over the tensor-parallel ranks (EP wider than DP
  is refused). The visible archive
  rows (`validation/megatron-bridge-moe.json`) point at the synchronisation: the same Qwen3
  30B-A3B layouts ran twice as fast with token dropping (fixed shapes, no synchronisation) as
  dropless, on H100 and on B200, while DeepSeek-V3, whose layers carry far more work each, moved
  little; Megatron-LM's MoE ECHO (PR #2368) and NeMo AutoModel's sync-free HybridEP dispatch (PR
  #3931) describe that drain of the compute stream on every MoE layer. Not modelled yet: the
  host's time per kernel launch in training, which that needs. One visible row is not bound by
  the host: Megatron-Bridge's Qwen3 30B-A3B on 16 H100 in BF16, EP16 across two servers with
  Megatron-Core's NCCL all-to-all dispatcher (PR #3862, 41.25 s a step; CUDA graphs of attention
  and router gained nothing, PR #3868), is predicted 21% fast. The same layout took 31.3 s with
  the all-to-all overlapped, and 20.1 s on a later container with the HybridEP dispatcher (PR
  #5123), which sends a token once to each server however many of its experts are there: the
  dispatcher's implementation moves the step twofold, and the simulator prices NCCL's alone.
  Megatron-LM's single-layer benchmarks (`tests/functional_tests/test_cases/common/moe_perf`,
  H100, EP8: 6.9 ms forward and 10.5 ms backward for a DeepSeek-shaped layer, 4.3 and 7.8 ms for
  a Mixtral-shaped one) are within about 10% of the layer's GEMMs at 700 TFLOP/s plus its
  all-to-alls at NVLink's rate: large experts are bound by the GPU. Transformer Engine's
  GroupedLinear launches a GEMM per local expert (TE 2.x without `use_grouped_tensor`), and on
  Grace hosts a Transformer Engine linear layer's host time equals its GPU time (TE issue #2053).
  Two sessions on these rows are spent; what they need is a host launch model for training and
  a choice of dispatcher.
- **LLM Foundry (MPT)**: its runs attend with flash-attention's 2022 Triton port (`attn_impl:
  triton`, the benchmark script's default), priced at half of FlashAttention 2's speed (Dao
  2023). The 128 bf16 rows of the same software image on H100 and A100
  (`validation/llm-foundry-same-image.json`, docs/VALIDATION-LLM-FOUNDRY-SAME-IMAGE.md) are
  predicted with a median |error| of 7.8%, 12 of them beyond 20%; priced as FlashAttention 2
  they were 27.2%, with errors growing with the sequence length on both GPUs. What is left: H100
  rows of 2,048 tokens or fewer are predicted a median 11% fast (the A100 rows 2%), and H100
  rows of 16,384 tokens or more 10% slow (the Triton kernel does better than half of
  FlashAttention 2 there); 30B at 8,192 tokens on 8 GPUs is 30% fast on both GPUs, at 96% of
  the GPU's memory in the simulator. In the shared file the six MPT rows on H100 are between
  {mpt-7b-h100_80gb-8gpu-seq8192} and {mpt-30b-h100_80gb-8gpu-seq2048}.
- **torchtitan** (its Grand Teton H100: 96 GB of HBM2e at 2.4 TB/s, at the stated 500 W power
  limit): the 8B FSDP case {torchtitan-h100-8b-fsdp-8gpu-eager}, the 405B 3D case
  {torchtitan-h100-405b-3d-1f1b}. torchtitan's defaults
  apply where the cases are silent: its eager model code (a kernel per elementwise operation of
  RMSNorm, rotary embedding, repeat_kv and SwiGLU) unless torch.compile is named, its
  per-operator selective checkpointing for \"selective\", PyTorch's SDPA (FlashAttention 2) for
  attention, sequence parallelism with tensor parallelism, and as many pipeline micro-batches as
  stages; fp8 GEMMs pay their operand casts. The 405B case states AsyncTP, priced as every
  tensor-parallel collective beside its GEMM, which the simulator credits with a 1.16x step:
  PyTorch's own account of AsyncTP is about 20% on the forward pass and 8% end to end (Llama 3
  70B), and torchtitan's 70B table measured 1.06x. Without the overlap the case is predicted 2%
  fast; how much of the backward AsyncTP overlapped in that release is not modelled apart. The
  whole page (`validation/torchtitan-h100-202412.json`, docs/VALIDATION-TORCHTITAN.md, 18 rows)
  has a median |error| of 14%: the 8B rows without context parallelism 9-16% fast, the 70B 2D
  row within 1% and with AsyncTP 12% fast (the simulator credits AsyncTP 1.19x, torchtitan
  measured 1.06x), and context parallelism of 4 and 8 ranks 35-56% fast, the error growing with
  the sequence (not explained; PyTorch's context parallelism was experimental in that release).
- **DeepSpeed ZeRO-3 without model parallelism** (Megatron-LM's Table 2, DeepSpeed v0.3):
  {megatron-sc21-t2-zero3-174B-384gpu}, {megatron-sc21-t2-zero3-174B-768gpu} and
  {megatron-sc21-t2-zero3-174B-1536gpu} on 384, 768 and 1,536 GPUs (TFLOP/s over the measured:
  the simulator is fast). These cases run with DeepSpeed's first stage 3 as its code of the time
  did it (`param_gather = \"on-demand\"`): every weight matrix gathered by its own all-gather
  when its module runs, after the GPU drains and after the host has built the all-gather's
  output list in Python, a `narrow` view and a `get_rank` per rank (6.8 us a rank: measured with
  Python 3.8 and PyTorch 1.8.1 on the development machine's Zen 3 core and scaled to Selene's
  Zen 2 hosts, calibration/host-loop-2026-12-02; 10 ms a gather at 1,536 ranks, with the GPU
  idle), into per-rank lists that cost one copy per rank, and the gradients reduce-scattered from
  per-rank lists too; under full recomputation only the matrices within DeepSpeed's default reuse
  distance (1e9 parameters) stay gathered from the recomputed forward to the backward, which at
  GPT-3's width is the MLP's down projection alone, so the backward gathers the other three
  again. The host's loop is 2.8, 5.5 and 11 s of the simulated step. Two corrections to the
  collectives, both NCCL's own behaviour, moved these rows from 12%, 24% and 18% fast to the
  figures above: LL128 runs the rings' hops between servers too (NCCL enables it wherever NVLink
  joins a server's GPUs and the NICs sit beside them, as on Selene's DGX A100), and a ring pays
  the latency of the hops a chunk travels once instead of the network's at every step
  (docs/COLLECTIVE-VALIDATION.md). The same table's 529.6B rows
  (`validation/megatron-sc21-zero3-530b.json`, docs/VALIDATION-MEGATRON-ZERO3-530B.md) are
  further off, 31%, 46% and 83% fast on 640, 1,120 and 2,240 GPUs. Taking the simulated compute
  as right, the measured communication is 26, 39 and 53 s a step at 174.6B and 96, 100 and
  143 s at 529.6B; the simulated 14, 19 and 29 s and 36, 44 and 60 s. The measured
  communication per GPU grows with the model about as its bytes do (2.7 times from 174.6B on
  1,536 GPUs to 529.6B on 2,240 against 3.0 times the parameters), the simulated only 2.0 times:
  in the model too much of it is per call (the host's loop, the ring's hops) and too little per
  byte. With the adapters at 70 Gb/s instead of 200, four of the six rows would come within 10%
  (the 1,536- and 2,240-GPU rows 16% and 29% fast); at 100 Gb/s the 174.6B rows are 6-31% fast
  and the 529.6B rows 18-49%: the measured runs behave as if their collectives moved bytes at
  about a third of the adapters' rate. Not identified; the simulator keeps the adapters' rate.
  DeepSpeed's developers measured the same code slow with no network at all: on one server of 8
  A100 joined by NVLink, a 5.1B BERT's forward pass took about 470 ms under ZeRO-3 (DeepSpeed
  0.3.16) against 60 ms under ZeRO-2, for about 10 GB of parameters that NCCL gathers over NVLink
  in about 40 ms; the fixes of deepspeedai/DeepSpeed#1188 (June 2021: a parameter norm computed
  for a debug message at every fetch, a synchronisation inside every all-gather, a copy after
  each gather, zero-filled buffers) brought it to 270 ms. Megatron-LM's paper appeared in April
  2021, before them. How that cost divides between calls and bytes is not known, so it is not
  modelled.
  Selene's network is InfiniBand, so these cases route by destination and the rings never share
  a link; hashed as an Ethernet fabric hashes its flows (`routing = \"ecmp\"`, the scenario
  default), some of the rings' flows share spine links and the cases come out slower. The same
  switch moves the 64-GPU MPT rows (FSDP, fabric not stated, so hashed) from +3% and +13% to +6%
  and +29% when routed by destination.
- **Video diffusion** (xDiT's HunyuanVideo page, the official repository on H100): 1, 2 and 4
  GPUs {xdit-hunyuanvideo-720p-H100-1gpu}, {xdit-hunyuanvideo-720p-H100-2gpu} and
  {xdit-hunyuanvideo-720p-H100-4gpu}; 8 GPUs {xdit-hunyuanvideo-720p-H100-8gpu}. The measured
  8-GPU run saves 29 s over xDiT's own 6-GPU run of as many tokens, where the other points'
  trend predicts about 70 s; no mechanism for it is known (docs/DIFFUSION.md). A second model,
  xDiT's ConsisID page (17,776 tokens a branch, twelve layouts of Ulysses, Ring and CFG
  parallel on 1-6 \"H100\" GPUs, `validation/xdit-consisid-h100.json`,
  docs/VALIDATION-XDIT-CONSISID.md), is 9% fast on one GPU and 21-49% fast with sequence
  parallelism: at that length the measured all-to-alls cost what PCIe, not NVLink, would give.
- **Serving at small batches** (batch 1-16; `validation/serving-small-batch.json`,
  docs/VALIDATION-SERVING-SMALL-BATCH.md; held out: `validation/holdout/serving-small-batch.json`
  and `validation/holdout/serving-engines-fresh.json`): with each engine's time outside the
  kernels priced (docs/SERVING.md), median |errors| of 12%, 9% and 21%. The rest: TensorRT-LLM
  v0.5's first tokens of 128-token prompts on H100 in fp8 are 30-40% fast (small fp8 GEMMs or
  the runtime's per-request set-up; not separated); vLLM 0.6 on MI300X (an early ROCm build) is
  35-89% fast; NIM's output throughput at concurrency 1 with 7,000-token prompts is predicted
  50-130% above the measured, which latency alone does not explain (the benchmark's definition
  of the figure is not matched). Every engine constant is shared by all models and GPUs.
- **Long videos** (81 to 408 frames; `validation/video-long.json`, docs/VALIDATION-VIDEO-LONG.md;
  held out: `validation/holdout/video-long.json`): HunyuanVideo at 125-129 frames on H100 and
  L20 within 8%; Wan 2.1 14B on one H200 within 3% at 480p and 52% slow at 720p (the measured
  time grows 2.7 times for 2.3 times the tokens, the modelled 4.1 times; with FlashAttention 3
  the 720p row comes within 12% and the 480p row 35% fast, so the kernel alone does not explain
  it); Open-Sora 1.2 38-42% fast on one H100 at every length and resolution of its table, with
  its pipeline's frame mask (every block modulates twice) and its temporal blocks' rotary
  embedding priced (56-60% fast without them). Papers' runs of the same model
  (`validation/opensora-papers.json`, docs/VALIDATION-OPENSORA-PAPERS.md) agree: one GPU 25-38%
  fast, yet 2, 4 and 8 A100 with DSP within 8%, the measured speed-up from one GPU to two being
  2.6; the counted arithmetic matches PAB's (3,463 against 3,230 TFLOPs for 480p, 51 frames).
  FasterCache's 2-, 4- and 8-GPU times fit a 5.4 s serial part (modelled: 5.8 s of text encoding
  and VAE) plus a transformer that halves with each doubling (67 s on two GPUs), so one GPU's
  transformer takes 187 s where two GPUs' work is 135 s: a cost of the code path without
  sequence parallelism, not of the work per token, which the DSP rows would show. Two sessions
  did not find it (VideoSys runs SDPA there, FasterCache flash-attn); a known gap. Open-Sora 2.0 (three branches a
  step) is 13-34% slow with FlashAttention 2, which its README installs (FlashAttention 3,
  optional there, would make the one-GPU row 28% fast); its peak memory is within 8% on 1-8 GPUs,
  with a Flux-style single block's tensors held at once (23% low on one GPU without). CogVideoX 1.5 within 13% (held out: 5-10%), Wan2.2 TI2V-5B 19-30% slow on
  an L20 and an H20; held out, Wan2.2 A14B under SGLang on an H200 is 12% slow, read with the
  FlashAttention 3 SGLang prefers on Hopper and without offload, as its source states (69% slow
  read as FlashAttention 2 with Wan's own one-GPU offload). CogVideoX through diffusers without
  offload, as its sources state, is 7-21% fast (the A100 rows 18-21%): these rows were priced
  with CogVideoX's reference offload before, which hid that.
- **Collectives between servers** (nccl-tests on clouds, `validation/nccl-tests-multinode.json`,
  docs/VALIDATION-NCCL-TESTS-MULTINODE.md; held out: docs/VALIDATION-NCCL-TESTS-HOLDOUT.md): a
  median |error| of about 20% on each, a known gap. Messages of 1 GiB and more are mostly within
  16%; messages of 1-256 MiB are predicted 30-300% fast on every transport, the measured curves
  ramping more slowly than latency plus bandwidth (what was tried and what is not modelled:
  docs/COLLECTIVE-VALIDATION.md). A training step whose data-parallel collectives cross servers
  in pieces of that size inherits the error in its communication time.
";
