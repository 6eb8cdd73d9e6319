//! `kind = "collective"` lowered: the `[collective]` table (operation, algorithm, ranks, size,
//! compression) checked at its keys, on the scenario's cluster.

use crate::collective::{Algorithm, CollectiveOp};
use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use crate::scenario::lower::cluster::{self, Needs};
use crate::workload::collective::CollectiveConfig;

/// The scenario's collective, every key checked.
pub fn lower(s: &Scenario) -> Result<CollectiveConfig, ScenarioError> {
    let mut assumptions = Vec::new();
    let section = s.file.collective.as_ref().ok_or_else(|| {
        s.error_at(
            "collective",
            "a collective scenario needs a [collective] table",
        )
        .with_help("add [collective] with op = \"all-reduce\" and size = \"1 GiB\"")
    })?;
    let setup = cluster::resolve(
        s,
        &mut assumptions,
        Needs {
            sizes: true,
            inter_node: true,
        },
    )?;
    let op = CollectiveOp::parse(&section.op).ok_or_else(|| {
        let valid: Vec<&str> = CollectiveOp::ALL.iter().map(|o| o.name()).collect();
        s.error_at(
            "collective.op",
            format!("unknown operation \"{}\"", section.op),
        )
        .with_help(format!("valid operations: {}", valid.join(", ")))
    })?;
    let algorithm = match &section.algorithm {
        None => Algorithm::Auto,
        Some(a) => Algorithm::parse(a).ok_or_else(|| {
            s.error_at("collective.algorithm", format!("unknown algorithm \"{a}\""))
                .with_help("ring, tree, halving-doubling, hierarchical, nvls, direct or auto")
        })?,
    };
    let gpus = setup.nodes * setup.gpus_per_node;
    let ranks = section.ranks.unwrap_or(gpus);
    if ranks < 2 || ranks > gpus {
        return Err(s.error_at(
            "collective.ranks",
            format!("ranks = {ranks}: a collective needs 2 to the cluster's {gpus} GPUs"),
        ));
    }
    if section.size.0 == 0 {
        return Err(s.error_at("collective.size", "a collective of 0 bytes moves nothing"));
    }
    let compression = super::compression::resolve(
        s,
        section.compression.as_ref(),
        "collective.compression",
        "the payload",
        false,
        &mut assumptions,
    )?;
    Ok(CollectiveConfig {
        scenario: s.name(),
        cluster: setup,
        op,
        algorithm,
        ranks,
        bytes: section.size.0,
        compression,
        assumptions,
    })
}
