//! Reading a case's fields and its source's prose: numbers that stand on their own, bandwidths,
//! counts, power limits, GPU names read as the catalog's, and the attention kernel a source names.

use super::GIB;
use crate::hw::attention_kernel::AttentionKernel;
use crate::hw::gpu::{self, GpuSpec};
use crate::release::parse as parse_version;
use crate::workload::serving::engine::EngineKind;
use serde_json::Value;
use std::fmt::Write as _;

/// A number in a field, when the field holds one (prose such as "not stated" is None).
pub(super) fn number(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

pub(super) fn whole(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

pub(super) fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// Numbers in prose that stand on their own ("200 Gb/s", not the "3" of "NVLink3"), each with the
/// text that follows it.
fn numbers(text: &str) -> Vec<(f64, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        if let Ok(v) = text[start..i].parse::<f64>() {
            out.push((v, &text[i..]));
        }
    }
    out
}

/// A power limit in prose, in watts: "H100 SXM (500W power limit)"; None unless the text says
/// it is a limit or a cap (a bare "700 W" is a datasheet TDP).
pub(super) fn power_limit_in(text: &str) -> Option<f64> {
    let lower = text.to_lowercase();
    if !(lower.contains("power limit") || lower.contains("power cap")) {
        return None;
    }
    numbers(text).into_iter().find_map(|(v, rest)| {
        let rest = rest.trim_start();
        (rest.starts_with('W') && !rest.starts_with("Wh")).then_some(v)
    })
}

/// A bandwidth in prose, in bytes/s: "200 Gb/s", "400Gbps", "900 GB/s".
pub(super) fn bandwidth_in(text: &str) -> Option<(f64, String)> {
    first_rate(text).map(|(bw, written, _)| (bw, written))
}

/// Whether the first bandwidth in prose is a node's total: "3200 Gb/s per node" with no NIC count
/// before it (in "1x 400 Gb/s per node" the rate is the one NIC's).
pub(super) fn rate_is_per_node(text: &str) -> bool {
    first_rate(text).is_some_and(|(_, _, after)| {
        let before = &text[..text.len() - after.len()];
        after.trim_start().to_lowercase().starts_with("per node") && count_in(before).is_none()
    })
}

/// The first bandwidth in prose: bytes/s, the rate as written, and the text after its unit.
fn first_rate(text: &str) -> Option<(f64, String, &str)> {
    numbers(text).into_iter().find_map(|(v, rest)| {
        let rest = rest.trim_start();
        [
            ("Gb/s", 1e9 / 8.0),
            ("Gbps", 1e9 / 8.0),
            ("GB/s", 1e9),
            ("GBps", 1e9),
            ("Tb/s", 1e12 / 8.0),
        ]
        .into_iter()
        .find(|(unit, _)| rest.starts_with(unit))
        .map(|(unit, scale)| (v * scale, format!("{v} {unit}"), &rest[unit.len()..]))
    })
}

/// A count written "8x" or "8 x" in prose.
pub(super) fn count_in(text: &str) -> Option<u32> {
    numbers(text).into_iter().find_map(|(v, rest)| {
        let rest = rest.trim_start();
        let after = rest.strip_prefix('x').or_else(|| rest.strip_prefix('×'))?;
        let word_ends = after.chars().next().is_none_or(|c| !c.is_alphanumeric());
        (word_ends && v.fract() == 0.0 && v >= 1.0).then_some(v as u32)
    })
}

pub(super) fn not_stated(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.to_lowercase().contains("not stated"),
        _ => false,
    }
}

/// A catalog GPU for a source's name: the name as written, without its parenthesis, or its
/// longest leading words that the catalog knows ("H100 SXM 94GB HBM3" -> "H100 SXM"). A note
/// says how it was read when it was not a catalog name as written.
pub(super) fn find_gpu(name: &str) -> Result<(&'static GpuSpec, Option<String>), String> {
    if let Ok(g) = gpu::find(name) {
        let note = (g.name != name).then(|| format!("GPU \"{name}\" is the catalog's {}", g.name));
        return Ok((g, note));
    }
    let bare = name.split('(').next().unwrap_or(name).trim();
    let words: Vec<&str> = bare.split_whitespace().collect();
    for n in (1..=words.len()).rev() {
        let candidate = words[..n].join(" ");
        let Ok(g) = gpu::find(&candidate) else {
            continue;
        };
        let mut note = format!(
            "GPU \"{name}\" read as the catalog's {} (from \"{candidate}\")",
            g.name
        );
        // A memory size the source states that the catalog entry does not have.
        let catalog_gb = (g.memory_bytes as f64 / GIB).round();
        for (v, rest) in numbers(bare) {
            if rest.trim_start().starts_with("GB") && (v - catalog_gb).abs() > 0.5 {
                let _ = write!(
                    note,
                    "; the source's GPU has {v} GB, not {catalog_gb} GB, and is not in the \
                     catalog: the {} datasheet figures stand in for it",
                    g.name
                );
            }
        }
        return Ok((g, Some(note)));
    }
    let close = gpu::find(bare).err().unwrap_or_default();
    Err(format!(
        "GPU \"{name}\" is not in the catalog (closest: {})",
        close.join(", ")
    ))
}

