//! From a scenario's `[model]` to a `model::Transformer`: a preset or a Hugging Face config as the base,
//! explicit keys over it, defaults for the rest, and the shape checked. Errors carry the dotted
//! path of the key at fault, for `Scenario::error_at`.

use crate::hw::Dtype;
use crate::model::hf::{self, Imported};
use crate::model::preset;
use crate::model::transformer::{Activation, MAX_LAYERS, Mla, Moe, Transformer};
use crate::scenario::model::ModelSection;
use crate::scenario::suggest;
use std::path::Path;

pub use crate::key_error::KeyError as ModelError;

/// Reads the Hugging Face config at `path` (`shown` as the scenario wrote it) and parses it.
fn import(path: &Path, shown: &str) -> Result<Imported, ModelError> {
    let text = crate::files::read(path).map_err(|why| {
        ModelError::new(
            hf::PATH,
            format!("cannot read the Hugging Face config \"{shown}\": {why}"),
        )
        .with_help("hf_config is the path of a config.json, relative to the scenario")
    })?;
    hf::parse(&text, shown)
}

/// A resolved model and what was assumed on the way, in words, for the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub model: Transformer,
    pub notes: Vec<String>,
    /// The residual dropout the preset's or config's published set-up trains with, and where
    /// that is said (for training's default, `model.dropout`).
    pub dropout: Option<(f64, String)>,
}

/// Resolves `[model]`. `base_dir` is the scenario's folder, against which `hf_config` is read.
///
/// The model's name is the preset as written, else the config's `_name_or_path` (or file name),
/// else empty: the caller names it (after the scenario).
pub fn resolve(section: &ModelSection, base_dir: Option<&Path>) -> Result<Transformer, ModelError> {
    resolve_noted(section, base_dir).map(|r| r.model)
}

/// A scenario's `[model]` resolved (a key at fault located in the scenario), named after the
/// scenario when neither a preset nor a config names it, its notes added to `assumptions`.
pub fn resolve_scenario(
    s: &crate::scenario::Scenario,
    assumptions: &mut Vec<String>,
) -> Result<Transformer, crate::scenario::error::ScenarioError> {
    resolve_scenario_published(s, assumptions).map(|(model, _)| model)
}

/// [`resolve_scenario`], with the dropout the model's published set-up trains with
/// ([`Resolved::dropout`]).
pub fn resolve_scenario_published(
    s: &crate::scenario::Scenario,
    assumptions: &mut Vec<String>,
) -> Result<(Transformer, Option<(f64, String)>), crate::scenario::error::ScenarioError> {
    let resolved = resolve_noted(&s.file.model, s.source.path.parent()).map_err(|e| e.locate(s))?;
    let mut model = resolved.model;
    if model.name.is_empty() {
        model.name = s.name();
    }
    assumptions.extend(resolved.notes);
    Ok((model, resolved.dropout))
}

/// Refuses the `[model]` keys only training reads (`elementwise`, `dropout`) in a scenario of
/// another kind, saying why in that kind's words.
pub fn refuse_training_keys(
    s: &crate::scenario::Scenario,
    elementwise: &str,
    dropout: &str,
) -> Result<(), crate::scenario::error::ScenarioError> {
    let m = &s.file.model;
    let keys = [
        (m.elementwise.is_some(), "elementwise", elementwise),
        (m.dropout.is_some(), "dropout", dropout),
    ];
    match keys.into_iter().find(|k| k.0) {
        Some((_, key, why)) => Err(s
            .error_at(&format!("model.{key}"), why)
            .with_help(format!("remove {key} from [model]"))),
        None => Ok(()),
    }
}

