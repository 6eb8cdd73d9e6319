//! Reading a Hugging Face `config.json` into a model shape (`[model] hf_config = "..."`).
//!
//! The standard keys (`num_hidden_layers`, `hidden_size`, `num_attention_heads`,
//! `num_key_value_heads`, `intermediate_size`, `vocab_size`, `max_position_embeddings`,
//! `tie_word_embeddings`, `hidden_act`, `head_dim`) are read, with the older spellings GPT-2, BLOOM,
//! OPT, MPT and Falcon configs use (`n_layer`, `n_embd`, `d_model`, `ffn_dim`, `expansion_ratio`,
//! ...). Mixture-of-experts keys: `num_local_experts` / `num_experts` / `n_routed_experts`,
//! `num_experts_per_tok`, `moe_intermediate_size`, `n_shared_experts` (or
//! `shared_expert_intermediate_size`), `first_k_dense_replace`, `moe_layer_freq`,
//! `decoder_sparse_step`, `mlp_only_layers`. Multi-head latent attention: `kv_lora_rank`,
//! `q_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`, `v_head_dim`.
//!
//! Whether the MLP is gated is not in the file: it follows from the architecture (`architectures`,
//! else `model_type`). An architecture this reader does not know is read for what its fields say,
//! its MLP taken as gated when the activation is SiLU, and a note says so. What is absent stays
//! absent, so that `[model]` keys can supply it; errors name the JSON key that is wrong.

mod experts;

use super::transformer::{Activation, MAX_LAYERS, Mla};
use crate::key_error::KeyError;
use experts::Experts;
use serde_json::{Map, Value};

/// The key a config is named by.
pub const PATH: &str = "model.hf_config";

/// What a config file says, each value where it said it.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    pub name: Option<String>,
    pub layers: Option<u32>,
    pub hidden: Option<u32>,
    pub heads: Option<u32>,
    pub kv_heads: Option<u32>,
    pub ffn: Option<u32>,
    pub gated: Option<bool>,
    pub activation: Option<Activation>,
    pub vocab: Option<u32>,
    pub seq_len: Option<u32>,
    pub tied: Option<bool>,
    pub head_dim: Option<u32>,
    pub mla: Option<Mla>,
    pub experts: Option<u32>,
    pub top_k: Option<u32>,
    pub shared_experts: Option<u32>,
    pub expert_ffn: Option<u32>,
    pub dense_layers: Option<u32>,
    /// The residual (hidden) dropout probability the config trains with: its `hidden_dropout`,
    /// `resid_pdrop` or `dropout`, or 0 when it states only an attention dropout (Llama-style
    /// layers have no other); None when it states none.
    pub dropout: Option<f64>,
    /// Things the reader assumed or left out, for the report.
    pub notes: Vec<String>,
}

/// The JSON keys each shape field is read from, first match wins (for messages too).
pub(crate) const LAYERS: &[&str] = &["num_hidden_layers", "n_layer", "n_layers", "num_layers"];
pub(crate) const HIDDEN: &[&str] = &["hidden_size", "n_embd", "n_embed", "d_model"];
pub(crate) const HEADS: &[&str] = &["num_attention_heads", "n_head", "n_heads"];
const KV_HEADS: &[&str] = &[
    "num_key_value_heads",
    "num_kv_heads",
    "n_head_kv",
    "kv_n_heads",
];
const FFN: &[&str] = &["intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size"];
pub(crate) const VOCAB: &[&str] = &["vocab_size", "padded_vocab_size"];
pub(crate) const SEQ_LEN: &[&str] = &[
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "max_sequence_length",
];
const ACTIVATION: &[&str] = &[
    "hidden_act",
    "activation_function",
    "hidden_activation",
    "activation",
];
const EXPERTS: &[&str] = &[
    "num_local_experts",
    "num_experts",
    "n_routed_experts",
    "moe_num_experts",
];
const TOP_K: &[&str] = &["num_experts_per_tok", "moe_top_k"];

/// Architectures whose MLP is gated (SwiGLU, GeGLU): two up projections.
const GATED: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "phi3",
    "olmo",
    "olmo2",
    "olmoe",
    "internlm2",
    "cohere",
    "cohere2",
    "granite",
    "granitemoe",
    "stablelm",
    "exaone",
    "glm",
    "glm4",
    "glm4_moe",
    "smollm3",
    "ernie4_5",
    "ernie4_5_moe",
    "hunyuan",
    "minicpm",
    "baichuan",
    "yi",
];

