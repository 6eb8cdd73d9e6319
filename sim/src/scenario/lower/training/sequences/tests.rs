//! `[sequences]` lowered and simulated: lengths read or sampled, packed into micro-batches, and
//! the step priced per sequence.

use crate::scenario::Scenario;
use serde_json::Value;
use std::path::Path;

/// A Llama 2 7B scenario on 4 A100 in 4 stages with `extra` appended (a `[sequences]`
/// table, or `[parallel]` batch keys).
fn text(parallel: &str, extra: &str) -> String {
    format!(
        r#"
kind = "training"
[cluster]
gpu = "A100-80GB"
nodes = 1
gpus_per_node = 4
[model]
preset = "llama-2-7b"
seq_len = 8192
[parallel]
pp = 4
schedule = "1f1b"
recompute = "full"
{parallel}
{extra}
"#
    )
}

fn report(text: &str) -> Value {
    let s = Scenario::parse(Path::new("t.toml"), text.to_string(), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    crate::run::training(&s)
        .unwrap_or_else(|e| panic!("{e}"))
        .report
}

fn error(text: &str) -> String {
    let s = Scenario::parse(Path::new("t.toml"), text.to_string(), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    match crate::run::training(&s) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn like_lengths_give_the_fixed_path_to_the_picosecond() {
    let fixed = report(&text("micro_batch = 1\nglobal_batch = 8", ""));
    let list = report(&text(
        "",
        "[sequences]\nlengths = [8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192]\npacking = \"fixed\"\nmicro_batch_tokens = 8192",
    ));
    for key in ["iteration_time_s", "tokens_per_s", "tflops_per_gpu", "hfu"] {
        assert_eq!(fixed[key], list[key], "{key}");
    }
    assert_eq!(fixed["breakdown_s"], list["breakdown_s"]);
    assert_eq!(
        fixed["memory"]["peak_bytes_per_gpu"],
        list["memory"]["peak_bytes_per_gpu"]
    );
    assert_eq!(list["sequences"]["micro_batches"], 8);
}

#[test]
fn an_asynchronous_pipeline_repeats_the_step_s_micro_batches() {
    let lengths = "lengths = [16384, 2048, 2048, 4096, 8192, 1024]";
    let t = text(
        "",
        &format!("[sequences]\n{lengths}\npacking = \"elastic\"\nmicro_batch_tokens = 8192"),
    );
    let flushed = report(&t);
    let steady = report(&t.replace("\"1f1b\"", "\"async-1f1b\""));
    let it = |r: &Value| r["iteration_time_s"].as_f64().unwrap();
    // No flush between steps: the steady state is shorter than a step from empty.
    assert!(it(&steady) > 0.0 && it(&steady) < it(&flushed));
}

#[test]
fn attention_is_priced_by_each_sequence_not_the_packed_length() {
    // Four micro-batches of 32,768 tokens each: one long sequence, or eight of 4,096.
    let long = report(&text(
        "",
        "[sequences]\nlengths = [32768, 32768, 32768, 32768]\npacking = \"fixed\"",
    ));
    let short = format!(
        "[sequences]\nlengths = [{}]\npacking = \"fixed\"\nmicro_batch_tokens = 32768",
        ["4096"; 32].join(", ")
    );
    let short = report(&text("", &short));
    assert_eq!(
        long["sequences"]["micro_batches"],
        short["sequences"]["micro_batches"]
    );
    assert_eq!(
        long["tokens_per_s"].as_f64().unwrap() * long["iteration_time_s"].as_f64().unwrap(),
        short["tokens_per_s"].as_f64().unwrap() * short["iteration_time_s"].as_f64().unwrap()
    );
    let it = |r: &Value| r["iteration_time_s"].as_f64().unwrap();
    // Attention is most of a 32K sequence's work at 7B; a eighth of it leaves the GEMMs.
    assert!(
        it(&short) < 0.7 * it(&long),
        "{} vs {}",
        it(&short),
        it(&long)
    );
    // Model FLOPs count each sequence's own quadratic attention.
    let flops = |r: &Value| r["flops"]["model_per_step"].as_f64().unwrap();
    assert!(flops(&short) < flops(&long));
}

#[test]
fn each_micro_batch_flows_through_the_pipeline_with_its_own_durations() {
    // One 32K sequence, then four micro-batches of eight 4K sequences (2 ranks each).
    let lengths = format!("[32768, {}]", ["4096"; 32].join(", "));
    let t = text(
        "cp = 2\ncp_algorithm = \"ring\"",
        &format!("[sequences]\nlengths = {lengths}\npacking = \"sequence-parallel\"\nmicro_batch_tokens = 32768"),
    )
    .replace("pp = 4", "pp = 2");
    let s = Scenario::parse(Path::new("t.toml"), t, &[]).unwrap_or_else(|e| panic!("{e}"));
    let run = crate::run::training(&s).unwrap_or_else(|e| panic!("{e}"));
    // Forward attention time of the first stage's first layer, per micro-batch.
    let mut by_micro = std::collections::BTreeMap::new();
    let (kernels, _) = run.graph.expand(&run.timeline);
    for op in &kernels.ops {
        if op.name == "attention" && op.layer == Some(0) && op.model_flops {
            *by_micro.entry(op.micro_batch.unwrap()).or_insert(0.0) += op.duration.as_secs_f64();
        }
    }
    let times: Vec<f64> = by_micro.values().copied().collect();
    assert_eq!(times.len(), 5);
    // The long sequence's micro-batch (packed first: longest first) costs about eight of the
    // others' attention (32K^2 against 8 x 4K^2).
    let ratio = times[0] / times[1];
    assert!((5.0..10.0).contains(&ratio), "{times:?}");
    assert!(
        times[1..]
            .iter()
            .all(|&x| (x - times[1]).abs() < 1e-9 * times[1])
    );
    assert!(
        run.report["breakdown_s"]["pipeline_bubble"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn bad_values_are_located() {
    let e = error(&text(
        "micro_batch = 2",
        "[sequences]\nlengths = [100]\npacking = \"fixed\"",
    ));
    assert!(e.contains("t.toml:14:") && e.contains("micro_batch"), "{e}");
    let e = error(&text(
        "",
        "[sequences]\nlengths = [100, 0]\npacking = \"fixed\"",
    ));
    assert!(e.contains("sequence 1 has no tokens"), "{e}");
    let e = error(&text(
        "",
        "[sequences]\nlengths = [100]\npacking = \"sequence-parallel\"",
    ));
    assert!(e.contains("cp = 1"), "{e}");
    let e = error(&text(
        "",
        "[sequences]\nlengths = { dist = \"lognormal\", mean = 100, sigma = 1 }\npacking = \"fixed\"",
    ));
    assert!(e.contains("count"), "{e}");
    // 128 M lengths would be drawn before the micro-batch bound refused them.
    let e = error(&text(
        "",
        "[sequences]\nlengths = { dist = \"lognormal\", mean = 100, sigma = 1 }\ncount = 128000000\npacking = \"fixed\"",
    ));
    assert!(e.contains("more than 1048576 sequences"), "{e}");
    let s = Scenario::parse(
        Path::new("t.toml"),
        text("", "[sequences]\nlengths = [1]\npacking = \"packed\""),
        &[],
    );
    assert!(s.is_err());
    // Five micro-batches for an interleaved schedule over 4 stages: said at [sequences].
    let t = text(
        "virtual_stages = 2",
        "[sequences]\nlengths = [100, 100, 100, 100, 100]\npacking = \"fixed\"",
    )
    .replace("\"1f1b\"", "\"interleaved-1f1b\"");
    let e = error(&t);
    assert!(
        e.contains("t.toml:") && e.contains("[sequences] packed"),
        "{e}"
    );
}

#[test]
fn samples_are_deterministic_by_seed() {
    let t = text(
        "",
        "[sequences]\nlengths = { dist = \"lognormal\", mean = 2000, sigma = 1.2, max = 32768 }\ncount = 32\npacking = \"elastic\"\nmicro_batch_tokens = 8192\n[sim]\nseed = 3",
    );
    let a = report(&t);
    let b = report(&t);
    assert_eq!(a.to_string(), b.to_string());
    let c = report(&t.replace("seed = 3", "seed = 4"));
    assert_ne!(a["sequences"]["tokens"], c["sequences"]["tokens"]);
}

#[test]
fn elastic_splits_what_fixed_cannot_hold_and_recomputes_by_stage() {
    let lengths = "lengths = [65536, 2048, 2048, 2048, 2048, 1024, 1024, 512, 8192, 4096]";
    let elastic = report(
        &text(
            "",
            &format!("[sequences]\n{lengths}\npacking = \"elastic\"\nmicro_batch_tokens = 8192"),
        )
        .replace("recompute = \"full\"", "recompute = \"none\""),
    );
    assert_eq!(elastic["sequences"]["split_sequences"], 1);
    assert!(
        elastic["sequences"]["micro_batch_tokens_max"]
            .as_u64()
            .unwrap()
            <= 8192
    );
    let by_stage = elastic["sequences"]["recomputed_micro_batches_by_stage"]
        .as_array()
        .unwrap();
    let n = |i: usize| by_stage[i].as_u64().unwrap();
    assert!(n(0) >= n(3), "{by_stage:?}");
    assert_eq!(elastic["memory"]["fits"], true);
    let e = error(&text(
        "",
        &format!("[sequences]\n{lengths}\npacking = \"fixed\"\nmicro_batch_tokens = 8192"),
    ));
    assert!(e.contains("t.toml:") && e.contains("65536"), "{e}");
}
