//! Failures, checkpoints and goodput of a long training run (`[reliability]`), in seconds and
//! fractions of wall time. Entry point: [`Reliability::report`].
//!
//! Failures arrive as a Poisson process at the cluster's rate, so its mean time between failures
//! is M = 1 / (G / gpu_mtbf + N / node_mtbf) for G GPUs and N nodes.
//! - Synchronous restart: every τ seconds the job stalls δ to write a checkpoint; a failure costs
//!   the restart R plus the work since the checkpoint. Wall time per second of training is
//!   (M/τ) e^(R/M) (e^((τ+δ)/M) - 1), split to first order as (1 + δ/τ)(1 + (R + (τ + δ)/2)/M);
//!   the default τ is the optimum of that model ([`daly_interval`]).
//! - Fault-tolerant data parallelism: a failure takes one replica out for the rejoin time J, the
//!   step in flight is lost and all wait the stall S; lost fraction (step + S + J/dp) / M, with
//!   checkpoint costs kept. One replica is reported as synchronous restart.
//!
//! Ignored: correlated failures, failures during restart, stragglers' effect on failure rates,
//! asynchronous checkpointing. Sources and the optimum's formula: docs/TRAINING.md#reliability

use serde_json::{Value, json};

/// The resolved `[reliability]` section, seconds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Reliability {
    pub gpu_mtbf_s: Option<f64>,
    pub node_mtbf_s: Option<f64>,
    pub checkpoint_write_s: f64,
    /// None: Daly's optimum.
    pub checkpoint_interval_s: Option<f64>,
    pub restart_s: f64,
    pub rejoin_s: f64,
    /// Fault-tolerant training: seconds every replica waits per failure while the survivors
    /// regroup.
    pub stall_s: f64,
}

/// Goodput and where the rest went, fractions of wall time.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Goodput {
    pub goodput: f64,
    pub checkpointing: f64,
    pub rework: f64,
    pub restart: f64,
}

/// Daly's optimum checkpoint interval for write time `delta` and mean time between failures
/// `mtbf`, seconds.
pub fn daly_interval(delta: f64, mtbf: f64) -> f64 {
    if delta >= 2.0 * mtbf {
        return mtbf;
    }
    let x = delta / (2.0 * mtbf);
    (2.0 * delta * mtbf).sqrt() * (1.0 + x.sqrt() / 3.0 + x / 9.0) - delta
}

impl Reliability {
    /// Mean time between failures of `gpus` GPUs on `nodes` nodes, seconds.
    pub fn cluster_mtbf_s(&self, gpus: u32, nodes: u32) -> f64 {
        let rate = self.gpu_mtbf_s.map_or(0.0, |m| gpus as f64 / m)
            + self.node_mtbf_s.map_or(0.0, |m| nodes as f64 / m);
        1.0 / rate
    }

    /// The checkpoint interval for a cluster MTBF of `mtbf` seconds.
    pub fn interval_s(&self, mtbf: f64) -> f64 {
        self.checkpoint_interval_s
            .unwrap_or_else(|| daly_interval(self.checkpoint_write_s, mtbf))
    }

    /// Synchronous restart from the last checkpoint.
    pub fn synchronous(&self, mtbf: f64) -> Goodput {
        let (tau, delta, r) = (
            self.interval_s(mtbf),
            self.checkpoint_write_s,
            self.restart_s,
        );
        // Daly's complete model: wall time per second of training.
        let wall = mtbf / tau * (r / mtbf).exp() * ((tau + delta) / mtbf).exp_m1();
        let goodput = 1.0 / wall;
        let checkpointing = (delta / tau) / wall;
        // The rest is lost to failures, split between restarts and rework in their first-order
        // proportions (R against half an interval).
        let failures = (1.0 - goodput - checkpointing).max(0.0);
        let half = (tau + delta) / 2.0;
        Goodput {
            goodput,
            checkpointing,
            rework: failures * half / (half + r),
            restart: failures * r / (half + r),
        }
    }

    /// Fault-tolerant data parallelism over `replicas` replicas with steps of `step` seconds.
    pub fn fault_tolerant(&self, mtbf: f64, replicas: u32, step: f64) -> Goodput {
        if replicas < 2 {
            return self.synchronous(mtbf);
        }
        let (tau, delta) = (self.interval_s(mtbf), self.checkpoint_write_s);
        let checkpoint = 1.0 + delta / tau;
        let away = self.rejoin_s / replicas as f64;
        let lost = (step + self.stall_s + away) / mtbf;
        let useful = (1.0 - lost).max(0.0) / checkpoint;
        Goodput {
            goodput: useful,
            checkpointing: (delta / tau) / checkpoint,
            rework: (step + self.stall_s) / mtbf / checkpoint,
            restart: away / mtbf / checkpoint,
        }
    }