/// Architectures whose MLP is plain: one up projection.
const PLAIN: &[&str] = &[
    "gpt2",
    "gpt_neox",
    "gptj",
    "gpt_neo",
    "gpt_bigcode",
    "bloom",
    "opt",
    "mpt",
    "falcon",
    "nemotron",
    "phi",
    "starcoder2",
];

/// `LlamaForCausalLM` -> "llama", `Qwen3MoeForCausalLM` -> "qwen3moe": the family, lower case,
/// without separators (so that it compares with `model_type` the same way).
fn family(architecture: &str) -> String {
    let stem = [
        "ForCausalLM",
        "LMHeadModel",
        "ForConditionalGeneration",
        "Model",
    ]
    .iter()
    .find_map(|suffix| architecture.strip_suffix(suffix))
    .unwrap_or(architecture);
    squash(stem)
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn is_in(list: &[&str], family: &str) -> bool {
    list.iter().any(|f| squash(f) == family)
}

/// One JSON object, with the file's name for messages.
struct Reader<'a> {
    object: &'a Map<String, Value>,
    file: &'a str,
}

impl Reader<'_> {
    /// The first of `keys` present and not null.
    fn find(&self, keys: &[&'static str]) -> Option<(&'static str, &Value)> {
        keys.iter().find_map(|k| match self.object.get(*k) {
            None | Some(Value::Null) => None,
            Some(v) => Some((*k, v)),
        })
    }

    fn wrong(&self, key: &str, value: &Value, expected: &str) -> KeyError {
        KeyError::new(
            PATH,
            format!("\"{key}\" in {} is {value}, expected {expected}", self.file),
        )
        .with_help("fix the file, or set the value in [model], which overrides the file")
    }

    fn whole(&self, key: &'static str, value: &Value) -> Result<u32, KeyError> {
        let n = match value {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            _ => None,
        };
        n.and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| self.wrong(key, value, "a whole number (0 or more)"))
    }

    /// A probability, 0 up to 1.
    fn probability(&self, keys: &[&'static str]) -> Result<Option<f64>, KeyError> {
        match self.find(keys) {
            None => Ok(None),
            Some((k, v)) => match v.as_f64() {
                Some(p) if (0.0..1.0).contains(&p) => Ok(Some(p)),
                _ => Err(self.wrong(k, v, "a probability, at least 0 and below 1")),
            },
        }
    }

    fn uint(&self, keys: &[&'static str]) -> Result<Option<u32>, KeyError> {
        self.find(keys).map(|(k, v)| self.whole(k, v)).transpose()
    }

    /// A key that must be there when `because` is (MLA's widths once `kv_lora_rank` is).
    fn needed(&self, key: &'static str, because: &str) -> Result<u32, KeyError> {
        match self.find(&[key]) {
            Some((k, v)) => self.whole(k, v),
            None => Err(KeyError::new(
                PATH,
                format!("{} has \"{because}\" but no \"{key}\"", self.file),
            )
            .with_help(format!(
                "multi-head latent attention needs \"{key}\" as well; add it to the file"
            ))),
        }
    }

    fn boolean(&self, key: &'static str) -> Result<Option<bool>, KeyError> {
        match self.find(&[key]) {
            None => Ok(None),
            Some((_, Value::Bool(b))) => Ok(Some(*b)),
            Some((k, v)) => Err(self.wrong(k, v, "true or false")),
        }
    }

    fn string(&self, keys: &[&'static str]) -> Result<Option<(&'static str, &str)>, KeyError> {
        match self.find(keys) {
            None => Ok(None),
            Some((k, Value::String(s))) => Ok(Some((k, s.as_str()))),
            Some((k, v)) => Err(self.wrong(k, v, "a string")),
        }
    }

    /// A list of layer indices (`mlp_only_layers`).
    fn indices(&self, key: &'static str) -> Result<Vec<u32>, KeyError> {
        match self.find(&[key]) {
            None => Ok(Vec::new()),
            Some((k, Value::Array(items))) => items.iter().map(|v| self.whole(k, v)).collect(),
            Some((k, v)) => Err(self.wrong(k, v, "a list of layer numbers")),
        }
    }
}

/// The config's residual dropout ([`Imported::dropout`]).
fn dropout(r: &Reader) -> Result<Option<f64>, KeyError> {
    const RESIDUAL: &[&str] = &[
        "hidden_dropout",
        "resid_pdrop",
        "hidden_dropout_prob",
        "dropout",
    ];
    const ATTENTION: &[&str] = &[
        "attention_dropout",
        "attn_pdrop",
        "attention_probs_dropout_prob",
    ];
    if let Some(p) = r.probability(RESIDUAL)? {
        return Ok(Some(p));
    }
    Ok(r.probability(ATTENTION)?.map(|_| 0.0))
}

fn activation_of(name: &str) -> Option<Activation> {
    let n = name.to_ascii_lowercase();
    match n.as_str() {
        "silu" | "swish" | "swiglu" => Some(Activation::Silu),
        "relu" => Some(Activation::Relu),
        "relu2" | "relu_squared" | "squared_relu" | "relu_sq" => Some(Activation::SquaredRelu),
        _ if n.contains("gelu") || n == "geglu" => Some(Activation::Gelu),
        _ => None,
    }
}

/// Parses the text of a config; `shown` is how the scenario named the file, for messages.
pub fn parse(text: &str, shown: &str) -> Result<Imported, KeyError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        KeyError::new(PATH, format!("\"{shown}\" is not valid JSON: {e}"))
            .with_help("hf_config must name a Hugging Face config.json")
    })?;
    let Value::Object(top) = &value else {
        return Err(KeyError::new(
            PATH,
            format!("\"{shown}\" holds a JSON {}, not an object", kind(&value)),
        )
        .with_help("a Hugging Face config.json is one JSON object of keys"));
    };
    read(top, shown)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Reads a parsed config object.
