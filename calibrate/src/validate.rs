//! `validate`: one transformer layer's forward and backward time, measured on a GPU by PyTorch
//! (`torch_bench.py layers`), against the simulator's prediction for the same layer from a
//! calibration profile.
//!
//! The prediction is the simulator's own training path, not a formula of this tool: a scenario of
//! the layer's model (four layers, one GPU, micro-batch = the measured batch, bf16, no
//! recomputation, no parallelism), priced by the profile (its measurements first, the roofline
//! for what it lacks), and layer 2's forward and backward read from the simulated timeline
//! (`RunOutput::layer_times`). Error = predicted / measured - 1, in %. The check passes when the
//! median |error| of forward + backward over the shapes is at most 5%.
//!
//! Deliberately ignored: what PyTorch does outside the layer (optimizer, data loading), biases
//! (added in the GEMM epilogue by cuBLASLt), and the difference between layer norm and RMS norm
//! (the simulator counts the same bytes for both).

use crate::table::write_table;
use crate::torch::{LayerRecord, Output};
use clustersim::Scenario;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// The largest median |error| of forward + backward that passes.
pub const MAX_MEDIAN_ERROR: f64 = 0.05;

/// Layers in the simulated model (the middle one is read).
const LAYERS: u32 = 4;

/// The profile a prediction uses: a file or a shipped profile's name.
pub struct ProfileChoice {
    /// What `cluster.profile` says in the scenario.
    pub reference: String,
    /// Its catalog GPU.
    pub gpu: &'static str,
    /// Its provenance's source line, for the report.
    pub source: String,
}

impl ProfileChoice {
    /// A shipped profile's name, or else a file.
    pub fn resolve(arg: &str) -> Result<ProfileChoice, String> {
        if let Some(p) = clustersim::hw::profile::shipped_profile(arg) {
            return Ok(ProfileChoice {
                reference: arg.to_string(),
                gpu: p.gpu,
                source: p.provenance.source,
            });
        }
        let path = Path::new(arg);
        let p = clustersim::files::profile(path).map_err(|e| {
            format!(
                "{e} (the profile is a file or one of the shipped profiles: {})",
                clustersim::hw::profile::shipped_names().join(", ")
            )
        })?;
        let absolute = std::fs::canonicalize(path)
            .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
        Ok(ProfileChoice {
            reference: absolute.display().to_string(),
            gpu: p.gpu,
            source: p.provenance.source,
        })
    }
}

/// One shape's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub shape: LayerRecord,
    pub predicted_forward_s: f64,
    pub predicted_backward_s: f64,
}

fn error(predicted: f64, measured: f64) -> f64 {
    predicted / measured - 1.0
}

impl Row {
    pub fn forward_error(&self) -> f64 {
        error(self.predicted_forward_s, self.shape.forward.median_s)
    }
    pub fn backward_error(&self) -> f64 {
        error(self.predicted_backward_s, self.shape.backward.median_s)
    }
    pub fn total_error(&self) -> f64 {
        error(
            self.predicted_forward_s + self.predicted_backward_s,
            self.shape.forward.median_s + self.shape.backward.median_s,
        )
    }
    /// "h 4096, 32 heads, ffn 16384, seq 2048 x 2, gelu"
    pub fn label(&self) -> String {
        let s = &self.shape;
        format!(
            "h {}, {} heads, ffn {}, seq {} x {}, {}",
            s.h, s.heads, s.ffn, s.seq, s.batch, s.mlp
        )
    }
}

/// The scenario that prices `shape` with `profile`.
pub fn scenario_toml(shape: &LayerRecord, profile: &ProfileChoice) -> Result<String, String> {
    let gated = match shape.mlp.as_str() {
        "gelu" => false,
        "swiglu" => true,
        other => return Err(format!("unknown MLP {other:?} (gelu or swiglu)")),
    };
    Ok(format!(
        "name = \"layer h{h} s{seq} b{batch} {mlp}\"\nkind = \"training\"\n\n\
         [cluster]\ngpu = \"{gpu}\"\nnodes = 1\ngpus_per_node = 1\nprofile = {profile:?}\n\n\
         [model]\nlayers = {LAYERS}\nhidden = {h}\nheads = {heads}\nffn = {ffn}\nseq_len = {seq}\n\
         vocab = 32000\ngated = {gated}\ndtype = \"bf16\"\n\n\
         [parallel]\ntp = 1\npp = 1\ndp = 1\nmicro_batch = {batch}\nglobal_batch = {batch}\n\
         recompute = \"none\"\n",
        h = shape.h,
        seq = shape.seq,
        batch = shape.batch,
        mlp = shape.mlp,
        gpu = profile.gpu,
        profile = profile.reference,
        heads = shape.heads,
        ffn = shape.ffn,
    ))
}

/// The simulator's forward and backward seconds of the middle layer of `shape`'s model.
pub fn predict(shape: &LayerRecord, profile: &ProfileChoice) -> Result<(f64, f64), String> {
    let toml = scenario_toml(shape, profile)?;
    let origin = format!("layer h{} seq {} batch {}", shape.h, shape.seq, shape.batch);
    let scenario = Scenario::parse(Path::new(&origin), toml, &[]).map_err(|e| e.to_string())?;
    let output = clustersim::run(&scenario).map_err(|e| e.to_string())?;
    output
        .layer_times(LAYERS / 2)
        .ok_or_else(|| format!("{origin}: the simulated timeline has no per-layer operations"))
}