/// [`resolve`], with the notes an import made (an unknown architecture, layers left out).
pub fn resolve_noted(m: &ModelSection, base_dir: Option<&Path>) -> Result<Resolved, ModelError> {
    let mut notes = Vec::new();
    if m.preset.is_some() && m.hf_config.is_some() {
        return Err(ModelError::new(
            "model.hf_config",
            "[model] names both a preset and a Hugging Face config",
        )
        .with_help("keep one of `preset` and `hf_config`; explicit keys override either"));
    }
    let (base, file) = match (&m.preset, &m.hf_config) {
        (Some(name), _) => {
            let model = preset::find(name).ok_or_else(|| {
                let hint = suggest::closest(name, preset::names())
                    .map(|c| format!("did you mean \"{c}\"? "))
                    .unwrap_or_default();
                ModelError::new("model.preset", format!("unknown model preset \"{name}\""))
                    .with_help(format!("{hint}`clustersim list models` shows the presets"))
            })?;
            let dropout = preset::published_dropout(name)
                .map(|p| (p, format!("preset \"{name}\"'s published config")));
            let base = Base {
                dropout,
                ..Base::from_preset(&model, name)
            };
            (base, None)
        }
        (None, Some(file)) => {
            let path = base_dir.unwrap_or(Path::new("")).join(file);
            let imported = import(&path, file)?;
            notes.extend(imported.notes.iter().cloned());
            let dropout = imported.dropout.map(|p| (p, format!("\"{file}\"")));
            let base = Base {
                dropout,
                ..Base::from_import(imported, &path)
            };
            (base, Some(file.as_str()))
        }
        (None, None) => (Base::default(), None),
    };
    let b = &base;

    // A required value: written in [model], else from the base, else an error that says where
    // it could have come from.
    let pick = |v: Option<u32>, from: Option<u32>, key: &str, json: &[&str], example: &str| {
        v.or(from).ok_or_else(|| {
            let err = ModelError::new("model", format!("missing key `{key}` in [model]"));
            match file {
                Some(file) => err.with_help(format!(
                    "{file} has no \"{}\"{}; add {example} to [model]",
                    json[0],
                    if json.len() > 1 {
                        format!(" (nor {})", json[1..].join(", "))
                    } else {
                        String::new()
                    }
                )),
                None => err.with_help(format!(
                    "add {example}, or name a preset (preset = \"llama-3-8b\") or a Hugging Face \
                     config (hf_config = \"config.json\")"
                )),
            }
        })
    };
    let hidden = pick(m.hidden, b.hidden, "hidden", hf::HIDDEN, "hidden = 4096")?;
    let heads = pick(m.heads, b.heads, "heads", hf::HEADS, "heads = 32")?;
    let layers = pick(m.layers, b.layers, "layers", hf::LAYERS, "layers = 32")?;
    let vocab = pick(m.vocab, b.vocab, "vocab", hf::VOCAB, "vocab = 32000")?;
    let seq_len = pick(
        m.seq_len,
        b.seq_len,
        "seq_len",
        hf::SEQ_LEN,
        "seq_len = 4096",
    )?;
    let gated = m.gated.or(b.gated).unwrap_or(false);
    let ffn = m.ffn.or(b.ffn).unwrap_or(4 * hidden);
    let model = Transformer {
        name: m.preset.clone().or(b.name.clone()).unwrap_or_default(),
        layers,
        hidden,
        heads,
        kv_heads: m.kv_heads.or(b.kv_heads).unwrap_or(heads),
        ffn,
        gated,
        vocab,
        seq_len,
        tied_embeddings: m.tied_embeddings.or(b.tied).unwrap_or(true),
        dtype: m.dtype.unwrap_or(Dtype::Bf16),
        activation: m.activation.or(b.activation).unwrap_or(if gated {
            Activation::Silu
        } else {
            Activation::Gelu
        }),
        head_dim_override: m.head_dim.or(b.head_dim),
        mla: b.mla,
        moe: resolve_moe(m, b, ffn)?,
        skip_attention_layers: m.skip_attention_layers.unwrap_or(0),
    };
    check(&model)?;
    Ok(Resolved {
        model,
        notes,
        dropout: base.dropout,
    })
}

/// What a preset or a config supplies, each value optional.
#[derive(Clone, Debug, Default)]
struct Base {
    name: Option<String>,
    layers: Option<u32>,
    hidden: Option<u32>,
    heads: Option<u32>,
    kv_heads: Option<u32>,
    ffn: Option<u32>,
    gated: Option<bool>,
    activation: Option<Activation>,
    vocab: Option<u32>,
    seq_len: Option<u32>,
    tied: Option<bool>,
    head_dim: Option<u32>,
    mla: Option<Mla>,
    experts: Option<u32>,
    top_k: Option<u32>,
    shared_experts: Option<u32>,
    expert_ffn: Option<u32>,
    capacity_factor: Option<f64>,
    dense_layers: Option<u32>,
    dropout: Option<(f64, String)>,
}

