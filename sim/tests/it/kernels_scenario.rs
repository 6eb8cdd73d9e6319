//! `kind = "kernels"`: many small launches against consolidated ones, from a scenario file.

use crate::common;

const TEXT: &str = r#"
name = "kernels"
kind = "kernels"
[cluster]
gpu = "A100"
gpus_per_node = 1
[kernels]
children = 1000
blocks = 2
bytes = "4 KiB"
consolidate = 100
"#;

#[test]
fn both_versions_are_reported_and_consolidation_wins() {
    let r = common::kernels("k.toml", TEXT, &[]);
    assert_eq!(r.launches, 10);
    assert_eq!(r.unconsolidated.launches, 1000);
    assert!(r.speedup > 10.0);
    assert!(r.sm_share > r.unconsolidated.sm_share);
    let none = common::kernels("k.toml", TEXT, &["kernels.consolidate=1"]);
    assert!((none.speedup - 1.0).abs() < 1e-12);
}

#[test]
fn bad_counts_are_refused_at_their_keys() {
    for (set, says) in [
        ("kernels.consolidate=2000", "more than the 1000 children"),
        ("kernels.blocks=0", "at least 1"),
    ] {
        let s = common::scenario("k.toml", TEXT, &[set]);
        let e = clustersim::run(&s).err().expect(says).to_string();
        assert!(e.contains(says), "{e}");
    }
    let e = common::outcome("k.toml", &TEXT.replace("[kernels]", "[serving]\n[kernels]"))
        .expect_err("a foreign section");
    assert!(e.contains("does not apply"), "{e}");
}