pub fn read(top: &Map<String, Value>, shown: &str) -> Result<Imported, KeyError> {
    let mut notes = Vec::new();
    let top_reader = Reader {
        object: top,
        file: shown,
    };
    let r = language_model(&top_reader, &mut notes);
    let (fam, described) = architecture(&top_reader, &r)?;
    let hidden = r.uint(HIDDEN)?;
    let heads = r.uint(HEADS)?;
    let ffn = ffn(&r, hidden)?;
    let activation = activation(&r, &mut notes)?;
    let gated = match &fam {
        Some(f) if is_in(GATED, f) => Some(true),
        Some(f) if is_in(PLAIN, f) => Some(false),
        _ => Some(guess_gated(shown, &described, activation, &mut notes)),
    };
    let mut head_dim = r.uint(&["head_dim"])?;
    if let (Some(d), Some(h), Some(n)) = (head_dim, hidden, heads)
        && n > 0
        && h.is_multiple_of(n)
        && d == h / n
    {
        head_dim = None; // the usual width: nothing to set apart
    }
    let mla = mla(&r)?;
    let layers = r.uint(LAYERS)?;
    // Checked here as well as on the model: a sparse-layer pattern is read layer by layer.
    if let Some((k, v)) = r.find(LAYERS)
        && layers.is_some_and(|n| n > MAX_LAYERS)
    {
        return Err(r.wrong(
            k,
            v,
            &format!("at most {MAX_LAYERS} (the largest model simulated)"),
        ));
    }
    let experts = r.uint(EXPERTS)?.filter(|e| *e > 0);
    let moe = match experts {
        Some(_) => Experts::read(&r, layers, ffn, &mut notes)?,
        None => Experts::default(),
    };
    // Falcon-7B and GPTBigCode say multi-query attention with a flag rather than a head count.
    let kv_heads = match r.uint(KV_HEADS)? {
        Some(n) => Some(n),
        None if r.boolean("multi_query")? == Some(true) => Some(1),
        None => None,
    };
    let tied = r.boolean("tie_word_embeddings")?;
    let name = match top_reader.string(&["_name_or_path"])? {
        Some((_, s)) if !s.trim().is_empty() => s
            .trim_end_matches('/')
            .rsplit(['/', '\\'])
            .next()
            .map(str::to_string),
        _ => None,
    };
    Ok(Imported {
        name,
        layers,
        hidden,
        heads,
        kv_heads,
        ffn,
        gated,
        activation,
        vocab: r.uint(VOCAB)?,
        seq_len: r.uint(SEQ_LEN)?,
        tied,
        head_dim,
        mla,
        experts,
        top_k: moe.top_k,
        shared_experts: moe.shared,
        expert_ffn: moe.expert_ffn,
        dense_layers: moe.dense_layers,
        dropout: dropout(&r)?,
        notes,
    })
}