impl Base {
    fn from_preset(p: &Transformer, written: &str) -> Base {
        let moe = p.moe.as_ref();
        Base {
            name: Some(written.to_string()),
            layers: Some(p.layers),
            hidden: Some(p.hidden),
            heads: Some(p.heads),
            kv_heads: Some(p.kv_heads),
            ffn: Some(p.ffn),
            gated: Some(p.gated),
            activation: Some(p.activation),
            vocab: Some(p.vocab),
            seq_len: Some(p.seq_len),
            tied: Some(p.tied_embeddings),
            head_dim: p.head_dim_override,
            mla: p.mla,
            experts: moe.map(|m| m.experts),
            top_k: moe.map(|m| m.top_k),
            shared_experts: moe.map(|m| m.shared_experts),
            expert_ffn: moe.map(|m| m.expert_ffn),
            capacity_factor: moe.and_then(|m| m.capacity_factor),
            dense_layers: moe.map(|m| m.dense_layers),
            dropout: None,
        }
    }

    /// `path`: where the config was read (its file or folder name names the model when the
    /// config does not).
    fn from_import(i: Imported, path: &Path) -> Base {
        let name = i.name.or_else(|| {
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            if stem != "config" {
                return Some(stem);
            }
            let parent = path.parent()?.file_name()?;
            Some(parent.to_string_lossy().into_owned())
        });
        Base {
            name,
            layers: i.layers,
            hidden: i.hidden,
            heads: i.heads,
            kv_heads: i.kv_heads,
            ffn: i.ffn,
            gated: i.gated,
            activation: i.activation,
            vocab: i.vocab,
            seq_len: i.seq_len,
            tied: i.tied,
            head_dim: i.head_dim,
            mla: i.mla,
            experts: i.experts,
            top_k: i.top_k,
            shared_experts: i.shared_experts,
            expert_ffn: i.expert_ffn,
            capacity_factor: None,
            dense_layers: i.dense_layers,
            dropout: None,
        }
    }
}

/// The experts: from [model]'s keys over the base's; none unless one of them names `experts`.
fn resolve_moe(m: &ModelSection, b: &Base, ffn: u32) -> Result<Option<Moe>, ModelError> {
    let Some(experts) = m.experts.or(b.experts) else {
        let stray = [
            ("top_k", m.top_k.is_some()),
            ("shared_experts", m.shared_experts.is_some()),
            ("expert_ffn", m.expert_ffn.is_some()),
            ("capacity_factor", m.capacity_factor.is_some()),
            ("dense_layers", m.dense_layers.is_some()),
        ]
        .into_iter()
        .find(|(_, given)| *given);
        if let Some((key, _)) = stray {
            return Err(ModelError::new(
                format!("model.{key}"),
                format!("`{key}` describes experts, but the model has none"),
            )
            .with_help(format!(
                "add experts = 8 (routed experts per layer) for a mixture of experts, or remove \
                 `{key}`"
            )));
        }
        return Ok(None);
    };
    let top_k = m.top_k.or(b.top_k).ok_or_else(|| {
        ModelError::new("model", "missing key `top_k` in [model]")
            .with_help("a mixture of experts needs the routed experts per token, e.g. top_k = 2")
    })?;
    Ok(Some(Moe {
        experts,
        top_k,
        shared_experts: m.shared_experts.or(b.shared_experts).unwrap_or(0),
        expert_ffn: m.expert_ffn.or(b.expert_ffn).unwrap_or(ffn),
        capacity_factor: m.capacity_factor.or(b.capacity_factor),
        dense_layers: m.dense_layers.or(b.dense_layers).unwrap_or(0),
    }))
}

fn positive(value: u32, path: &str) -> Result<(), ModelError> {
    if value == 0 {
        return Err(ModelError::new(
            path,
            format!("`{path}` must be at least 1"),
        ));
    }
    Ok(())
}

/// The largest shapes a model may have: layers are built one by one, and the products of the
/// widths and lengths stay exact in 64-bit counts (far beyond any model trained so far).
const LIMITS: [(&str, u32); 7] = [
    ("model.layers", MAX_LAYERS),
    ("model.hidden", 1 << 18),
    ("model.heads", 1 << 14),
    ("model.kv_heads", 1 << 14),
    ("model.ffn", 1 << 22),
    ("model.vocab", 1 << 24),
    ("model.seq_len", 1 << 24),
];

