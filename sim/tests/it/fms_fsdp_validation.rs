//! How `validate` reads a case of IBM's fms-fsdp trainer: its "Selective AC" checkpoints whole
//! blocks, a share p of them (stated, or implied by the case's HFU over MFU, else every block),
//! its Llama code runs eager unless the case names torch.compile, and it reduces gradients in
//! bf16.

use clustersim::validate::{self, Row};
use std::path::Path;

/// The one row of a 13B fms-fsdp case, `extra` spliced into its `parallel` and `metrics` after
/// its value.
fn row(precision: &str, extra: &str, metrics: &str) -> Row {
    let text = format!(
        r#"[{{"id": "fms", "source": "foundation-model-stack/fms-fsdp README.md",
  "hardware": {{"gpu": "A100 80GB", "count": 16, "gpus_per_node": 8,
                "inter_node": "1x 400 Gb/s per node"}},
  "model": {{"arch": "Llama 2 13B", "layers": 40, "hidden": 5120, "ffn": 13824, "heads": 40,
             "kv_heads": 40, "vocab": 32000, "seq_len": 4096}},
  "parallel": {{"zero": "FSDP FULL_SHARD", "TP": 1, "PP": 1, "DP": 16, "micro_batch": 2,
                "global_batch": 32, "AC": "Selective AC", "precision": "{precision}"{extra}}},
  "metric": "tokens/s/GPU", "value": 2000, "unit": "tokens/s/GPU"{metrics}}}]"#
    );
    let cases = validate::parse(Path::new("fms.json"), &text).unwrap();
    validate::validate_case(&cases[0], "fms.json").remove(0)
}

fn scenario(r: &Row) -> &str {
    r.scenario.as_deref().unwrap()
}

#[test]
fn selective_ac_checkpoints_the_share_of_blocks_hfu_over_mfu_implies() {
    // 3 (0.7 / 0.6 - 1) = 0.5 of 40 blocks.
    let hfu = r#", "extra_metrics": {"MFU_fraction": 0.6, "HFU_fraction": 0.7}"#;
    let r = row("bf16 + torch.compile", "", hfu);
    let s = scenario(&r);
    assert!(
        s.contains("recompute = \"full\"") && s.contains("recompute_layers = 20"),
        "{s}"
    );
    assert!(!s.contains("elementwise"), "{s}");
    assert!(s.contains("grad_dtype = \"bf16\""), "{s}");
    assert!(
        r.assumptions.iter().any(|a| a.contains("20 of the 40")),
        "{:?}",
        r.assumptions
    );
}

#[test]
fn a_stated_share_wins_and_eager_is_the_default() {
    let r = row("bf16, eager", r#", "selective_checkpointing": 0.25"#, "");
    let s = scenario(&r);
    assert!(s.contains("recompute_layers = 10"), "{s}");
    assert!(s.contains("elementwise = \"eager\""), "{s}");
    // A share that rounds to no block: no recomputation.
    let r = row("bf16", r#", "selective_checkpointing": 0.01"#, "");
    assert!(
        scenario(&r).contains("recompute = \"none\""),
        "{}",
        scenario(&r)
    );
    // Neither stated nor implied: fms-fsdp's default, every block.
    let r = row("bf16", "", "");
    let s = scenario(&r);
    assert!(
        s.contains("recompute = \"full\"") && !s.contains("recompute_layers"),
        "{s}"
    );
    assert!(
        r.assumptions.iter().any(|a| a.contains("defaults to 1")),
        "{:?}",
        r.assumptions
    );
}
