//! PyTorch's measurements: the script `calibrate/python/torch_bench.py`, embedded in the binary,
//! run with the machine's `python3`, and its JSON output read back.
//!
//! The script times what frameworks really run and this tool does not implement itself:
//! FlashAttention through `scaled_dot_product_attention`, PyTorch's norms and activations, and
//! whole transformer layers (the reference of `validate`). Its docstring describes the records.
//! Deliberately ignored: choosing among several Python installations (the first `python3` on
//! `PATH` is used) and installing PyTorch.

use clustersim::hw::Dtype;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The script, as shipped in the repository.
pub const SCRIPT: &str = include_str!("../python/torch_bench.py");

/// What the script can measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// Fused attention and elementwise kernels.
    Kernels,
    /// Whole transformer layers, forward and backward.
    Layers,
}

impl What {
    fn arg(self) -> &'static str {
        match self {
            What::Kernels => "kernels",
            What::Layers => "layers",
        }
    }
}

/// Why the script gave no results.
#[derive(Debug)]
pub enum RunError {
    /// No python3 with PyTorch, or PyTorch sees no GPU (the script's exit status 2).
    Unavailable(String),
    /// Anything else: the message says what.
    Failed(String),
}

/// Median, minimum and maximum seconds of one timed call.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Timing {
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub reps: u32,
}

/// The environment the script reports.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Environment {
    #[serde(default)]
    pub torch: String,
    #[serde(default)]
    pub cuda: Option<String>,
    #[serde(default)]
    pub device: String,
    #[serde(default)]
    pub date: String,
}

/// One measured transformer layer.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct LayerRecord {
    pub h: u64,
    pub heads: u64,
    pub ffn: u64,
    pub seq: u64,
    pub batch: u64,
    /// "gelu" (layer norm, GELU) or "swiglu" (RMS norm, gated SiLU).
    pub mlp: String,
    pub forward: Timing,
    pub backward: Timing,
}

/// One measured kernel: fused attention or an elementwise operator.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct KernelRecord {
    pub kind: String,
    pub pass: String,
    #[serde(default)]
    pub op: Option<String>,
    #[serde(default)]
    pub batch: u64,
    #[serde(default)]
    pub heads: u64,
    #[serde(default)]
    pub q_len: u64,
    #[serde(default)]
    pub kv_len: u64,
    #[serde(default)]
    pub head_dim: u64,
    #[serde(default)]
    pub causal: bool,
    pub dtype: Dtype,
    #[serde(default)]
    pub bytes: u64,
    pub median_s: f64,
    /// Calls per timed batch (absent in records of scripts that timed one call at a time).
    #[serde(default)]
    pub calls: Option<u32>,
}

/// A whole output file of the script.
#[derive(Clone, Debug, Deserialize)]
pub struct Output<R> {
    pub environment: Environment,
    pub records: Vec<R>,
}

/// Reads the script's output (`path` only names it in messages).
pub fn parse<R: for<'de> Deserialize<'de>>(
    text: &str,
    path: &Path,
    what: What,
) -> Result<Output<R>, String> {
    let not_output = |e: serde_json::Error| {
        format!(
            "{}: not an output of torch_bench.py {}: {e}",
            path.display(),
            what.arg()
        )
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(not_output)?;
    match value.get("what").and_then(serde_json::Value::as_str) {
        Some(w) if w == what.arg() => {}
        Some(w) => {
            return Err(format!(
                "{}: holds torch_bench.py's `{w}` records, not `{}`",
                path.display(),
                what.arg()
            ));
        }
        None => {
            return Err(format!(
                "{}: not an output of torch_bench.py {}: no `what`",
                path.display(),
                what.arg()
            ));
        }
    }
    serde_json::from_value(value).map_err(not_output)
}

/// Reads an output file of the script.
pub fn read<R: for<'de> Deserialize<'de>>(path: &Path, what: What) -> Result<Output<R>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text, path, what)
}

/// The keys of a layer shape (`--shape`), as the script reads them.
pub const SHAPE_KEYS: [&str; 6] = ["h", "heads", "ffn", "seq", "batch", "mlp"];

/// Checks a layer shape for the script's `--shapes`: `h=4096,heads=32,ffn=16384,seq=2048,
/// batch=1,mlp=gelu`, every key once, numbers at least 1, `heads` dividing `h`, `mlp` gelu or
/// swiglu. The error says what is wrong and what would be valid.
pub fn check_shape(text: &str) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    let (mut h, mut heads) = (0u64, 0u64);
    for item in text.split(',') {
        let (key, value) = item.split_once('=').ok_or_else(|| {
            format!(
                "--shape {text:?}: `{item}` is not key=value (keys: {})",
                SHAPE_KEYS.join(", ")
            )
        })?;
        let key = key.trim();
        let value = value.trim();
        if !SHAPE_KEYS.contains(&key) {
            return Err(format!(
                "--shape {text:?}: unknown key `{key}` (keys: {})",
                SHAPE_KEYS.join(", ")
            ));
        }
        if seen.contains(&key) {
            return Err(format!("--shape {text:?}: `{key}` given twice"));
        }
        seen.push(key);
        if key == "mlp" {
            if value != "gelu" && value != "swiglu" {
                return Err(format!(
                    "--shape {text:?}: mlp must be gelu or swiglu, not {value:?}"
                ));
            }
            continue;
        }
        let n: u64 = value.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
            format!("--shape {text:?}: {key} = {value:?} is not a whole number of at least 1")
        })?;
        match key {
            "h" => h = n,
            "heads" => heads = n,
            _ => {}
        }
    }
    let missing: Vec<&str> = SHAPE_KEYS
        .iter()
        .copied()
        .filter(|k| !seen.contains(k))
        .collect();
    if !missing.is_empty() {
        return Err(format!("--shape {text:?}: missing {}", missing.join(", ")));
    }
    if h % heads != 0 {
        return Err(format!(
            "--shape {text:?}: heads = {heads} does not divide h = {h}"
        ));
    }
    Ok(())
}