/// The attention kernel a case's `attn` names, and why it is read so: a Triton flash attention
/// is flash-attention's 2022 Triton port, the one LLM Foundry's MPT runs (`attn_impl: triton`,
/// the default of its benchmark script), the first FlashAttention algorithm; FlashAttention 3
/// when named; any other flash attention FlashAttention 2.
pub(super) fn stated_attention(stated: &str) -> Option<(AttentionKernel, &'static str)> {
    let lower = stated.to_lowercase();
    let squashed = lower.replace(['-', ' ', '_'], "");
    if lower.contains("triton") {
        Some((
            AttentionKernel::FlashAttention1,
            "flash-attention's 2022 Triton port, the first FlashAttention algorithm (LLM \
             Foundry's `attn_impl: triton`, its benchmark script's default)",
        ))
    } else if squashed.contains("flashattention3") || squashed == "fa3" {
        Some((AttentionKernel::FlashAttention3, "as the source states"))
    } else if lower.contains("flash") {
        Some((
            AttentionKernel::FlashAttention2,
            "flash-attn 2: it does not use Hopper's asynchronous tensor-core instructions",
        ))
    } else if lower.contains("sdpa") || squashed.contains("scaleddotproduct") {
        Some((
            AttentionKernel::FlashAttention2,
            "PyTorch's scaled_dot_product_attention, whose flash backend is FlashAttention 2 \
             since PyTorch 2.2 (its cuDNN backend opt-in since 2.5.1)",
        ))
    } else {
        None
    }
}

/// The `[serving]` lines for the engine a source names ("TensorRT-LLM v0.5", "vLLM 0.9.0",
/// "SGLang"), and why: its table, at the release it states. A release older than the engine's
/// tables takes the oldest table; an NVIDIA NIM of unstated backend takes the engine of its
/// release's profiles (`nim_engine`); a source naming no modelled engine (LMDeploy) leaves the
/// lines out, so the simulator's default engine runs.
pub(super) fn stated_engine(stated: &str, a: &mut Vec<String>) -> String {
    let lower = stated.to_lowercase();
    let names: [(&str, EngineKind); 6] = [
        ("tensorrt-llm", EngineKind::TensorrtLlm),
        ("tensorrt llm", EngineKind::TensorrtLlm),
        ("trt-llm", EngineKind::TensorrtLlm),
        ("trtllm", EngineKind::TensorrtLlm),
        ("sglang", EngineKind::Sglang),
        ("vllm", EngineKind::Vllm),
    ];
    let Some((at, name, kind)) = names
        .iter()
        .filter_map(|&(n, k)| lower.find(n).map(|at| (at, n, k)))
        .min_by_key(|&(at, _, _)| at)
    else {
        if let Some(lines) = nim_engine(&lower, a) {
            return lines;
        }
        if !lower.is_empty() {
            a.push(format!(
                "engine \"{stated}\" has no table here: the simulator's default engine"
            ));
        }
        return String::new();
    };
    let stack = kind.stack();
    let after = &lower[at + name.len()..];
    let version = after
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | ':'))
        .take(3)
        .find_map(|t| parse_version(t).ok());
    let mut lines = format!("engine = \"{}\"\n", kind.name());
    match version {
        None => a.push(format!(
            "{} release not stated: the newest table",
            kind.name()
        )),
        Some(v) => match stack.era(Some(v)) {
            Ok(_) => {
                let _ = writeln!(lines, "engine_version = \"{}.{}\"", v.0, v.1);
            }
            Err(_) => {
                let oldest = &stack.eras[0];
                a.push(format!(
                    "{} {}.{} predates the tables: the oldest, {}",
                    kind.name(),
                    v.0,
                    v.1,
                    oldest.label
                ));
                let _ = writeln!(
                    lines,
                    "engine_version = \"{}.{}\"",
                    oldest.from.0, oldest.from.1
                );
            }
        },
    }
    lines
}

