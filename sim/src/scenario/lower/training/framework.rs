//! `[parallel] framework` and `framework_version`: the training framework whose table
//! (`workload::training::framework`) fills what the scenario leaves out. Each default taken is
//! recorded where it is applied, with its source.

use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::workload::training::framework::Framework;

/// The scenario's framework at its release, or None without `framework`.
pub(super) fn resolve(s: &Scenario) -> Result<Option<Framework>, ScenarioError> {
    let p = &s.file.parallel;
    let version = match &p.framework_version {
        None => None,
        Some(text) => Some(crate::release::parse(text).map_err(|e| {
            s.error_at("parallel.framework_version", e)
                .with_help("a release number such as \"3.0\", or remove the key for the newest")
        })?),
    };
    match p.framework {
        Some(name) => Ok(Some(name.at(version))),
        None if version.is_some() => Err(s
            .error_at(
                "parallel.framework_version",
                "framework_version without a framework",
            )
            .with_help("add framework = \"megatron\", \"nemo\", \"deepspeed\" or \"torchtitan\"")),
        None => Ok(None),
    }
}