/// Runs the embedded script with `python3` into `out_dir/torch-<what>.json` and returns that
/// path; `shapes` (checked by [`check_shape`]) replace the script's layer shapes. The script's
/// progress lines go to this process's stderr.
pub fn run(what: What, out_dir: &Path, shapes: &[String]) -> Result<PathBuf, RunError> {
    let script =
        std::env::temp_dir().join(format!("clustersim-torch-bench-{}.py", std::process::id()));
    std::fs::write(&script, SCRIPT).map_err(|e| {
        RunError::Failed(format!(
            "cannot write the script to {}: {e}",
            script.display()
        ))
    })?;
    let out = out_dir.join(format!("torch-{}.json", what.arg()));
    let mut command = Command::new("python3");
    command.arg(&script).arg(what.arg()).arg(&out);
    for shape in shapes {
        command
            .arg("--shapes")
            .arg(shape.replace(char::is_whitespace, ""));
    }
    let status = command.status();
    let _ = std::fs::remove_file(&script);
    match status {
        Err(e) => Err(RunError::Unavailable(format!("cannot start python3: {e}"))),
        Ok(s) if s.success() => Ok(out),
        Ok(s) if s.code() == Some(2) => Err(RunError::Unavailable(
            "python3 has no PyTorch, or PyTorch sees no CUDA GPU (torch_bench.py exited with 2)"
                .into(),
        )),
        Ok(s) => Err(RunError::Failed(format!(
            "torch_bench.py {} failed ({s})",
            what.arg()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYERS: &str = r#"{"tool": "torch_bench.py", "what": "layers", "wall_s": 1.0,
        "environment": {"torch": "2.11.0", "cuda": "13.0", "device": "NVIDIA H200", "date": "d"},
        "records": [{"kind": "layer", "h": 4096, "heads": 32, "ffn": 16384, "seq": 2048,
            "batch": 2, "mlp": "gelu", "dtype": "bf16",
            "forward": {"median_s": 0.0025, "min_s": 0.0024, "max_s": 0.0026, "reps": 10},
            "backward": {"median_s": 0.006, "min_s": 0.0059, "max_s": 0.0062, "reps": 10}}]}"#;

    #[test]
    fn reads_layer_records_and_refuses_the_other_kind() {
        let p = Path::new("t.json");
        let out: Output<LayerRecord> = parse(LAYERS, p, What::Layers).unwrap();
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.records[0].h, 4096);
        assert_eq!(out.records[0].backward.median_s, 0.006);
        assert_eq!(out.environment.device, "NVIDIA H200");
        let err = parse::<KernelRecord>(LAYERS, p, What::Kernels).unwrap_err();
        assert!(err.contains("`layers` records, not `kernels`"), "{err}");
        let err = parse::<LayerRecord>("{", p, What::Layers).unwrap_err();
        assert!(err.starts_with("t.json: not an output"), "{err}");
    }

    #[test]
    fn layer_shapes_are_checked_before_the_script_runs() {
        assert!(check_shape("h=4096,heads=32,ffn=16384,seq=2048,batch=1,mlp=gelu").is_ok());
        assert!(check_shape(" h = 8192, heads=64,ffn=28672,seq=4096,batch=2,mlp=swiglu").is_ok());
        for (bad, why) in [
            ("h=4096,heads=32", "missing ffn, seq, batch, mlp"),
            (
                "h=4096,heads=32,ffn=1,seq=1,batch=1,mlp=relu",
                "gelu or swiglu",
            ),
            (
                "h=4096,heads=30,ffn=1,seq=1,batch=1,mlp=gelu",
                "does not divide",
            ),
            ("h=4096,heads=32,ffn=0,seq=1,batch=1,mlp=gelu", "at least 1"),
            ("h=4096,hidden=1", "unknown key `hidden`"),
            ("h=1,h=2", "given twice"),
            ("h4096", "not key=value"),
        ] {
            let e = check_shape(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn the_script_is_embedded_and_knows_both_modes() {
        assert!(SCRIPT.contains("def main(argv)"));
        assert!(SCRIPT.contains("\"kernels\", \"layers\""));
    }
}
