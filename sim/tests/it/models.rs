//! Model descriptions (`model`): the presets against their published parameter counts, mixture-of-
//! experts totals against active counts, Hugging Face `config.json` import against the presets,
//! and `[model]` resolution with its errors.

use clustersim::Scenario;
use clustersim::model::{Activation, Transformer, preset};
use clustersim::scenario::lower;
use clustersim::scenario::model::ModelSection;
use std::path::{Path, PathBuf};

fn hf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hf")
}

fn within(name: &str, what: &str, got: u64, billions: f64, tolerance: f64) {
    let got = got as f64 / 1e9;
    let off = (got - billions).abs() / billions;
    assert!(
        off < tolerance,
        "{name}: {got:.3} B {what} parameters, published {billions} B ({:.2}% off, allowed {:.0}%)",
        off * 100.0,
        tolerance * 100.0
    );
}

/// Total parameters (billions, as published) of every preset added with mixture-of-experts
/// support, and active ones for the mixtures.
#[test]
fn presets_match_their_published_parameter_counts() {
    // (preset, total, tolerance, active and its tolerance)
    type Published = (&'static str, f64, f64, Option<(f64, f64)>);
    let cases: &[Published] = &[
        // Jiang et al. 2024: 46.7 B total, 12.9 B active.
        ("mixtral-8x7b", 46.7, 0.01, Some((12.9, 0.01))),
        // Mistral AI: 141 B total, 39 B active.
        ("mixtral-8x22b", 141.0, 0.01, Some((39.0, 0.01))),
        // DeepSeek-V3 report: 671 B total, 37 B active (36.6 B without the input embedding,
        // which this count, like Mixtral's and Qwen's, includes).
        ("deepseek-v3", 671.0, 0.01, Some((37.0, 0.02))),
        // Qwen3 report: 30.5 B / 3.3 B and 235 B / 22 B.
        ("qwen3-30b-a3b", 30.5, 0.01, Some((3.3, 0.02))),
        ("qwen3-235b-a22b", 235.0, 0.01, Some((22.0, 0.02))),
        // Nemotron-4 340B report.
        ("nemotron-4-340b", 340.0, 0.01, None),
        // GPT-NeoX-20B: 20.55 B (Black et al. 2022).
        ("gpt-neox-20b", 20.55, 0.01, None),
        // BLOOM: 176.2 B.
        ("bloom-176b", 176.2, 0.01, None),
        ("opt-175b", 175.0, 0.01, None),
        // MPT-7B: 6.7 B; MPT-30B: 29.95 B (model cards).
        ("mpt-7b", 6.7, 0.01, None),
        ("mpt-30b", 29.95, 0.01, None),
    ];
    for (name, total, tol, active) in cases {
        let m = preset::find(name).unwrap_or_else(|| panic!("no preset {name}"));
        within(name, "total", m.params(), *total, *tol);
        match active {
            Some((billions, tol)) => {
                assert!(m.is_moe(), "{name}");
                within(name, "active", m.active_params(), *billions, *tol);
                assert!(m.active_params() < m.params());
            }
            None => {
                assert!(!m.is_moe(), "{name}");
                assert_eq!(m.active_params(), m.params(), "{name}");
            }
        }
    }
}

#[test]
fn there_is_no_invented_mpt_70b() {
    assert!(preset::find("mpt-70b").is_none());
}

#[test]
fn mixture_presets_have_their_published_expert_layout() {
    let ds = preset::find("deepseek-v3").unwrap();
    let moe = ds.moe.as_ref().unwrap();
    assert_eq!(
        (moe.experts, moe.top_k, moe.shared_experts, moe.expert_ffn),
        (256, 8, 1, 2048)
    );
    assert_eq!((ds.dense_layers(), ds.moe_layers()), (3, 58));
    assert!(!ds.is_moe_layer(2) && ds.is_moe_layer(3));
    assert!(ds.mla.is_some());
    // MLA's projections: 187.1 M weights per layer, against 205.5 M for 4 hidden^2 of MHA.
    assert_eq!(ds.attention_params(), 187_105_280);
    let mixtral = preset::find("mixtral-8x7b").unwrap();
    assert_eq!(mixtral.expert_params(), 3 * 4096 * 14336);
    assert_eq!(mixtral.layer_expert_params(), 8 * 3 * 4096 * 14336);
    assert_eq!(mixtral.dense_layers(), 0);
    let qwen = preset::find("qwen3-235b-a22b").unwrap();
    assert_eq!(qwen.head_dim(), 128);
    assert_eq!(qwen.q_width(), 64 * 128);
    let nemotron = preset::find("nemotron-4-340b").unwrap();
    assert_eq!(nemotron.activation, Activation::SquaredRelu);
    assert!(!nemotron.gated);
    assert_eq!((nemotron.heads, nemotron.kv_heads), (96, 8));
}

/// Resolves `[model]` written as TOML, as if the scenario sat in `sim/tests/hf/`.
fn resolve_in_hf_dir(toml_text: &str) -> Result<Transformer, lower::model::ModelError> {
    let section: ModelSection = toml::from_str(toml_text).unwrap();
    lower::model::resolve(&section, Some(&hf_dir()))
}

fn same_shape(imported: &Transformer, preset_name: &str, seq_len: Option<u32>) {
    let mut expected = preset::find(preset_name).unwrap();
    if let Some(seq) = seq_len {
        expected.seq_len = seq;
    }
    let mut got = imported.clone();
    got.name = expected.name.clone();
    assert_eq!(got, expected, "{preset_name}");
}

#[test]
fn hugging_face_configs_import_to_the_preset_shapes() {
    let llama = resolve_in_hf_dir("hf_config = \"llama-3-8b.json\"").unwrap();
    assert_eq!(llama.name, "llama-3-8b");
    same_shape(&llama, "llama-3-8b", None);

    let mixtral = resolve_in_hf_dir("hf_config = \"mixtral-8x7b.json\"").unwrap();
    same_shape(&mixtral, "mixtral-8x7b", None);
    assert_eq!(
        mixtral.params(),
        preset::find("mixtral-8x7b").unwrap().params()
    );

    // The configs give the longest context, the presets the pre-training sequence.
    let deepseek = resolve_in_hf_dir("hf_config = \"deepseek-v3.json\"").unwrap();
    assert_eq!(deepseek.seq_len, 163_840);
    same_shape(&deepseek, "deepseek-v3", Some(163_840));

    let qwen = resolve_in_hf_dir("hf_config = \"qwen3-30b-a3b.json\"").unwrap();
    same_shape(&qwen, "qwen3-30b-a3b", Some(40_960));
}

#[test]
fn explicit_keys_override_an_imported_config() {
    let m =
        resolve_in_hf_dir("hf_config = \"mixtral-8x7b.json\"\nseq_len = 4096\ntop_k = 1").unwrap();
    assert_eq!(m.seq_len, 4096);
    assert_eq!(m.moe.as_ref().unwrap().top_k, 1);
    assert_eq!(m.layers, 32);
}

#[test]
fn imports_say_what_they_left_out() {
    let section: ModelSection = toml::from_str("hf_config = \"deepseek-v3.json\"").unwrap();
    let r = lower::model::resolve_noted(&section, Some(&hf_dir())).unwrap();
    assert!(
        r.notes.iter().any(|n| n.contains("multi-token-prediction")),
        "{:?}",
        r.notes
    );
    let section: ModelSection = toml::from_str("hf_config = \"llama-3-8b.json\"").unwrap();
    let r = lower::model::resolve_noted(&section, Some(&hf_dir())).unwrap();
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

/// A config in a temporary folder, and the error resolving `[model]` against it gives.
fn import_error(name: &str, json: &str, extra: &str) -> lower::model::ModelError {
    let dir = std::env::temp_dir().join(format!("clustersim-models-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), json).unwrap();
    let section: ModelSection =
        toml::from_str(&format!("hf_config = \"config.json\"\n{extra}")).unwrap();
    let e = lower::model::resolve(&section, Some(&dir)).unwrap_err();
    std::fs::remove_dir_all(&dir).ok();
    e
}

#[test]
fn import_errors_name_the_json_key() {
    let llama = std::fs::read_to_string(hf_dir().join("llama-3-8b.json")).unwrap();

    let e = import_error(
        "missing",
        &llama.replace("\"num_hidden_layers\": 32,", ""),
        "",
    );
    assert_eq!(e.path, "model");
    assert_eq!(e.message, "missing key `layers` in [model]");
    let help = e.help.unwrap();
    assert!(help.contains("\"num_hidden_layers\""), "{help}");
    // ... which [model] can supply.
    let dir = std::env::temp_dir().join(format!("clustersim-models-{}-fill", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.json"),
        llama.replace("\"num_hidden_layers\": 32,", ""),
    )
    .unwrap();
    let section: ModelSection = toml::from_str("hf_config = \"config.json\"\nlayers = 2").unwrap();
    let m = lower::model::resolve(&section, Some(&dir)).unwrap();
    assert_eq!(m.layers, 2);
    assert_eq!(m.name, dir.file_name().unwrap().to_string_lossy());
    std::fs::remove_dir_all(&dir).ok();

    let e = import_error(
        "wrong",
        &llama.replace("\"hidden_size\": 4096", "\"hidden_size\": \"4096\""),
        "",
    );
    assert_eq!(e.path, "model.hf_config");
    assert!(e.message.contains("\"hidden_size\""), "{}", e.message);
    assert!(
        e.message.contains("expected a whole number"),
        "{}",
        e.message
    );

    let e = import_error("broken", "{ \"hidden_size\": ", "");
    assert_eq!(e.path, "model.hf_config");
    assert!(e.message.contains("not valid JSON"), "{}", e.message);

    let e = import_error(
        "heads",
        &llama.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"),
        "",
    );
    assert_eq!(e.path, "model.kv_heads");
    assert_eq!(e.message, "heads = 32 is not a multiple of kv_heads = 5");
}

/// Through a scenario: `hf_config` is relative to the scenario file, and errors land on the key.
#[test]
fn scenarios_read_hf_config_relative_to_themselves() {
    let text = "kind = \"training\"\n\n[model]\nhf_config = \"mixtral-8x7b.json\"\n";
    let s = Scenario::parse(&hf_dir().join("scenario.toml"), text.into(), &[]).unwrap();
    let m = lower::model::resolve(&s.file.model, s.source.path.parent()).unwrap();
    assert_eq!(m.name, "mixtral-8x7b");

    let text = "kind = \"training\"\n\n[model]\nhf_config = \"no-such.json\"\n";
    let s = Scenario::parse(&hf_dir().join("scenario.toml"), text.into(), &[]).unwrap();
    let e = lower::model::resolve(&s.file.model, s.source.path.parent()).unwrap_err();
    let located = e.locate(&s);
    assert!(
        located.position().ends_with("scenario.toml:4:13"),
        "{}",
        located.position()
    );
    assert!(
        located.message.contains("no such file"),
        "{}",
        located.message
    );

    let text =
        "kind = \"training\"\n\n[model]\npreset = \"mixtral-8x7b\"\nexperts = 8\ntop_k = 12\n";
    let s = Scenario::parse(Path::new("moe.toml"), text.into(), &[]).unwrap();
    let e = lower::model::resolve(&s.file.model, None)
        .unwrap_err()
        .locate(&s);
    assert!(e.position().ends_with("moe.toml:6:9"), "{}", e.position());
    assert_eq!(e.message, "top_k = 12 is more than experts = 8");
}

#[test]
fn unknown_moe_keys_are_refused_with_the_valid_ones() {
    let text = "kind = \"training\"\n\n[model]\npreset = \"mixtral-8x7b\"\ntopk = 2\n";
    let e = Scenario::parse(Path::new("moe.toml"), text.into(), &[]).unwrap_err();
    assert!(
        e.help
            .as_deref()
            .unwrap_or("")
            .contains("did you mean `top_k`?"),
        "{e}"
    );
}

/// The residual dropout a config trains with, read as training's default for `model.dropout`.
#[test]
fn configs_and_presets_give_their_published_dropout() {
    let dropout = |toml_text: &str| {
        let section: ModelSection = toml::from_str(toml_text).unwrap();
        lower::model::resolve_noted(&section, Some(&hf_dir()))
            .unwrap()
            .dropout
    };
    // Llama-style configs state only an attention dropout: no residual dropout at all.
    let (p, by) = dropout("hf_config = \"llama-3-8b.json\"").unwrap();
    assert_eq!((p, by.as_str()), (0.0, "\"llama-3-8b.json\""));
    let (p, by) = dropout("preset = \"opt-175b\"").unwrap();
    assert_eq!(p, 0.1);
    assert!(by.contains("\"opt-175b\"'s published config"), "{by}");
    assert_eq!(dropout("preset = \"gpt3-175b\""), None);

    // A residual dropout wins over the attention's, and a value outside [0, 1) is refused.
    let llama = std::fs::read_to_string(hf_dir().join("llama-3-8b.json")).unwrap();
    let gpt2_style = llama.replacen('{', "{\"resid_pdrop\": 0.1,", 1);
    let dir = std::env::temp_dir().join(format!("clustersim-dropout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), &gpt2_style).unwrap();
    let section: ModelSection = toml::from_str("hf_config = \"config.json\"").unwrap();
    let resolved = lower::model::resolve_noted(&section, Some(&dir)).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(resolved.dropout.map(|d| d.0), Some(0.1));
    let e = import_error(
        "dropout",
        &llama.replacen('{', "{\"hidden_dropout\": 1.5,", 1),
        "",
    );
    assert!(
        e.message.contains("\"hidden_dropout\"") && e.message.contains("probability"),
        "{}",
        e.message
    );
}
