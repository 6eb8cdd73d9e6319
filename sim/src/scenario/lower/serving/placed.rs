//! A placed fleet (`serving.placement`) lowered: what a placed fleet does not take refused at
//! its key, its groups' servers and the network between them.

use super::group::GroupSetup;
use crate::model::Transformer;
use crate::net::tier::Tier;
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster;
use crate::workload::serving::config::{FleetConfig, Placed, ServingConfig};
use crate::workload::serving::kind::EnginePolicy;
use crate::workload::serving::pipelines::{MAX_PLACED_SERVERS, ServerGroup};
use crate::workload::serving::placement::Method;
use crate::workload::serving::policy::SchedulerKind;

/// What a placed fleet takes from `[serving]`.
pub(super) struct Settings {
    pub method: Method,
    pub scheduler: SchedulerKind,
    pub max_batch_size: u32,
    pub max_batch_tokens: u32,
    pub memory: EnginePolicy,
    pub tier: Tier,
}

/// The placed fleet of `setups` (checked `[[serving.group]]`s, each replica a server) serving
/// `model` as `settings` say: what a placed fleet does not take refused at its key.
pub(super) fn lower(
    s: &Scenario,
    model: Transformer,
    setups: Vec<GroupSetup>,
    settings: Settings,
    mut assumptions: Vec<String>,
) -> Result<ServingConfig, ScenarioError> {
    let f = &s.file;
    let serving = f.serving.clone().unwrap_or_default();
    let refuse = |path: &str, what: &str, help: &str| {
        Err(s
            .error_at(path, format!("{what} does not apply to a placed fleet"))
            .with_help(help.to_string()))
    };
    if settings.scheduler == SchedulerKind::Static {
        return refuse(
            "serving.scheduler",
            "static batching",
            "use scheduler = \"vllm\" or \"sarathi\"",
        );
    }
    if serving.preemption.is_some() {
        return refuse(
            "serving.preemption",
            "preemption",
            "a placed fleet reserves each request's KV cache when it admits it and never \
             preempts; remove `preemption`",
        );
    }
    if serving.router.is_some() {
        return refuse(
            "serving.router",
            "a router",
            "requests follow the placement's max-flow; remove `router`",
        );
    }
    if serving.weights_offload.is_some() {
        return refuse(
            "serving.weights_offload",
            "weights offload",
            "remove `weights_offload`; the placement gives each server only the layers it holds",
        );
    }
    if model.moe.is_some() {
        return Err(s
            .error_at(
                "serving.placement",
                "mixture-of-experts models are not placed layer by layer by this version",
            )
            .with_help("remove `placement` to serve whole replicas"));
    }
    if let Some((i, _)) = setups.iter().enumerate().find(|(_, g)| g.pp > 1) {
        return refuse(
            "serving.group.pp",
            &format!("pp (group {})", i + 1),
            "the placement splits the model into stages; remove `pp`",
        );
    }
    let workload = f.workload.clone().expect("checked before the fleet");
    let tier = settings.tier;
    let groups: Vec<ServerGroup> = setups
        .into_iter()
        .map(|g| ServerGroup {
            gpu: g.gpu,
            tp: g.tp,
            servers: g.replicas,
            network: (g.node.topology, tier, g.node.in_switch_reduction),
        })
        .collect();
    let servers: u64 = groups.iter().map(|g| g.servers as u64).sum();
    if servers > MAX_PLACED_SERVERS as u64 {
        return Err(s
            .error_at(
                "serving.placement",
                format!(
                    "{servers} servers to place; the placement weighs every pair of them and \
                     searches over them, for at most {MAX_PLACED_SERVERS}"
                ),
            )
            .with_help(
                "fewer replicas in the groups, or remove `placement` to serve whole replicas",
            ));
    }
    let servers = servers as u32;
    let between =
        cluster::server_network(s, groups[0].gpu.clone(), servers, tier, &mut assumptions)?;
    let seed = f.sim.seed.unwrap_or(1);
    let requests = super::super::traffic::generate(&workload, seed, s.source.path.parent())
        .map_err(|e| e.locate(s))?;
    Ok(ServingConfig {
        scenario: s.name(),
        model,
        requests,
        seed,
        slo: super::slo(s),
        scheduler: settings.scheduler,
        max_batch_size: settings.max_batch_size,
        max_batch_tokens: settings.max_batch_tokens,
        memory: settings.memory,
        tier,
        fleet: FleetConfig::Placed(Box::new(Placed {
            method: settings.method,
            groups,
            between: between.topology,
        })),
        assumptions,
    })
}