/// Every shape of a reference, predicted.
pub fn compare(
    reference: &Output<LayerRecord>,
    profile: &ProfileChoice,
) -> Result<Vec<Row>, String> {
    reference
        .records
        .iter()
        .map(|shape| {
            let (f, b) = predict(shape, profile)?;
            Ok(Row {
                shape: shape.clone(),
                predicted_forward_s: f,
                predicted_backward_s: b,
            })
        })
        .collect()
}

/// Median |error| of forward + backward.
pub fn median_abs_error(rows: &[Row]) -> Option<f64> {
    let mut errors: Vec<f64> = rows.iter().map(|r| r.total_error().abs()).collect();
    clustersim::stats::median(&mut errors)
}

/// The human-readable comparison.
pub fn text(reference: &Output<LayerRecord>, profile: &ProfileChoice, rows: &[Row]) -> String {
    let env = &reference.environment;
    let mut out = format!(
        "Layer validation: PyTorch {} (CUDA {}) on {}, {}; profile {} ({})\n\n",
        env.torch,
        env.cuda.as_deref().unwrap_or("?"),
        env.device,
        env.date,
        profile.reference,
        profile.source
    );
    let ms = |s: f64| format!("{:.3}", s * 1e3);
    let pct = |e: f64| format!("{:+.1}%", 100.0 * e);
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.label(),
                ms(r.shape.forward.median_s),
                ms(r.predicted_forward_s),
                pct(r.forward_error()),
                ms(r.shape.backward.median_s),
                ms(r.predicted_backward_s),
                pct(r.backward_error()),
                pct(r.total_error()),
            ]
        })
        .collect();
    write_table(
        &mut out,
        "  ",
        [
            "layer", "fwd ms", "sim ms", "error", "bwd ms", "sim ms", "error", "fwd+bwd",
        ],
        &cells,
    );
    if let Some(m) = median_abs_error(rows) {
        let verdict = if m <= MAX_MEDIAN_ERROR {
            "passes"
        } else {
            "fails"
        };
        let worst = rows
            .iter()
            .map(|r| r.total_error().abs())
            .fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "\nMedian |error| of forward + backward: {:.1}% over {} shapes (worst {:.1}%): {verdict} \
             the {:.0}% bar.",
            100.0 * m,
            rows.len(),
            100.0 * worst,
            100.0 * MAX_MEDIAN_ERROR
        );
    }
    out
}

/// The comparison as JSON (written beside the reference).
pub fn json(reference: &Output<LayerRecord>, profile: &ProfileChoice, rows: &[Row]) -> Value {
    json!({
        "profile": profile.reference,
        "profile_source": profile.source,
        "reference_environment": {
            "torch": reference.environment.torch,
            "cuda": reference.environment.cuda,
            "device": reference.environment.device,
            "date": reference.environment.date,
        },
        "max_median_abs_error": MAX_MEDIAN_ERROR,
        "median_abs_error": median_abs_error(rows),
        "rows": rows.iter().map(|r| json!({
            "layer": r.label(),
            "measured_forward_s": r.shape.forward.median_s,
            "measured_backward_s": r.shape.backward.median_s,
            "predicted_forward_s": r.predicted_forward_s,
            "predicted_backward_s": r.predicted_backward_s,
            "forward_error": r.forward_error(),
            "backward_error": r.backward_error(),
            "total_error": r.total_error(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torch::Timing;

    fn timing(s: f64) -> Timing {
        Timing {
            median_s: s,
            min_s: s,
            max_s: s,
            reps: 1,
        }
    }

    fn shape(h: u64, mlp: &str) -> LayerRecord {
        LayerRecord {
            h,
            heads: h / 128,
            ffn: 4 * h,
            seq: 2048,
            batch: 1,
            mlp: mlp.into(),
            forward: timing(1e-3),
            backward: timing(2e-3),
        }
    }

    #[test]
    fn predicts_with_a_shipped_profile_and_grows_with_the_layer() {
        let profile = ProfileChoice::resolve("h100-sxm5-80gb-vidur").unwrap();
        assert_eq!(profile.gpu, "H100-SXM5-80GB");
        let (f1, b1) = predict(&shape(2048, "gelu"), &profile).unwrap();
        let (f2, b2) = predict(&shape(4096, "gelu"), &profile).unwrap();
        assert!(f1 > 0.0 && b1 > f1, "{f1} {b1}");
        // Twice the width: about four times the GEMM work, more than twice the time.
        assert!(f2 > 2.0 * f1 && b2 > 2.0 * b1, "{f1} {f2} {b1} {b2}");
        let (fg, _) = predict(&shape(4096, "swiglu"), &profile).unwrap();
        assert!(
            fg > f2,
            "a gated MLP of the same ffn does more work: {fg} vs {f2}"
        );
    }

    #[test]
    fn errors_and_the_verdict() {
        let r = Row {
            shape: shape(2048, "gelu"),
            predicted_forward_s: 1.1e-3,
            predicted_backward_s: 1.9e-3,
        };
        assert!((r.forward_error() - 0.1).abs() < 1e-12);
        assert!((r.backward_error() + 0.05).abs() < 1e-12);
        assert!(r.total_error().abs() < 1e-12);
        assert_eq!(median_abs_error(std::slice::from_ref(&r)), Some(0.0));
        assert!(median_abs_error(&[]).is_none());
    }

    #[test]
    fn refuses_an_unknown_mlp_and_a_missing_profile() {
        let profile = ProfileChoice::resolve("a100-sxm4-80gb-vidur").unwrap();
        let err = scenario_toml(&shape(2048, "relu"), &profile).unwrap_err();
        assert!(err.contains("gelu or swiglu"), "{err}");
        let err = ProfileChoice::resolve("no/such/profile.toml")
            .err()
            .unwrap();
        assert!(err.contains("shipped profiles"), "{err}");
    }
}