/// The object that holds the language model's shape: the config's own, or its "text_config"
/// (multimodal configs) when the top level has no layer count.
fn language_model<'a>(top: &Reader<'a>, notes: &mut Vec<String>) -> Reader<'a> {
    let nested = match top.object.get("text_config") {
        Some(Value::Object(inner)) if top.find(LAYERS).is_none() => {
            notes.push(format!(
                "{}: the language model's shape read from its \"text_config\"",
                top.file
            ));
            Some(inner)
        }
        _ => None,
    };
    Reader {
        object: nested.unwrap_or(top.object),
        file: top.file,
    }
}

/// The model's family (from its architecture, else its `model_type`), and how to name it in
/// notes.
fn architecture(top: &Reader, r: &Reader) -> Result<(Option<String>, String), KeyError> {
    let architecture = match top.find(&["architectures"]) {
        Some((_, Value::Array(a))) => a.first().and_then(Value::as_str).map(str::to_string),
        Some((k, v)) => return Err(top.wrong(k, v, "a list of class names")),
        None => None,
    };
    let model_type = r
        .string(&["model_type"])?
        .or(top.string(&["model_type"])?)
        .map(|(_, s)| s.to_string());
    let fam = architecture
        .as_deref()
        .map(family)
        .or(model_type.as_deref().map(squash));
    let described = architecture
        .clone()
        .or(model_type.clone())
        .unwrap_or_else(|| "no architecture named".into());
    Ok((fam, described))
}

/// The MLP width: given, or the hidden size times an expansion ratio.
fn ffn(r: &Reader, hidden: Option<u32>) -> Result<Option<u32>, KeyError> {
    let mut ffn = r.uint(FFN)?;
    if ffn.is_none()
        && let Some((k, v)) = r.find(&["expansion_ratio", "mlp_ratio"])
    {
        let ratio = v
            .as_f64()
            .filter(|f| *f > 0.0)
            .ok_or_else(|| r.wrong(k, v, "a number above 0"))?;
        if let Some(h) = hidden {
            ffn = Some((ratio * h as f64).round() as u32);
        }
    }
    Ok(ffn)
}

/// The MLP's activation; one this reader does not know is noted and left out.
fn activation(r: &Reader, notes: &mut Vec<String>) -> Result<Option<Activation>, KeyError> {
    Ok(match r.string(ACTIVATION)? {
        Some((k, name)) => match activation_of(name) {
            Some(a) => Some(a),
            None => {
                notes.push(format!(
                    "{}: {k} = \"{name}\" is not an activation this reader knows; no effect \
                     on sizes",
                    r.file
                ));
                None
            }
        },
        None => None,
    })
}

/// Whether the MLP of an architecture this reader does not know is gated: when its activation
/// is SiLU, as noted.
fn guess_gated(
    shown: &str,
    described: &str,
    activation: Option<Activation>,
    notes: &mut Vec<String>,
) -> bool {
    let guess = activation == Some(Activation::Silu);
    notes.push(format!(
        "{shown}: architecture {described} is not one this reader knows; its fields read \
         as written, its MLP taken as {} ({})",
        if guess { "gated" } else { "plain" },
        if guess {
            "SiLU activation"
        } else {
            "no SiLU activation"
        }
    ));
    guess
}

