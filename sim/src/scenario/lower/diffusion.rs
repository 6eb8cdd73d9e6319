//! `kind = "diffusion"` lowered: the video DiT preset, the video (or the mix a queue serves),
//! the xDiT layout and its checks, the cluster and the compute model (profile, attention kernel,
//! power limit), each refusal at its key and each default recorded.

use crate::hw::Dtype;
use crate::hw::attention_kernel::AttentionKernel;
use crate::model::dit::{Video, VideoDit};
use crate::model::dit_preset;
use crate::scenario::Scenario;
use crate::scenario::diffusion::DiffusionSection;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::scenario::serving::LengthSpec;
use crate::workload::cluster::ClusterSetup;
use crate::workload::diffusion::layout::Layout;
use crate::workload::diffusion::policy::{VideoScheduler, reference_offload};
use crate::workload::diffusion::{DiffusionConfig, MAX_STEPS, VideoQueue};

/// What a diffusion scenario takes, for the help of a refused key.
/// The attention kernel the reference video pipelines run where a scenario names none.
const REFERENCE_ATTENTION: cluster::ReferenceKernel = (
    AttentionKernel::FlashAttention2,
    "the reference video pipelines run flash-attn 2: xDiT's USP by default, the HunyuanVideo \
     repository requires it, Wan 2.1 unless flash-attn 3 is installed apart",
);

const DIFFUSION_KEYS: &str = "a diffusion scenario takes [cluster], [model] preset, [diffusion] and \
                              [parallel] ulysses, ring, pipefusion, pipefusion_patches, dsp, \
                              latent, cfg, tp";

/// The scenario's diffusion run, every key checked.
pub fn lower(s: &Scenario) -> Result<DiffusionConfig, ScenarioError> {
    let f = &s.file;
    let mut assumptions: Vec<String> = Vec::new();

    let (model, act) = model(s, &mut assumptions)?;

    // The video.
    let d = f.diffusion.clone().ok_or_else(|| {
        s.error_at(
            "diffusion",
            "a diffusion scenario needs a [diffusion] table",
        )
        .with_help("add [diffusion] with width, height, frames and steps")
    })?;
    // One video, or with [workload] a queue of videos of the `videos` mix.
    let serving = f.workload.is_some();
    let videos = videos(s, &d, serving)?;
    check_video_sizes(s, &d, serving, &model, &videos)?;
    let steps = need(s, d.steps, "steps", "50")?;
    if steps > MAX_STEPS {
        return Err(s
            .error_at(
                "diffusion.steps",
                format!("{steps} denoising steps; every step is simulated, at most {MAX_STEPS}"),
            )
            .with_help("samplers run 1 to 1,000 steps; 50 is common"));
    }
    let guidance = d.cfg.unwrap_or_else(|| {
        assumptions.push("no classifier-free guidance (one branch a step)".into());
        false
    });

    let layout = layout(s, &model, &videos, guidance, &mut assumptions)?;
    let warmup_steps = match d.warmup_steps {
        Some(w) => w,
        None => {
            if layout.pipefusion > 1 {
                assumptions.push("PipeFusion: 1 warm-up step (xDiT's default)".into());
            }
            1
        }
    }
    .min(steps);
    let vae_parallel = d.vae_parallel.unwrap_or_else(|| {
        if layout.world() > 1 {
            assumptions.push("VAE decoded on one GPU (vae_parallel = false)".into());
        }
        false
    });

    let offload = d.offload.unwrap_or_else(|| {
        let (offload, why) = reference_offload(model.name, layout.world());
        assumptions.push(format!("offload = \"{}\": {why}", offload.name()));
        offload
    });
    let setup = cluster_for(s, &layout, act, &mut assumptions)?;
    let (compute, profile) = cluster::compute_model(
        s,
        setup.gpu.clone(),
        act,
        (true, Some(REFERENCE_ATTENTION)),
        &mut assumptions,
    )?;
    assumptions.push("text encoders priced as one GEMM of 2 x params x tokens FLOPs each".into());
    let queue = if serving {
        Some(queue(s, d.scheduler, &mut assumptions)?)
    } else {
        None
    };
    Ok(DiffusionConfig {
        scenario: s.name(),
        cluster: setup,
        profile,
        model,
        layout,
        compute,
        act,
        steps,
        guidance,
        warmup_steps,
        vae_parallel,
        offload,
        videos,
        queue,
        assumptions,
    })
}

