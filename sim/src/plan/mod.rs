//! `clustersim plan`: search the parallel configurations of a scenario, best first.
//!
//! A plan enumerates a space of layouts (`space`), refuses what the layout rules refuse and what
//! does not fit in memory (saying how many and why), ranks the rest with a fast estimate, and
//! simulates the most promising in full, in parallel (rayon; each simulation itself stays
//! single-threaded and deterministic). The output is a report-like JSON object: how many
//! candidates were considered, pruned, ranked and simulated, the top ones with their metrics and
//! `--set` options to reproduce them, and the scenario's own layout for comparison.
//!
//! Training (`training`) searches the layouts of `space` and ranks them by a closed-form
//! estimate; serving (`serving`) and diffusion (`diffusion`) simulate every valid candidate,
//! each the scenario with `--set` options (`candidate`). What to rank by is the `objective`.

pub(crate) mod candidate;
pub(crate) mod diffusion;
pub mod flags;
pub(crate) mod objective;
pub(crate) mod serving;
pub(crate) mod space;
pub(crate) mod training;

pub use flags::Flags;
pub use objective::Objective;
pub use space::Space;

use crate::scenario::error::ScenarioError;
use crate::scenario::{Kind, Scenario};
use crate::workload::training::Layout;
use serde_json::Value;

/// What to search for and how much to simulate.
#[derive(Copy, Clone, Debug)]
pub struct Options {
    /// Configurations to report.
    pub top: usize,
    /// Best-ranked configurations to simulate in full (the scenario's own is simulated besides).
    /// Training only: serving and diffusion plans simulate every valid candidate.
    pub simulate: usize,
    /// What to rank by.
    pub objective: Objective,
    /// Serving, `fewest-gpus`: the SLO attainment a fleet must reach (default
    /// [`serving::DEFAULT_SLO_ATTAINMENT`]); None when not given.
    pub slo_attainment: Option<f64>,
    /// Diffusion, `fewest-gpus`: the latency bound of one video, seconds; required there.
    pub max_latency_s: Option<f64>,
    /// Training and diffusion: bytes of each GPU's memory kept free of the modelled peak (the
    /// CUDA context and allocator fragmentation the memory model leaves out); 0 by default.
    pub headroom_bytes: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 5,
            simulate: 16,
            objective: Objective::Fastest,
            slo_attainment: None,
            max_latency_s: None,
            headroom_bytes: 0.0,
        }
    }
}

/// Plans a scenario: its workload's space, searched.
pub fn plan(scenario: &Scenario, options: &Options) -> Result<Value, ScenarioError> {
    match scenario.kind {
        Kind::Training => {
            let path = &scenario.source.path;
            if options.objective == Objective::FewestGpus {
                return Err(ScenarioError::whole(
                    path,
                    "--objective fewest-gpus: a training scenario's cluster is fixed, so there \
                     is no GPU count to search",
                )
                .with_help(
                    "use --objective fastest or cheapest, or compare cluster sizes with \
                     `clustersim sweep --vary cluster.nodes=N1,N2,...`",
                ));
            }
            if options.slo_attainment.is_some() || options.max_latency_s.is_some() {
                return Err(ScenarioError::whole(
                    path,
                    "--slo-attainment and --max-latency are targets of serving and diffusion \
                     plans, not of training",
                )
                .with_help("remove them"));
            }
            training::plan(scenario, options)
        }
        Kind::Serving if options.headroom_bytes > 0.0 => Err(ScenarioError::whole(
            &scenario.source.path,
            "--memory-headroom applies to training and diffusion plans",
        )
        .with_help("a serving replica sizes its KV cache from serving.kv_memory_fraction; lower it with --set serving.kv_memory_fraction=0.85")),
        Kind::Serving => serving::plan(scenario, options),
        Kind::Diffusion => diffusion::plan(scenario, options),
        Kind::Collective => Err(ScenarioError::whole(
            &scenario.source.path,
            "`plan` searches parallel layouts; a collective scenario has none",
        )
        .with_help("compare algorithms or networks with `clustersim sweep --vary collective.algorithm=ring,tree`")),
        Kind::Kernels => Err(ScenarioError::whole(
            &scenario.source.path,
            "`plan` searches parallel layouts; a kernels scenario has none",
        )
        .with_help("compare consolidation degrees with `clustersim sweep --vary kernels.consolidate=1,32,256`")),
        Kind::Federated => Err(ScenarioError::whole(
            &scenario.source.path,
            "`plan` searches parallel layouts; a federated scenario has none",
        )
        .with_help("compare cohorts or payloads with `clustersim sweep --vary federated.cohort=500,1000`")),
        Kind::Cluster => Err(ScenarioError::whole(
            &scenario.source.path,
            "`plan` searches one workload's layouts; a cluster scenario holds several jobs",
        )
        .with_help("plan each job's scenario on its own, then place the jobs in a cluster scenario")),
    }
}

/// The `--set` options that give a scenario this layout.
pub fn layout_sets(l: &Layout) -> Vec<String> {
    let schedule = l.schedule.name();
    vec![
        format!("parallel.tp={}", l.tp),
        format!("parallel.pp={}", l.pp),
        format!("parallel.cp={}", l.cp),
        format!("parallel.dp={}", l.dp),
        format!("parallel.ep={}", l.ep),
        format!("parallel.micro_batch={}", l.micro_batch),
        format!("parallel.schedule={schedule}"),
        format!("parallel.virtual_stages={}", l.virtual_stages),
        format!("parallel.sequence_parallel={}", l.sequence_parallel),
        format!("parallel.recompute={}", l.recompute.name()),
        format!("parallel.zero={}", l.zero),
    ]
}