/// Multi-head latent attention's ranks and widths, when `kv_lora_rank` is given.
fn mla(r: &Reader) -> Result<Option<Mla>, KeyError> {
    let Some((k, v)) = r.find(&["kv_lora_rank"]) else {
        return Ok(None);
    };
    let kv_lora_rank = r.whole(k, v)?;
    let q_lora_rank = r.uint(&["q_lora_rank"])?.filter(|q| *q > 0);
    Ok(Some(Mla {
        q_lora_rank,
        kv_lora_rank,
        qk_nope_head_dim: r.needed("qk_nope_head_dim", "kv_lora_rank")?,
        qk_rope_head_dim: r.needed("qk_rope_head_dim", "kv_lora_rank")?,
        v_head_dim: r.needed("v_head_dim", "kv_lora_rank")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Imported, KeyError> {
        let v: Value = serde_json::from_str(json).unwrap();
        read(v.as_object().unwrap(), "config.json")
    }

    #[test]
    fn architecture_names_reduce_to_families() {
        assert_eq!(family("LlamaForCausalLM"), "llama");
        assert_eq!(family("Qwen3MoeForCausalLM"), "qwen3moe");
        assert_eq!(family("GPT2LMHeadModel"), "gpt2");
        assert!(is_in(GATED, &family("DeepseekV3ForCausalLM")));
        assert!(is_in(PLAIN, &family("GPTNeoXForCausalLM")));
        assert!(is_in(GATED, &squash("qwen3_moe")));
    }

    #[test]
    fn a_layer_count_past_the_largest_model_is_refused_before_its_pattern_is_read() {
        // The experts' sparse-layer pattern would otherwise be read layer by layer.
        let e = parse(
            r#"{"num_hidden_layers": 3200000000, "num_local_experts": 8, "num_experts_per_tok": 2}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("\"num_hidden_layers\""), "{}", e.message);
        assert!(e.message.contains("at most 4096"), "{}", e.message);
        assert!(parse(r#"{"num_hidden_layers": 4096}"#).is_ok());
    }

    #[test]
    fn wrong_values_name_their_key() {
        let e = parse(r#"{"num_hidden_layers": "32"}"#).unwrap_err();
        assert_eq!(e.path, "model.hf_config");
        assert!(e.message.contains("\"num_hidden_layers\""), "{}", e.message);
        assert!(
            e.message.contains("expected a whole number"),
            "{}",
            e.message
        );
        let e = parse(r#"{"hidden_size": -4}"#).unwrap_err();
        assert!(e.message.contains("\"hidden_size\""), "{}", e.message);
        let e = parse(r#"{"tie_word_embeddings": "no"}"#).unwrap_err();
        assert!(e.message.contains("true or false"), "{}", e.message);
        let e = parse(r#"{"kv_lora_rank": 512, "qk_nope_head_dim": 128}"#).unwrap_err();
        assert!(e.message.contains("\"qk_rope_head_dim\""), "{}", e.message);
    }

    #[test]
    fn older_spellings_are_read() {
        let m = parse(
            r#"{"architectures": ["MPTForCausalLM"], "d_model": 4096, "n_heads": 32,
                "n_layers": 32, "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432}"#,
        )
        .unwrap();
        assert_eq!(
            (m.hidden, m.heads, m.layers, m.ffn, m.seq_len),
            (Some(4096), Some(32), Some(32), Some(16384), Some(2048))
        );
        assert_eq!(m.gated, Some(false));
        assert!(m.notes.is_empty(), "{:?}", m.notes);
        let m = parse(
            r#"{"architectures": ["FalconForCausalLM"], "hidden_size": 4544,
                "num_attention_heads": 71, "multi_query": true, "n_layer": 32}"#,
        )
        .unwrap();
        assert_eq!(
            (m.heads, m.kv_heads, m.layers),
            (Some(71), Some(1), Some(32))
        );
    }

    #[test]
    fn an_unknown_architecture_is_read_and_noted() {
        let m = parse(r#"{"architectures": ["FooForCausalLM"], "hidden_act": "silu"}"#).unwrap();
        assert_eq!(m.gated, Some(true));
        assert!(m.notes[0].contains("FooForCausalLM"), "{:?}", m.notes);
    }

    #[test]
    fn sparse_layer_patterns_count_dense_layers() {
        // Qwen2-MoE style: every second layer sparse, layer 0 forced dense.
        let m = parse(
            r#"{"architectures": ["Qwen2MoeForCausalLM"], "num_hidden_layers": 8,
                "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
                "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 2,
                "mlp_only_layers": [1]}"#,
        )
        .unwrap();
        // Sparse: layers 3, 5, 7 (1 is forced dense); dense: 0, 1, 2, 4, 6.
        assert_eq!(m.dense_layers, Some(5));
        assert_eq!(m.shared_experts, Some(4));
        assert!(m.notes.iter().any(|n| n.contains("not all at the start")));
    }
}
