//! A report of any kind, typed by its `kind` key: how a reader that did not run the scenario
//! (the summary, the viewer opening a saved report) gets the struct of `report::typed`'s family
//! that the JSON is, or an error naming what in it does not read.

use super::cluster::ClusterReport;
use super::collective::CollectiveReport;
use super::diffusion::DiffusionReport;
use super::federated::FederatedReport;
use super::kernels::KernelsReport;
use super::serving::ServingReport;
use super::training::TrainingReport;
use super::typed::{Sim, TypedReport};
use serde_json::Value;

/// One run's report, of whichever kind it is.
#[derive(Clone, Debug)]
pub enum Report {
    Training(Box<TrainingReport>),
    Serving(Box<ServingReport>),
    Diffusion(Box<DiffusionReport>),
    Collective(Box<CollectiveReport>),
    Kernels(Box<KernelsReport>),
    Federated(Box<FederatedReport>),
    Cluster(Box<ClusterReport>),
}

/// The kinds a report can be, as its `kind` key names them.
pub const KINDS: [&str; 7] = [
    TrainingReport::KIND,
    ServingReport::KIND,
    DiffusionReport::KIND,
    CollectiveReport::KIND,
    KernelsReport::KIND,
    FederatedReport::KIND,
    ClusterReport::KIND,
];

impl Report {
    /// `v` read as the report its `kind` names, or why it does not read: no `kind`, a kind
    /// this build does not know, or a key its type lacks or does not know.
    pub fn from_value(v: &Value) -> Result<Report, String> {
        fn typed<T: TypedReport>(v: &Value, wrap: fn(Box<T>) -> Report) -> Result<Report, String> {
            T::from_value(v).map(|r| wrap(Box::new(r)))
        }
        match v.get("kind").and_then(Value::as_str) {
            Some(TrainingReport::KIND) => typed(v, Report::Training),
            Some(ServingReport::KIND) => typed(v, Report::Serving),
            Some(DiffusionReport::KIND) => typed(v, Report::Diffusion),
            Some(CollectiveReport::KIND) => typed(v, Report::Collective),
            Some(KernelsReport::KIND) => typed(v, Report::Kernels),
            Some(FederatedReport::KIND) => typed(v, Report::Federated),
            Some(ClusterReport::KIND) => typed(v, Report::Cluster),
            Some(other) => Err(format!(
                "not a report this build knows: kind \"{other}\" (one of {})",
                KINDS.join(", ")
            )),
            None => Err(format!(
                "not a report: it has no string `kind` (one of {})",
                KINDS.join(", ")
            )),
        }
    }

    /// The report of a run this build simulated: it always reads back, so a failure is a bug.
    pub fn of_run(v: &Value) -> Report {
        Report::from_value(v).unwrap_or_else(|e| panic!("a run's own report: {e}"))
    }

    /// The scenario's name.
    pub fn scenario(&self) -> &str {
        match self {
            Report::Training(r) => &r.scenario,
            Report::Serving(r) => &r.scenario,
            Report::Diffusion(r) => &r.scenario,
            Report::Collective(r) => &r.scenario,
            Report::Kernels(r) => &r.scenario,
            Report::Federated(r) => &r.scenario,
            Report::Cluster(r) => &r.scenario,
        }
    }

    /// The engine's counts.
    pub fn sim(&self) -> &Sim {
        match self {
            Report::Training(r) => &r.sim,
            Report::Serving(r) => &r.sim,
            Report::Diffusion(r) => &r.sim,
            Report::Collective(r) => &r.sim,
            Report::Kernels(r) => &r.sim,
            Report::Federated(r) => &r.sim,
            Report::Cluster(r) => &r.sim,
        }
    }

    /// The GPU (`"mixed"` for a fleet of several) and how many the run used; none for a
    /// federated population of devices.
    pub fn gpus(&self) -> Option<(&str, u32)> {
        match self {
            Report::Training(r) => Some((&r.cluster.gpu, r.cluster.gpus)),
            Report::Serving(r) => Some((&r.cluster.gpu, r.cluster.gpus)),
            Report::Diffusion(r) => Some((&r.cluster.gpu, r.cluster.gpus)),
            Report::Collective(r) => Some((&r.cluster.gpu, r.cluster.gpus)),
            Report::Kernels(r) => Some((&r.cluster.gpu, r.cluster.gpus)),
            Report::Cluster(r) => Some((&r.cluster.gpu, r.cluster.gpus)),
            Report::Federated(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_report_without_a_known_kind_is_refused_by_name() {
        let e = Report::from_value(&json!({"kind": "trainning"})).unwrap_err();
        assert!(
            e.contains("\"trainning\"") && e.contains("training, serving"),
            "{e}"
        );
        let e = Report::from_value(&json!({"iteration_time_s": 1.0})).unwrap_err();
        assert!(e.contains("no string `kind`"), "{e}");
    }

    #[test]
    fn a_known_kind_with_a_missing_key_says_which() {
        let e = Report::from_value(&json!({"kind": "collective"})).unwrap_err();
        assert!(
            e.starts_with("not a collective report: missing field"),
            "{e}"
        );
    }
}