/// The engine of an NVIDIA NIM container whose backend a source leaves unstated: NIM 1.x serves
/// a validated model on a data-centre GPU from its optimized profiles, pre-compiled TensorRT-LLM
/// engines, in preference to its generic vLLM ones (NIM for LLMs 1.x, "Model Profiles"), so
/// TensorRT-LLM's C++ runtime; NIM 2 runs vLLM profiles. None when `lower` names no NIM release.
fn nim_engine(lower: &str, a: &mut Vec<String>) -> Option<String> {
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | ':'))
        .filter(|w| !w.is_empty())
        .collect();
    let at = words.iter().position(|&w| w == "nim")?;
    let (major, minor) = words[at..]
        .iter()
        .take(3)
        .find_map(|t| parse_version(t).ok())?;
    let lines = if major < 2 {
        a.push(format!(
            "NIM {major}.{minor}, backend not stated: TensorRT-LLM's C++ runtime before its 1.0, \
             the engines of NIM 1's optimized profiles (NIM for LLMs docs, Model Profiles: \
             optimized profiles are pre-compiled TensorRT-LLM engines, preferred to generic vLLM \
             ones)"
        ));
        "engine = \"tensorrt-llm\"\nengine_version = \"0.10\"\n"
    } else {
        a.push(format!(
            "NIM {major}.{minor}, backend not stated: vLLM, the engine of NIM 2's profiles"
        ));
        "engine = \"vllm\"\n"
    };
    Some(lines.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdpa_reads_as_its_flash_backend() {
        let fa2 = Some(AttentionKernel::FlashAttention2);
        let k = |t: &str| stated_attention(t).map(|(k, _)| k);
        assert_eq!(k("SDPA (torch scaled_dot_product_attention, causal)"), fa2);
        assert_eq!(k("torch.nn.functional.scaled_dot_product_attention"), fa2);
        assert_eq!(k("SDPA flash attention v2 (README)"), fa2);
        assert_eq!(k("xformers memory-efficient"), None);
    }

    #[test]
    fn power_limits_are_read_only_when_stated_as_limits() {
        assert_eq!(
            power_limit_in("H100 SXM 96GB HBM2e (500W power limit)"),
            Some(500.0)
        );
        assert_eq!(power_limit_in("H100 capped: power cap 450 W"), Some(450.0));
        assert_eq!(power_limit_in("H100 SXM 700 W"), None);
        assert_eq!(power_limit_in("A100-SXM4-80GB"), None);
    }

    #[test]
    fn prose_is_read_honestly() {
        let (bw, _) = bandwidth_in("8x Mellanox HDR InfiniBand 200 Gb/s HCAs per node").unwrap();
        assert_eq!(bw, 25e9);
        assert_eq!(count_in("8x Mellanox HDR InfiniBand 200 Gb/s"), Some(8));
        assert_eq!(count_in("8 x 400 Gb/s"), Some(8));
        assert_eq!(count_in("RDMA backend network 400 Gb/s per GPU"), None);
        let (bw, _) = bandwidth_in("NVLink3 + NVSwitch (600 GB/s bidirectional per GPU)").unwrap();
        assert_eq!(bw, 600e9);
    }

    #[test]
    fn gpu_names_are_normalised_to_the_catalog() {
        assert_eq!(find_gpu("h100_80gb").unwrap().0.name, "H100-SXM5-80GB");
        assert_eq!(
            find_gpu("H100-SXM 80GB (DGX H100 / DGX Cloud)")
                .unwrap()
                .0
                .name,
            "H100-SXM5-80GB"
        );
        let (g, _) = find_gpu("H100 SXM 96GB HBM2e (500W power limit)").unwrap();
        assert_eq!(g.name, "H100-SXM-96GB-HBM2e");
        // A variant the catalog lacks: its leading words, and a note on what differs.
        let (g, note) = find_gpu("H100 SXM 94GB HBM3 (a test part)").unwrap();
        assert_eq!(g.name, "H100-SXM5-80GB");
        assert!(note.unwrap().contains("94 GB"));
        assert!(find_gpu("Z9000").is_err());
    }

    #[test]
    fn engines_are_read_with_their_release() {
        let mut a = Vec::new();
        assert_eq!(
            stated_engine(
                "TensorRT-LLM v0.5 (TensorRT 9.1), gptSessionBenchmark",
                &mut a
            ),
            "engine = \"tensorrt-llm\"\nengine_version = \"0.5\"\n"
        );
        assert_eq!(
            stated_engine("vLLM v0.9.0; client genai-bench", &mut a),
            "engine = \"vllm\"\nengine_version = \"0.9\"\n"
        );
        assert_eq!(
            stated_engine("vLLM 0.6.0 OpenAI server", &mut a),
            "engine = \"vllm\"\nengine_version = \"0.6\"\n"
        );
        assert_eq!(
            stated_engine("vLLM 0.3.3 OpenAI server", &mut a),
            "engine = \"vllm\"\nengine_version = \"0.4\"\n"
        );
        assert!(a.last().unwrap().contains("predates"));
        assert_eq!(
            stated_engine("SGLang (version not stated)", &mut a),
            "engine = \"sglang\"\n"
        );
        assert_eq!(
            stated_engine(
                "NVIDIA NIM 1.1.1 container (backend profile not stated)",
                &mut a
            ),
            "engine = \"tensorrt-llm\"\nengine_version = \"0.10\"\n"
        );
        assert_eq!(
            stated_engine("NVIDIA NIM container 1.8.0 (backend not stated)", &mut a),
            "engine = \"tensorrt-llm\"\nengine_version = \"0.10\"\n"
        );
        assert_eq!(stated_engine("LMDeploy TurboMind v0.1.0a1", &mut a), "");
        assert!(a.last().unwrap().contains("no table"));
    }
}
