//! A serving run, fully specified (`scenario/lower/serving/` builds it from a scenario): the
//! model, the requests, the engine's limits and memory policy, the SLO, and the fleet, either
//! replicas of one or more kinds behind a router or a placed fleet of servers (`pipelines`).

use super::kind::{EnginePolicy, ReplicaKind};
use super::pipelines::ServerGroup;
use super::placement::Method;
use super::policy::{RouterKind, SchedulerKind};
use super::request::Request;
use crate::model::Transformer;
use crate::net::Topology;
use crate::net::tier::Tier;

/// Latency targets: a request meets the SLO when it meets every one given, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Slo {
    pub ttft_s: Option<f64>,
    pub tpot_s: Option<f64>,
    pub e2e_s: Option<f64>,
}

/// A serving run.
pub struct ServingConfig {
    /// The scenario's name, for the report.
    pub scenario: String,
    pub model: Transformer,
    /// In order of arrival.
    pub requests: Vec<Request>,
    /// The seed of the router's and the placement's draws.
    pub seed: u64,
    pub slo: Slo,
    pub scheduler: SchedulerKind,
    pub max_batch_size: u32,
    pub max_batch_tokens: u32,
    pub memory: EnginePolicy,
    /// The network tier that prices transfers.
    pub tier: Tier,
    pub fleet: FleetConfig,
    pub assumptions: Vec<String>,
}

/// What serves the requests.
pub enum FleetConfig {
    Replicas(Replicas),
    Placed(Box<Placed>),
}

/// Whole replicas of one or more kinds behind a router.
pub struct Replicas {
    pub kinds: Vec<ReplicaKind>,
    pub router: RouterKind,
    /// Preemption swaps KV caches to host memory (else recomputes them).
    pub swap: bool,
    /// Disaggregated: the prefill and decode pools' replicas (the first replicas prefill).
    pub pools: Option<(u32, u32)>,
    /// Servers the replicas take.
    pub nodes: u32,
    /// The calibration profile's name, when the compute model has one.
    pub profile: Option<String>,
    /// The boards' power limit, when below the TDP, watts.
    pub power_limit_watts: Option<f64>,
    /// Power usage effectiveness of the facility (1: board power alone).
    pub pue: f64,
}

/// One model's layers placed over a mixed fleet's servers.
pub struct Placed {
    pub method: Method,
    pub groups: Vec<ServerGroup>,
    /// The network between the servers.
    pub between: Topology,
}
