//! Video DiT presets: the published shapes of the video diffusion transformers, their text
//! encoders and their VAE decoders ([`find`] by name or alias, [`all`]). Each preset's `source`
//! names its main file and `// from` comments the rest. Sources:
//! docs/MODELS.md#video-preset-sources
//!
//! Conventions (in full: docs/MODELS.md#video-preset-conventions):
//! - `text_dim` is the width of the text features the blocks receive: every model here projects
//!   its encoder's output to `hidden` first, so `text_dim == hidden` (encoder widths in comments).
//! - `decoder_channels` lists the decoder's levels from full resolution down.
//! - `time_doubling_levels` lists the decoder levels reached by a time-upsampling step.
//! - VAE `params` are the decoder's alone, counted from its code and config.
//! - `params` is the denoiser's published count; the tests derive one from the shapes (attention
//!   `4 h^2`, MLP `2 h ffn` or `3 h ffn`, cross-attention `2 h^2 + 2 h text_dim` more), and each
//!   preset's comment gives the ratio and what the derivation leaves out (mostly adaptive
//!   layer-norm modulation weights).

mod catalog;
mod components;

use super::dit::VideoDit;
use catalog::PRESETS;

/// Other names a preset answers to, besides its name with any case, spaces or punctuation
/// (so "hunyuan-video" and "CogVideoX 2B" need no entry).
const ALIASES: &[(&str, &[&str])] = &[
    (
        "hunyuanvideo",
        &["hunyuanvideo-t2v", "hunyuanvideo-13b", "hyvideo"],
    ),
    ("wan2.1-14b", &["wan2.1-t2v-14b", "wan-14b"]),
    ("wan2.1-1.3b", &["wan2.1-t2v-1.3b", "wan-1.3b"]),
    ("wan2.2-t2v-a14b", &["wan2.2-a14b", "wan2.2-i2v-a14b"]),
    ("cogvideox1.5-5b", &["cogvideox1.5-5b-i2v"]),
    (
        "open-sora-1.2",
        &["opensora-v1.2", "opensora-stdit-v3", "stdit3-xl/2"],
    ),
    ("open-sora-2.0", &["opensora-v2"]),
    ("step-video-t2v", &["stepvideo", "stepvideo-t2v-30b"]),
    ("consisid", &["consisid-preview"]),
];

/// Every preset.
pub fn all() -> Vec<VideoDit> {
    PRESETS.to_vec()
}

/// The preset called `name` (case-insensitive; aliases allowed, e.g. "hunyuan-video",
/// "wan2.1-14b", "Wan-AI/Wan2.1-T2V-14B"). Spaces and punctuation are ignored, and a Hugging Face
/// organisation before a `/` may be given.
pub fn find(name: &str) -> Option<VideoDit> {
    let full = normalise(name);
    let repo = name.rsplit_once('/').map(|(_, r)| normalise(r));
    let matches = |candidate: &str| {
        let c = normalise(candidate);
        c == full || repo.as_deref() == Some(c.as_str())
    };
    PRESETS
        .iter()
        .find(|p| {
            matches(p.name)
                || ALIASES
                    .iter()
                    .filter(|(preset, _)| *preset == p.name)
                    .any(|(_, aliases)| aliases.iter().any(|a| matches(a)))
        })
        .cloned()
}

