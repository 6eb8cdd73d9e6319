//! Video diffusion cases (xDiT's tables) as diffusion scenarios, the latency read end to end or
//! for the denoising steps alone, as the case's metric says.

use super::prose::{find_gpu, stated_attention, text, whole};
use super::{Case, Row, RowFn, Status, quote, with_report_notes};
use crate::hw::attention_kernel::AttentionKernel;
use crate::scenario::Scenario;
use std::path::Path;

/// A video diffusion case (xDiT's tables): the model from its architecture, the video from its
/// resolution, frames and steps, the degrees from the parallel section, end-to-end latency read.
pub(super) fn diffusion_row(c: &Case, file_name: &str, row: &RowFn) -> Row {
    let mut a: Vec<String> = Vec::new();
    let hw = |k: &str| c.get("hardware", k);
    let md = |k: &str| c.get("model", k);
    let par = |k: &str| c.get("parallel", k);
    let gpu = match find_gpu(text(hw("gpu")).unwrap_or("")) {
        Ok((gpu, note)) => {
            a.extend(note);
            gpu
        }
        Err(e) => return row(Status::Failed(e), None, a),
    };
    // The preset named first in the architecture ("ConsisID (CogVideoX-5B with identity
    // modules)" is ConsisID), the longest name where two start at the same place.
    let arch = text(md("arch")).unwrap_or("").to_lowercase();
    let squashed = arch.replace(' ', "");
    let Some(preset) = crate::model::dit_preset::all()
        .into_iter()
        .filter_map(|m| squashed.find(m.name).map(|at| (at, m)))
        .min_by_key(|(at, m)| (*at, std::cmp::Reverse(m.name.len())))
        .map(|(_, m)| m)
    else {
        return row(
            Status::Failed(format!("no video DiT preset for \"{arch}\"")),
            None,
            a,
        );
    };
    let resolution = text(md("resolution")).unwrap_or("");
    let Some((width, height)) = resolution
        .split_once('x')
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)))
    else {
        return row(
            Status::Failed(format!("no resolution in \"{resolution}\"")),
            None,
            a,
        );
    };
    let (Some(frames), Some(steps)) = (whole(md("frames")), whole(md("steps"))) else {
        return row(Status::Failed("no frames or steps".into()), None, a);
    };
    let gpus = whole(hw("count")).unwrap_or(1);
    let ulysses = whole(par("ulysses_degree")).unwrap_or(1);
    let ring = whole(par("ring_degree")).unwrap_or(1);
    let cfg = whole(par("cfg_parallel")).unwrap_or(1);
    if ulysses * ring * cfg != gpus {
        return row(
            Status::Failed(format!(
                "ulysses {ulysses} x ring {ring} x cfg {cfg} is not the {gpus} GPUs"
            )),
            None,
            a,
        );
    }
    // Guidance: as the case states its scale (above 1: two branches a step, on the same GPUs
    // unless cfg_parallel splits them); unstated, cfg_parallel = 1 reads as guidance off.
    let scale = match md("guidance_scale") {
        None => None,
        Some(v) => match v.as_f64() {
            Some(g) => Some(g),
            None => {
                return row(
                    Status::Failed(format!(
                        "model.guidance_scale is {v}: a number is needed (1 or less: one branch a \
                         step; above 1: two)"
                    )),
                    None,
                    a,
                );
            }
        },
    };
    let guided = scale.map_or(cfg > 1, |g| g > 1.0);
    if cfg > 1 && !guided {
        return row(
            Status::Failed(format!(
                "cfg_parallel {cfg} with guidance_scale {} (no second branch to split)",
                scale.unwrap_or(1.0)
            )),
            None,
            a,
        );
    }
    a.push(match (scale, cfg > 1) {
        (_, true) => "classifier-free guidance, its two branches on the cfg_parallel groups".into(),
        (Some(g), false) if guided => format!(
            "classifier-free guidance (guidance_scale {g}): both branches every step, as one \
             batch of two on the same GPUs"
        ),
        (Some(g), false) => format!("one branch a step (guidance_scale {g})"),
        (None, false) => "one branch a step: cfg_parallel = 1 read as guidance off (true of \
                          HunyuanVideo, which distils its guidance into the model)"
            .into(),
    });
    a.push("VAE decoded on one GPU; text encoders and VAE resident on every GPU".into());
    // The attention kernel the case names (`model.attn`); else FlashAttention 2 where the
    // simulator has a figure for it on the GPU (a named kernel without one fails as the scenario
    // would); elsewhere the roofline's default attention efficiency, said so.
    let fa2 = AttentionKernel::FlashAttention2;
    let stated = text(md("attn")).unwrap_or("");
    let kernel_line = if let Some((kernel, why)) = stated_attention(stated) {
        a.push(format!(
            "{} for the stated attention \"{stated}\" ({why})",
            kernel.name()
        ));
        format!("attention_kernel = \"{}\"\n", kernel.name())
    } else if fa2.reference(gpu).is_some() {
        a.push(
            "FlashAttention 2 (not stated): xDiT's USP runs flash-attn 2 by default, and the \
             official HunyuanVideo repository requires it"
                .into(),
        );
        format!("attention_kernel = \"{}\"\n", fa2.name())
    } else {
        a.push(format!(
            "FlashAttention 2 has no figure on {}: the roofline's default attention efficiency",
            gpu.name
        ));
        String::new()
    };
    let toml = format!(
        "name = {}\nkind = \"diffusion\"\n[cluster]\ngpu = \"{}\"\nnodes = 1\ngpus_per_node = 8\n\
         [model]\npreset = \"{}\"\n{kernel_line}\
         [diffusion]\nwidth = {width}\nheight = {height}\nframes = {frames}\nsteps = {steps}\ncfg = {}\n\
         [parallel]\nulysses = {ulysses}\nring = {ring}\ncfg = {cfg}\n",
        quote(&c.id),
        gpu.name,
        preset.name,
        guided,
    );
    let path = format!("{file_name}#{}", c.id);
    let mut r =
        match Scenario::parse(Path::new(&path), toml.clone(), &[]).and_then(|s| crate::run(&s)) {
            Ok(out) => {
                let predicted = if denoise_only(c) {
                    a.push(
                        "the denoising steps alone (`breakdown_s.denoise`): the source's latency \
                         excludes the text encoders and the VAE"
                            .into(),
                    );
                    out.report["breakdown_s"]["denoise"].as_f64()
                } else {
                    out.report["latency_s"].as_f64()
                };
                row(
                    Status::Compared,
                    predicted,
                    with_report_notes(a, &out.report),
                )
            }
            Err(e) => row(Status::Failed(e.message), None, a),
        };
    r.scenario = Some(toml);
    r
}

/// Whether a diffusion case's latency leaves out the text encoders and the VAE (the
/// transformer's denoising steps alone), as its metric says.
pub(super) fn denoise_only(c: &Case) -> bool {
    let m = c.metric.to_lowercase();
    m.contains("excluding") && m.contains("vae")
}