/// A required count in `[diffusion]`, at least 1.
fn need(s: &Scenario, v: Option<u32>, key: &str, example: &str) -> Result<u32, ScenarioError> {
    let path = format!("diffusion.{key}");
    match v {
        None => Err(s
            .error_at("diffusion", format!("missing key `{key}` in [diffusion]"))
            .with_help(format!("add it, e.g. {key} = {example}"))),
        Some(0) => Err(s.error_at(&path, format!("`{path}` must be at least 1"))),
        Some(n) => Ok(n),
    }
}

/// The videos generated, each with its share: the `videos` mix a queue serves (with
/// `[workload]`), or the one video of width, height and frames.
fn videos(
    s: &Scenario,
    d: &DiffusionSection,
    serving: bool,
) -> Result<Vec<(Video, f64)>, ScenarioError> {
    Ok(match &d.videos {
        Some(mix) if serving => {
            if mix.is_empty() {
                return Err(s
                    .error_at("diffusion.videos", "the mix names no video")
                    .with_help("e.g. videos = [{ width = 1280, height = 720, frames = 129 }]"));
            }
            let mut out = Vec::new();
            for v in mix {
                let size =
                    |x: u32, key: &str| cluster::positive(s, x, &format!("diffusion.videos.{key}"));
                let share = v.share.unwrap_or(1.0);
                if !(share > 0.0 && share.is_finite()) {
                    return Err(s.error_at(
                        "diffusion.videos.share",
                        format!("share {share} must be positive"),
                    ));
                }
                out.push((
                    Video {
                        width: size(v.width, "width")?,
                        height: size(v.height, "height")?,
                        frames: size(v.frames, "frames")?,
                    },
                    share,
                ));
            }
            out
        }
        Some(_) => {
            return Err(s
                .error_at("diffusion.videos", "a mix of videos needs a [workload] to serve")
                .with_help("add [workload] with requests, arrival and rate, or give width, height and frames"));
        }
        None => vec![(
            Video {
                width: need(s, d.width, "width", "1280")?,
                height: need(s, d.height, "height", "720")?,
                frames: need(s, d.frames, "frames", "129")?,
            },
            1.0,
        )],
    })
}

/// Refuses a video smaller than one token across: not a video the model can generate.
fn check_video_sizes(
    s: &Scenario,
    d: &DiffusionSection,
    serving: bool,
    model: &VideoDit,
    videos: &[(Video, f64)],
) -> Result<(), ScenarioError> {
    let (_, patch_h, patch_w) = model.patch;
    for (v, _) in videos {
        let key = if d.videos.is_some() && serving {
            "diffusion.videos"
        } else {
            "diffusion"
        };
        for (what, pixels, patch) in [("height", v.height, patch_h), ("width", v.width, patch_w)] {
            let least = model.vae.spatial * patch;
            if pixels < least {
                return Err(s
                    .error_at(
                        &format!("{key}.{what}"),
                        format!(
                            "a {what} of {pixels} pixels is less than one token of {} ({least} \
                             pixels: the VAE's {} times the patch's {patch})",
                            model.name, model.vae.spatial
                        ),
                    )
                    .with_help(format!("use a {what} of at least {least} pixels")));
            }
        }
    }
    Ok(())
}

/// The cluster the layout runs on: enough GPUs for it, and a GPU with the activations' arithmetic.
fn cluster_for(
    s: &Scenario,
    layout: &Layout,
    act: Dtype,
    assumptions: &mut Vec<String>,
) -> Result<ClusterSetup, ScenarioError> {
    let world = layout.world();
    let needs = Needs {
        sizes: false,
        inter_node: world > s.file.cluster.gpus_per_node.unwrap_or(8),
    };
    let setup = cluster::resolve(s, assumptions, needs)?;
    let gpu = &setup.gpu;
    let total_gpus = setup.nodes * setup.gpus_per_node;
    if world > total_gpus {
        return Err(s
            .error_at(
                "parallel",
                format!("the layout needs {world} GPUs; the cluster has {total_gpus}"),
            )
            .with_help("raise cluster.nodes, or lower the parallel degrees"));
    }
    if gpu.peak_flops(act).is_none() {
        return Err(s
            .error_at(
                "model.dtype",
                format!("{} has no {act} arithmetic", gpu.name),
            )
            .with_help("choose a model.dtype the GPU supports (fp16 on V100 and T4)"));
    }
    Ok(setup)
}

