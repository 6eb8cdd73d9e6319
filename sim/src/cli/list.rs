//! `clustersim list gpus|models|topologies`.

use clustersim::hw::gpu;
use clustersim::model::preset;
use std::fmt::Write;

pub fn gpus() -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:>9} {:>9} {:>9} {:>8} {:>9} {:>10} {:>6}  aliases",
        "name", "bf16 TF", "fp8 TF", "fp32 TF", "memory", "HBM TB/s", "link GB/s", "TDP W"
    );
    for g in gpu::catalog() {
        let tf = |x: Option<f64>| x.map_or("-".into(), |v| format!("{:.0}", v / 1e12));
        let _ = writeln!(
            out,
            "{:<18} {:>9} {:>9} {:>9} {:>5.0} GiB {:>9.2} {:>10.0} {:>6.0}  {}",
            g.name,
            tf(g.peak_bf16),
            tf(g.peak_fp8),
            tf(Some(g.peak_fp32)),
            g.memory_bytes as f64 / (1u64 << 30) as f64,
            g.memory_bandwidth / 1e12,
            g.intra_bandwidth / 1e9,
            g.tdp_watts,
            g.aliases.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "\nDense datasheet peaks; link = usual intra-server bandwidth per GPU per direction. Names match case-insensitively."
    );
    out
}

pub fn models() -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<16} {:>9} {:>6} {:>7} {:>6} {:>5} {:>7} {:>7} {:>7}  mlp",
        "preset", "params", "layers", "hidden", "heads", "kv", "ffn", "vocab", "seq"
    );
    for m in preset::all() {
        let _ = writeln!(
            out,
            "{:<16} {:>8.2}B {:>6} {:>7} {:>6} {:>5} {:>7} {:>7} {:>7}  {}",
            m.name,
            m.params() as f64 / 1e9,
            m.layers,
            m.hidden,
            m.heads,
            m.kv_heads,
            m.ffn,
            m.vocab,
            m.seq_len,
            m.activation.describe(m.gated)
        );
    }
    let _ = writeln!(
        out,
        "\nVideo diffusion transformers (kind = \"diffusion\"):\n{:<16} {:>9} {:>12} {:>7} {:>9} {:>6} {:>8}  VAE (time x space, channels)",
        "preset", "params", "blocks", "hidden", "heads", "text", "patch"
    );
    for m in clustersim::model::dit_preset::all() {
        let blocks = match (
            m.dual_stream_blocks,
            m.single_stream_blocks,
            m.cross_attention_blocks,
        ) {
            (d, s, 0) if d > 0 => format!("{d}+{s} mm"),
            (0, s, 0) => format!("{s} joint"),
            (_, _, c) => format!("{c} cross"),
        };
        let params = match m.experts {
            0 | 1 => format!("{:.2}B", m.params as f64 / 1e9),
            n => format!("{n}x{:.2}B", m.params as f64 / 1e9),
        };
        let _ = writeln!(
            out,
            "{:<16} {:>9} {:>12} {:>7} {:>4}x{:<4} {:>6} {:>8}  {}x{}, {}",
            m.name,
            params,
            blocks,
            m.hidden,
            m.heads,
            m.head_dim,
            m.text_tokens,
            format!("{}x{}x{}", m.patch.0, m.patch.1, m.patch.2),
            m.vae.temporal,
            m.vae.spatial,
            m.vae.latent_channels
        );
    }
    out
}

pub fn topologies() -> String {
    let mut out = String::new();
    for entry in clustersim::net::topology::catalog() {
        let _ = writeln!(out, "{:<16} {}", entry.name, entry.description);
        let _ = writeln!(out, "{:<16} selected by {}", "", entry.select);
    }
    out
}
