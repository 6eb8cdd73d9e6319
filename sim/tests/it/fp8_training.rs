//! fp8 training (`dtype = "fp8"`): the linear layers' GEMMs run in fp8 and everything else in
//! bf16, as Transformer Engine and torchao's float8 run it.

use crate::common;

use clustersim::RunOutput;
use common::training_of;

fn run(dtype: &str) -> RunOutput {
    let text = common::h100_training(
        8,
        &format!("preset = \"gpt3-1.3b\"\ndtype = \"{dtype}\""),
        r#"
        tp = 1
        micro_batch = 4
        global_batch = 32
        "#,
    );
    common::run("fp8.toml", &text, &[])
}

#[test]
fn fp8_speeds_up_the_gemms_only() {
    let bf16 = run("bf16");
    let fp8 = run("fp8");
    let step = |o: &RunOutput| training_of(o).iteration_time_s;
    // Faster, but not twice as fast: attention, norms and activations stay in bf16, and each
    // GEMM's operands are cast first, a streaming pass that at a hidden size of 2,048 costs
    // about half of what the fp8 GEMM itself does.
    let speedup = step(&bf16) / step(&fp8);
    assert!(speedup > 1.1 && speedup < 1.9, "{speedup}");
    // One cast before each of the four linear layers' GEMMs, 24 layers, forward.
    assert_eq!(common::count_ops(&fp8, "fp8_cast"), 4 * 24);
    assert_eq!(common::count_ops(&bf16, "fp8_cast"), 0);
    // Activations and weights are kept in bf16: the same memory.
    let (bf16, fp8) = (training_of(&bf16), training_of(&fp8));
    let (a, b) = (&bf16.memory.breakdown_bytes, &fp8.memory.breakdown_bytes);
    for (part, a, b) in [
        ("weights", a.weights, b.weights),
        ("activations", a.activations, b.activations),
    ] {
        assert_eq!(a, b, "{part}");
    }
    assert_eq!(fp8.model.dtype, "fp8");
    assert!(
        fp8.assumptions
            .iter()
            .any(|a| a.starts_with("fp8 training")),
        "{:?}",
        fp8.assumptions
    );
}