/// `[model]`: a video DiT preset (its other keys refused) and the format of its weights and
/// activations (bf16 unless given, recorded).
fn model(s: &Scenario, assumptions: &mut Vec<String>) -> Result<(VideoDit, Dtype), ScenarioError> {
    let f = &s.file;
    let model_section = &f.model;
    let presets = || {
        format!(
            "video DiT presets: {}",
            dit_preset::all()
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let name = model_section.preset.as_deref().ok_or_else(|| {
        s.error_at("model", "a diffusion scenario needs `preset` in [model]")
            .with_help(presets())
    })?;
    let model = dit_preset::find(name).ok_or_else(|| {
        s.error_at(
            "model.preset",
            format!("unknown video DiT preset \"{name}\""),
        )
        .with_help(presets())
    })?;
    let m = model_section;
    s.refuse_set(
        &[
            (m.hf_config.is_some(), "model.hf_config"),
            (m.layers.is_some(), "model.layers"),
            (m.hidden.is_some(), "model.hidden"),
            (m.heads.is_some(), "model.heads"),
            (m.kv_heads.is_some(), "model.kv_heads"),
            (m.head_dim.is_some(), "model.head_dim"),
            (m.ffn.is_some(), "model.ffn"),
            (m.gated.is_some(), "model.gated"),
            (m.activation.is_some(), "model.activation"),
            (m.vocab.is_some(), "model.vocab"),
            (m.seq_len.is_some(), "model.seq_len"),
            (m.tied_embeddings.is_some(), "model.tied_embeddings"),
            (m.experts.is_some(), "model.experts"),
            (m.top_k.is_some(), "model.top_k"),
            (m.shared_experts.is_some(), "model.shared_experts"),
            (m.expert_ffn.is_some(), "model.expert_ffn"),
            (m.capacity_factor.is_some(), "model.capacity_factor"),
            (m.dense_layers.is_some(), "model.dense_layers"),
            (m.elementwise.is_some(), "model.elementwise"),
            (m.dropout.is_some(), "model.dropout"),
        ],
        |key| {
            format!(
                "{key} (video DiTs come from presets only) does not apply to a diffusion scenario"
            )
        },
        DIFFUSION_KEYS,
    )?;
    let act = match model_section.dtype {
        None => {
            assumptions.push("bf16 weights and activations".into());
            Dtype::Bf16
        }
        Some(d @ (Dtype::Bf16 | Dtype::Fp16)) => d,
        Some(other) => {
            return Err(s
                .error_at(
                    "model.dtype",
                    format!("a video DiT in {other} is not modelled"),
                )
                .with_help("use \"bf16\" or \"fp16\""));
        }
    };

    Ok((model, act))
}

/// `[parallel]`'s xDiT degrees for `model` making `videos` (with classifier-free guidance when
/// `guidance`), each checked against the model and the others.
fn layout(
    s: &Scenario,
    model: &VideoDit,
    videos: &[(Video, f64)],
    guidance: bool,
    assumptions: &mut Vec<String>,
) -> Result<Layout, ScenarioError> {
    let p = &s.file.parallel;
    let degree = |v: Option<u32>, key: &str| {
        cluster::positive(s, v.unwrap_or(1), &format!("parallel.{key}"))
    };
    let pipefusion = degree(p.pipefusion, "pipefusion")?;
    let layout = Layout {
        tp: degree(p.tp, "tp")?,
        ulysses: degree(p.ulysses, "ulysses")?,
        ring: degree(p.ring, "ring")?,
        pipefusion,
        patches: match p.pipefusion_patches {
            Some(n) => cluster::positive(s, n, "parallel.pipefusion_patches")?,
            None => pipefusion,
        },
        cfg: degree(p.cfg, "cfg")?,
        dsp: degree(p.dsp, "dsp")?,
        latent: degree(p.latent, "latent")?,
        latent_overlap: p.latent_overlap.unwrap_or(1),
    };
    // PipeFusion cuts the latent into patches along its height: a patch is at least a row of
    // tokens.
    let rows = videos
        .iter()
        .map(|(v, _)| model.token_grid(*v).1)
        .min()
        .unwrap_or(1);
    if layout.pipefusion > 1 && layout.patches as u64 > rows {
        return Err(s
            .error_at(
                "parallel.pipefusion_patches",
                format!(
                    "{} patches, but the video is {rows} rows of tokens high and a patch is at \
                     least one row",
                    layout.patches
                ),
            )
            .with_help(format!("use 1 to {rows} patches")));
    }
    if layout.latent > 1 {
        if layout.sp() > 1 || layout.pipefusion > 1 {
            return Err(s
                .error_at(
                    "parallel.latent",
                    "latent parallelism is modelled alone or with cfg and tp",
                )
                .with_help("remove ulysses, ring, dsp and pipefusion, or latent"));
        }
        if p.latent_overlap.is_none() {
            assumptions.push(
                "latent parallelism: each region borrows 1 token row from each neighbour".into(),
            );
        }
    }
    if layout.dsp > 1 {
        if !model.factorised_attention {
            return Err(s
                .error_at(
                    "parallel.dsp",
                    format!(
                        "DSP switches the split between spatial and temporal attention; {} \
                         attends over the whole 3-D sequence at once",
                        model.name
                    ),
                )
                .with_help("use ulysses or ring for full 3-D attention"));
        }
        if layout.ulysses > 1 || layout.ring > 1 {
            return Err(s
                .error_at("parallel.dsp", "DSP replaces Ulysses and Ring")
                .with_help("use dsp alone, or ulysses / ring alone"));
        }
    }
    let branches = model.guided_branches;
    if layout.cfg > 1 && layout.cfg != branches {
        return Err(s
            .error_at(
                "parallel.cfg",
                format!(
                    "cfg = {} but {}'s guidance has {branches} branches",
                    layout.cfg, model.name
                ),
            )
            .with_help(format!(
                "use cfg = {branches} (each branch on its own GPUs) or 1"
            )));
    }
    if layout.cfg > 1 && !guidance {
        return Err(s
            .error_at(
                "parallel.cfg",
                "CFG parallelism needs classifier-free guidance",
            )
            .with_help("set cfg = true in [diffusion], or remove parallel.cfg"));
    }
    let heads_split = layout.tp * layout.ulysses;
    if !model.heads.is_multiple_of(heads_split) {
        return Err(s
            .error_at(
                if layout.ulysses > 1 {
                    "parallel.ulysses"
                } else {
                    "parallel.tp"
                },
                format!(
                    "{} has {} attention heads, which tp x ulysses = {heads_split} does not divide",
                    model.name, model.heads
                ),
            )
            .with_help("choose degrees whose product divides the heads; add ring for more GPUs"));
    }
    if model.factorised_attention && layout.ring > 1 {
        return Err(s
            .error_at(
                "parallel.ring",
                "ring attention over factorised spatial and temporal attention is not modelled",
            )
            .with_help("use ulysses for sequence parallelism"));
    }
    let blocks = model.blocks();
    if layout.pipefusion > blocks {
        return Err(s.error_at(
            "parallel.pipefusion",
            format!(
                "pipefusion = {} stages but {} has {blocks} blocks",
                layout.pipefusion, model.name
            ),
        ));
    }
    Ok(layout)
}

/// `[workload]` for a queue of videos: the requests (their token lengths play no part), the
/// scheduler (first come, first served unless given, recorded) and the seed of the mix's draw.
fn queue(
    s: &Scenario,
    scheduler: Option<VideoScheduler>,
    assumptions: &mut Vec<String>,
) -> Result<VideoQueue, ScenarioError> {
    let f = &s.file;
    let mut workload = f.workload.clone().expect("serving has a [workload]");
    s.refuse_set(
        &[
            (workload.prompt_tokens.is_some(), "workload.prompt_tokens"),
            (workload.output_tokens.is_some(), "workload.output_tokens"),
            (workload.trace.is_some(), "workload.trace"),
        ],
        |key| format!("{key} does not apply to serving videos"),
        "videos come from [diffusion] videos = [...]; [workload] says how many and when",
    )?;
    // Token lengths do not matter here: the traffic module makes the arrivals.
    workload.prompt_tokens = Some(LengthSpec::Fixed(1));
    workload.output_tokens = Some(LengthSpec::Fixed(1));
    let seed = f.sim.seed.unwrap_or(1);
    let requests = super::traffic::generate(&workload, seed, s.source.path.parent())
        .map_err(|e| e.locate(s))?;
    let scheduler = scheduler.unwrap_or_else(|| {
        assumptions.push("first come, first served".into());
        VideoScheduler::Fcfs
    });
    Ok(VideoQueue {
        requests,
        scheduler,
        seed,
    })
}