/// Lower-case ASCII letters and digits only.
fn normalise(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A rough denoiser count from the shapes: attention 4·h² (q, k, v, out), MLP 2 or 3·h·ffn;
    /// dual-stream blocks count twice (a stream each); cross-attention blocks add
    /// 2·h² + 2·h·text_dim (q and out, k and v from the text); a factorised (spatial + temporal)
    /// cross-attention block is two complete blocks. Embedders and modulation weights are left
    /// out.
    fn derived_params(d: &VideoDit) -> f64 {
        let h = f64::from(d.hidden);
        let mlp_mats = if d.gated_mlp { 3.0 } else { 2.0 };
        let block = 4.0 * h * h + mlp_mats * h * f64::from(d.ffn);
        let cross = block + 2.0 * h * h + 2.0 * h * f64::from(d.text_dim);
        let cross = if d.factorised_attention {
            2.0 * cross
        } else {
            cross
        };
        f64::from(d.dual_stream_blocks) * 2.0 * block
            + f64::from(d.single_stream_blocks) * block
            + f64::from(d.cross_attention_blocks) * cross
    }

    #[test]
    fn derived_counts_are_near_the_published_ones() {
        for d in all() {
            let ratio = derived_params(&d) / d.params as f64;
            assert!(
                (0.6..=1.4).contains(&ratio),
                "{}: derived {:.3e} is {ratio:.2}x the published {:.3e}",
                d.name,
                derived_params(&d),
                d.params as f64
            );
        }
    }

    #[test]
    fn the_required_presets_are_there_once() {
        let names: Vec<_> = all().iter().map(|d| d.name).collect();
        for want in [
            "hunyuanvideo",
            "cogvideox-2b",
            "cogvideox-5b",
            "wan2.1-14b",
            "wan2.1-1.3b",
            "open-sora-1.2",
            "open-sora-2.0",
            "cogvideox1.5-5b",
            "wan2.2-ti2v-5b",
            "wan2.2-t2v-a14b",
            "step-video-t2v",
            "consisid",
        ] {
            assert!(names.contains(&want), "{want} missing");
        }
        let keys: HashSet<_> = names.iter().map(|n| normalise(n)).collect();
        assert_eq!(keys.len(), names.len(), "names collide");
    }

    #[test]
    fn aliases_name_presets_and_do_not_collide() {
        let mut seen: HashSet<String> = all().iter().map(|d| normalise(d.name)).collect();
        for (preset, aliases) in ALIASES {
            assert!(PRESETS.iter().any(|p| p.name == *preset), "{preset}");
            for alias in *aliases {
                assert!(seen.insert(normalise(alias)), "alias {alias} collides");
                assert_eq!(find(alias).map(|d| d.name), Some(*preset), "{alias}");
            }
        }
    }

    #[test]
    fn find_takes_names_aliases_and_repositories() {
        let name = |q: &str| find(q).map(|d| d.name);
        assert_eq!(name("HunyuanVideo"), Some("hunyuanvideo"));
        assert_eq!(name("hunyuan-video"), Some("hunyuanvideo"));
        assert_eq!(name("tencent/HunyuanVideo"), Some("hunyuanvideo"));
        assert_eq!(name("CogVideoX-2B"), Some("cogvideox-2b"));
        assert_eq!(name("THUDM/CogVideoX-5b"), Some("cogvideox-5b"));
        assert_eq!(name("wan2.1-14b"), Some("wan2.1-14b"));
        assert_eq!(name("Wan-AI/Wan2.1-T2V-14B"), Some("wan2.1-14b"));
        assert_eq!(name("Wan-AI/Wan2.1-T2V-1.3B"), Some("wan2.1-1.3b"));
        assert_eq!(name("Open-Sora 1.2"), Some("open-sora-1.2"));
        assert_eq!(name("hpcai-tech/OpenSora-STDiT-v3"), Some("open-sora-1.2"));
        assert_eq!(name("stepfun-ai/stepvideo-t2v"), Some("step-video-t2v"));
        assert_eq!(name("BestWishYsh/ConsisID-preview"), Some("consisid"));
        assert_eq!(name("ConsisID"), Some("consisid"));
        assert_eq!(name("hpcai-tech/Open-Sora-v2"), Some("open-sora-2.0"));
        assert_eq!(name("Wan-AI/Wan2.2-T2V-A14B"), Some("wan2.2-t2v-a14b"));
        assert_eq!(name("Wan-AI/Wan2.2-I2V-A14B"), Some("wan2.2-t2v-a14b"));
        assert_eq!(name("Wan-AI/Wan2.2-TI2V-5B"), Some("wan2.2-ti2v-5b"));
        assert_eq!(name("zai-org/CogVideoX1.5-5B"), Some("cogvideox1.5-5b"));
        assert_eq!(name("wan2.2-14b"), None);
        assert_eq!(name("cogvideox"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn shapes_are_consistent() {
        for d in all() {
            assert_eq!(d.heads * d.head_dim, d.hidden, "{}", d.name);
            let kinds = [
                d.dual_stream_blocks,
                d.single_stream_blocks,
                d.cross_attention_blocks,
            ]
            .iter()
            .filter(|&&n| n > 0)
            .count();
            // Only the Flux-style MMDiTs mix kinds (double then single blocks).
            let mixed = d.dual_stream_blocks > 0 && d.single_stream_blocks > 0;
            assert_eq!(kinds, if mixed { 2 } else { 1 }, "{}", d.name);
            assert!(kinds == 1 || d.cross_attention_blocks == 0, "{}", d.name);
            if d.factorised_attention {
                assert!(d.cross_attention_blocks > 0, "{}", d.name);
            }
            assert!(d.ffn > d.hidden && d.text_tokens > 0 && d.text_dim > 0);
            let (t, ph, pw) = d.patch;
            assert!(t >= 1 && ph >= 1 && ph == pw, "{}", d.name);
            let v = &d.vae;
            let levels = v.decoder_channels.len() as u32;
            assert!(levels >= 2, "{}", d.name);
            assert!(
                v.time_doubling_levels.iter().all(|&l| l < levels),
                "{}",
                d.name
            );
            // Each level below the first halves height and width; a latent pixel-shuffle
            // (Step-Video) may add one more factor of two.
            let halvings = 1u32 << (levels - 1);
            assert!(
                v.spatial == halvings || v.spatial == 2 * halvings,
                "{}",
                d.name
            );
            assert!(
                v.temporal >= 1 << v.time_doubling_levels.len(),
                "{}",
                d.name
            );
            assert!(v.blocks_per_level >= 1 && v.params > 0 && v.latent_channels > 0);
            assert!(!d.text_encoders.is_empty() && !d.source.is_empty());
            for e in d.text_encoders {
                assert!(e.params > 0 && e.tokens > 0, "{} {}", d.name, e.name);
            }
        }
    }
}
