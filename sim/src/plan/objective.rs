//! What a plan optimises: the objectives a user picks with `--objective`.
//!
//! - `fastest`: training's step time, serving's output tokens a second of the whole fleet, the
//!   latency of one video.
//! - `cheapest`: GPU-seconds per unit of work (per token for training and serving, per video for
//!   diffusion). Cost at any GPU-hour price is proportional to it, so no price is needed to rank;
//!   plans print GPU-hours per million tokens or per video.
//! - `fewest-gpus`: the fewest GPUs that meet a target (serving: an SLO attainment; diffusion: a
//!   latency bound), ties broken by speed. A training cluster is fixed, so training refuses it.
//!
//! Deliberately ignored: prices (a GPU-hour price scales every candidate alike), energy, and
//! GPUs a candidate leaves idle (they count as free: a candidate is charged for the GPUs it uses).

use crate::scenario::Kind;

/// A plan's objective; closed, matched exhaustively by every workload's planner.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Objective {
    /// The shortest step, the most output tokens a second, the shortest video.
    #[default]
    Fastest,
    /// The fewest GPU-seconds per token (training, serving) or per video (diffusion).
    Cheapest,
    /// The fewest GPUs that meet the target (serving: SLO attainment; diffusion: latency).
    FewestGpus,
}

impl Objective {
    pub const ALL: [Objective; 3] = [
        Objective::Fastest,
        Objective::Cheapest,
        Objective::FewestGpus,
    ];

    /// The name `--objective` takes.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Fastest => "fastest",
            Objective::Cheapest => "cheapest",
            Objective::FewestGpus => "fewest-gpus",
        }
    }

    /// Reads a name; the error lists the valid ones.
    pub fn parse(text: &str) -> Result<Objective, String> {
        Objective::ALL
            .into_iter()
            .find(|o| o.name() == text.trim())
            .ok_or_else(|| {
                format!(
                    "unknown objective `{text}`; valid: {}",
                    Objective::ALL.map(Objective::name).join(", ")
                )
            })
    }

    /// What the objective ranks by, for a workload, in words (the plan's `objective`).
    pub fn describe(self, kind: Kind) -> &'static str {
        match (self, kind) {
            (Objective::Fastest, Kind::Training) => {
                "fastest step (the cluster is fixed, so also the cheapest per token)"
            }
            (Objective::Cheapest, Kind::Training) => {
                "cheapest per token: on a fixed cluster, GPU-seconds per token fall as the step \
                 shortens, so this ranks as fastest step does"
            }
            (Objective::FewestGpus, Kind::Training) => {
                "fewest GPUs (not searched: a training cluster is fixed)"
            }
            (Objective::Fastest, Kind::Serving) => {
                "fastest: most output tokens a second of the fleet"
            }
            (Objective::Cheapest, Kind::Serving) => {
                "cheapest: fewest GPU-seconds per output token (GPU-hours per million output tokens)"
            }
            (Objective::FewestGpus, Kind::Serving) => {
                "fewest GPUs whose fleet meets the SLO attainment target, ties broken by output tokens a second"
            }
            (Objective::Fastest, Kind::Diffusion) => "fastest: shortest latency of one video",
            (Objective::Cheapest, Kind::Diffusion) => {
                "cheapest: fewest GPU-seconds per video (GPUs used x latency)"
            }
            (Objective::FewestGpus, Kind::Diffusion) => {
                "fewest GPUs whose video meets the latency bound, ties broken by latency"
            }
            (_, Kind::Collective) => "nothing to plan: a collective scenario has no layout",
            (_, Kind::Federated) => "nothing to plan: a federated scenario has no layout",
            (_, Kind::Kernels) => "nothing to plan: a kernels scenario has no layout",
            (_, Kind::Cluster) => "nothing to plan: plan each job's scenario on its own",
        }
    }
}

/// GPU-hours per million tokens of `gpus` GPUs producing `tokens_per_s`: infinite when nothing
/// is produced.
pub fn gpu_hours_per_million_tokens(gpus: u32, tokens_per_s: f64) -> f64 {
    if tokens_per_s > 0.0 {
        gpus as f64 * 1e6 / tokens_per_s / 3600.0
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_valid() {
        for o in Objective::ALL {
            assert_eq!(Objective::parse(o.name()), Ok(o));
        }
        let e = Objective::parse("cheap").unwrap_err();
        assert!(e.contains("fastest, cheapest, fewest-gpus"), "{e}");
    }

    #[test]
    fn gpu_hours_scale_with_gpus_and_fall_with_speed() {
        // 8 GPUs at 8,000 tokens/s: a million tokens in 125 s, on 8 GPUs: 1,000 GPU-seconds.
        let h = gpu_hours_per_million_tokens(8, 8000.0);
        assert!((h - 8.0 * 125.0 / 3600.0).abs() < 1e-12, "{h}");
        assert!(gpu_hours_per_million_tokens(1, 0.0).is_infinite());
    }
}