    /// The report's `reliability` section for a step of `step` seconds on `gpus` GPUs, `nodes`
    /// nodes and `replicas` data-parallel replicas.
    pub fn report(&self, gpus: u32, nodes: u32, replicas: u32, step: f64) -> Value {
        let mtbf = self.cluster_mtbf_s(gpus, nodes);
        let sync = self.synchronous(mtbf);
        let ft = self.fault_tolerant(mtbf, replicas, step);
        let part = |g: Goodput| {
            json!({
                "goodput": g.goodput,
                "lost": {
                    "checkpointing": g.checkpointing,
                    "rework": g.rework,
                    "restart": g.restart,
                },
            })
        };
        json!({
            "cluster_mtbf_s": mtbf,
            "failures_per_day": 86400.0 / mtbf,
            "checkpoint_interval_s": self.interval_s(mtbf),
            "checkpoint_interval_rule": if self.checkpoint_interval_s.is_some() {
                "scenario"
            } else {
                "Young/Daly optimum"
            },
            "synchronous_restart": part(sync),
            "fault_tolerant": {
                "replicas": replicas,
                "rejoin_s": self.rejoin_s,
                "stall_s": self.stall_s,
                "goodput": ft.goodput,
                "lost": {
                    "checkpointing": ft.checkpointing,
                    "step_in_flight_and_stall": ft.rework,
                    "replica_away": ft.restart,
                },
            },
            "goodput": sync.goodput,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(delta: f64, restart: f64) -> Reliability {
        Reliability {
            gpu_mtbf_s: Some(1.0e6),
            node_mtbf_s: None,
            checkpoint_write_s: delta,
            checkpoint_interval_s: None,
            restart_s: restart,
            rejoin_s: restart,
            stall_s: 0.0,
        }
    }

    #[test]
    fn daly_reduces_to_young_when_checkpoints_are_cheap() {
        let (delta, m): (f64, f64) = (1.0, 1.0e6);
        let young = (2.0 * delta * m).sqrt();
        assert!((daly_interval(delta, m) - young).abs() / young < 0.01);
        // And never beyond the MTBF when writing takes longer than failures allow.
        assert_eq!(daly_interval(3.0e6, 1.0e6), 1.0e6);
    }

    #[test]
    fn the_optimum_interval_maximises_goodput() {
        let rel = r(60.0, 600.0);
        let mtbf = rel.cluster_mtbf_s(1024, 128);
        let best = rel.synchronous(mtbf).goodput;
        for factor in [0.5, 0.8, 1.25, 2.0] {
            let mut other = rel;
            other.checkpoint_interval_s = Some(rel.interval_s(mtbf) * factor);
            assert!(other.synchronous(mtbf).goodput < best, "factor {factor}");
        }
    }

    #[test]
    fn the_lost_fractions_and_goodput_add_up_to_one() {
        let rel = r(120.0, 900.0);
        let mtbf = rel.cluster_mtbf_s(16384, 2048);
        let g = rel.synchronous(mtbf);
        let total = g.goodput + g.checkpointing + g.rework + g.restart;
        assert!((total - 1.0).abs() < 1e-9, "{total}");
    }

    #[test]
    fn fault_tolerance_helps_with_many_replicas_and_not_with_one() {
        let rel = r(60.0, 600.0);
        let mtbf = rel.cluster_mtbf_s(16384, 2048);
        let sync = rel.synchronous(mtbf).goodput;
        assert!(rel.fault_tolerant(mtbf, 128, 8.0).goodput > sync);
        assert_eq!(rel.fault_tolerant(mtbf, 1, 8.0).goodput, sync);
    }

    #[test]
    fn more_gpus_fail_more_often() {
        let rel = r(60.0, 600.0);
        assert!(rel.cluster_mtbf_s(16384, 2048) < rel.cluster_mtbf_s(1024, 128));
        assert!(
            rel.synchronous(rel.cluster_mtbf_s(16384, 2048)).goodput
                < rel.synchronous(rel.cluster_mtbf_s(1024, 128)).goodput
        );
    }
}