fn check(model: &Transformer) -> Result<(), ModelError> {
    let values = [
        model.layers,
        model.hidden,
        model.heads,
        model.kv_heads,
        model.ffn,
        model.vocab,
        model.seq_len,
    ];
    for ((key, most), v) in LIMITS.into_iter().zip(values) {
        positive(v, key)?;
        if v > most {
            return Err(
                ModelError::new(key, format!("`{key}` = {v} is more than {most}"))
                    .with_help(format!("at most {most}: the simulator's largest model")),
            );
        }
    }
    if let Some(d) = model.head_dim_override {
        positive(d, "model.head_dim")?;
    } else if !model.hidden.is_multiple_of(model.heads) {
        return Err(ModelError::new(
            "model.heads",
            format!(
                "hidden = {} is not divisible by heads = {}",
                model.hidden, model.heads
            ),
        ));
    }
    if !model.heads.is_multiple_of(model.kv_heads) {
        return Err(ModelError::new(
            "model.kv_heads",
            format!(
                "heads = {} is not a multiple of kv_heads = {}",
                model.heads, model.kv_heads
            ),
        ));
    }
    if model.skip_attention_layers >= model.layers {
        return Err(ModelError::new(
            "model.skip_attention_layers",
            format!(
                "skip_attention_layers = {} leaves no layer with attention among layers = {}",
                model.skip_attention_layers, model.layers
            ),
        )
        .with_help(format!(
            "the last skip_attention_layers layers lose their attention sublayer; use 0 to {}",
            model.layers - 1
        )));
    }
    let Some(moe) = &model.moe else {
        return Ok(());
    };
    positive(moe.experts, "model.experts")?;
    positive(moe.top_k, "model.top_k")?;
    positive(moe.expert_ffn, "model.expert_ffn")?;
    if moe.top_k > moe.experts {
        return Err(ModelError::new(
            "model.top_k",
            format!(
                "top_k = {} is more than experts = {}",
                moe.top_k, moe.experts
            ),
        )
        .with_help("each token goes to top_k of the routed experts, at most all of them"));
    }
    if moe.dense_layers >= model.layers {
        return Err(ModelError::new(
            "model.dense_layers",
            format!(
                "dense_layers = {} leaves no mixture-of-experts layer among layers = {}",
                moe.dense_layers, model.layers
            ),
        )
        .with_help("dense_layers counts the leading layers that keep a dense MLP; use fewer"));
    }
    if let Some(c) = moe.capacity_factor
        && !(c > 0.0 && c.is_finite())
    {
        return Err(ModelError::new(
            "model.capacity_factor",
            format!("capacity_factor = {c} must be above 0"),
        )
        .with_help(
            "e.g. capacity_factor = 1.25 (each expert takes 1.25x an even share of tokens); \
             remove it for dropless routing",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml_text: &str) -> ModelSection {
        toml::from_str(toml_text).unwrap()
    }

    fn err(toml_text: &str) -> ModelError {
        resolve(&section(toml_text), None).unwrap_err()
    }

    #[test]
    fn a_preset_resolves_to_itself() {
        for p in preset::all() {
            let got = resolve(&section(&format!("preset = \"{}\"", p.name)), None).unwrap();
            assert_eq!(got, p, "{}", p.name);
        }
    }

    #[test]
    fn explicit_keys_override_a_preset() {
        let m = resolve(
            &section("preset = \"mixtral-8x7b\"\ntop_k = 1\nlayers = 4"),
            None,
        )
        .unwrap();
        assert_eq!(m.layers, 4);
        assert_eq!(m.moe.as_ref().unwrap().top_k, 1);
        assert_eq!(m.moe.as_ref().unwrap().experts, 8);
        assert_eq!(m.name, "mixtral-8x7b");
    }

    #[test]
    fn a_written_out_shape_gets_the_defaults() {
        let m = resolve(
            &section("layers = 2\nhidden = 64\nheads = 4\nvocab = 100\nseq_len = 16"),
            None,
        )
        .unwrap();
        assert_eq!((m.kv_heads, m.ffn, m.gated), (4, 256, false));
        assert!(m.tied_embeddings);
        assert_eq!(m.activation, Activation::Gelu);
        assert_eq!(m.dtype, Dtype::Bf16);
        assert_eq!(m.name, "");
        assert!(m.moe.is_none());
    }

    #[test]
    fn experts_written_out_make_a_mixture() {
        let m = resolve(
            &section(
                "layers = 4\nhidden = 64\nheads = 4\nvocab = 100\nseq_len = 16\ngated = true\n\
                 experts = 8\ntop_k = 2\ncapacity_factor = 1.25\ndense_layers = 1",
            ),
            None,
        )
        .unwrap();
        let moe = m.moe.unwrap();
        assert_eq!(moe.expert_ffn, 256);
        assert_eq!(moe.capacity_factor, Some(1.25));
        assert_eq!(moe.shared_experts, 0);
        assert_eq!(m.activation, Activation::Silu);
    }

    #[test]
    fn bad_shapes_are_refused_at_their_key() {
        let e = err("preset = \"llama-4-8b\"");
        assert_eq!(e.path, "model.preset");
        assert_eq!(e.message, "unknown model preset \"llama-4-8b\"");
        assert!(e.help.unwrap().starts_with("did you mean \"llama-3-8b\"?"));

        let e = err("preset = \"gpt3-1.3b\"\nheads = 7");
        assert_eq!(e.path, "model.heads");
        assert_eq!(e.message, "hidden = 2048 is not divisible by heads = 7");

        let e = err("preset = \"llama-3-8b\"\nkv_heads = 5");
        assert_eq!(e.path, "model.kv_heads");

        let e = err("hidden = 64\nheads = 4\nvocab = 100\nseq_len = 16");
        assert_eq!(e.path, "model");
        assert_eq!(e.message, "missing key `layers` in [model]");

        let e = err("preset = \"llama-3-8b\"\nlayers = 0");
        assert_eq!(e.message, "`model.layers` must be at least 1");

        let e = err("preset = \"llama-3-8b\"\ntop_k = 2");
        assert_eq!(e.path, "model.top_k");
        assert!(e.message.contains("the model has none"), "{}", e.message);

        let e = err("preset = \"mixtral-8x7b\"\ntop_k = 9");
        assert_eq!(e.path, "model.top_k");
        assert_eq!(e.message, "top_k = 9 is more than experts = 8");

        let e = err("preset = \"deepseek-v3\"\ndense_layers = 61");
        assert_eq!(e.path, "model.dense_layers");

        let e = err("preset = \"mixtral-8x7b\"\ncapacity_factor = 0.0");
        assert_eq!(e.path, "model.capacity_factor");

        let e = err("preset = \"llama-3-8b\"\nexperts = 0\ntop_k = 1");
        assert_eq!(e.message, "`model.experts` must be at least 1");

        let e = err("layers = 2\nhidden = 64\nheads = 4\nvocab = 100\nseq_len = 16\nexperts = 4");
        assert_eq!(e.message, "missing key `top_k` in [model]");

        let e = err("preset = \"llama-3-8b\"\nhf_config = \"config.json\"");
        assert_eq!(e.path, "model.hf_config");

        let e = err("preset = \"llama-2-7b\"\nskip_attention_layers = 32");
        assert_eq!(e.path, "model.skip_attention_layers");
        assert!(e.help.unwrap().contains("use 0 to 31"));
    }

    #[test]
    fn skipped_attention_layers_drop_their_weights() {
        let full = resolve(&section("preset = \"llama-2-7b\""), None).unwrap();
        let cut = resolve(
            &section("preset = \"llama-2-7b\"\nskip_attention_layers = 8"),
            None,
        )
        .unwrap();
        assert_eq!(cut.attention_layers(), 24);
        assert!(cut.has_attention(23) && !cut.has_attention(24));
        assert_eq!(cut.attention_layers_in(20..28), 4);
        // 4 x 4096^2 attention weights in each of 8 layers.
        assert_eq!(full.params() - cut.params(), 8 * 4 * 4096 * 4096);
        assert_eq!(
            full.active_params() - cut.active_params(),
            8 * 4 * 4096 * 4096
        );
    }

    #[test]
    fn a_missing_config_file_is_refused_at_hf_config() {
        let e = err("hf_config = \"no/such/config.json\"");
        assert_eq!(e.path, "model.hf_config");
        assert!(e.message.contains("no such file"), "{}", e.message);
    }

    #[test]
    fn an_explicit_head_width_lifts_the_divisibility_check() {
        let m = resolve(
            &section("layers = 2\nhidden = 100\nheads = 8\nhead_dim = 16\nvocab = 10\nseq_len = 8"),
            None,
        )
        .unwrap();
        assert_eq!(m.head_dim(), 16);
        assert_eq!(m.q_width(), 128);
    }
}
