//! `[[job]]` of a cluster scenario: one workload placed on a range of the cluster's servers.
//! A job is a scenario of its own, read from a file (`scenario = "path"`, relative to the
//! cluster's file) or written inline in the entry (`kind`, `[job.model]`, `[job.parallel]`, ...),
//! with `servers = [first, last]` (inclusive) and an optional `name`. Its `[cluster]` is the
//! cluster scenario's, cut to its servers.

use super::error::ScenarioError;
use super::source::Source;
use super::{Scenario, suggest};
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A job read from a cluster scenario.
#[derive(Clone, Debug)]
pub struct JobEntry {
    /// Its name: `name`, else its file's stem, else `job N`.
    pub name: String,
    /// First and last server it runs on, as written (checked against the cluster by the lowering).
    pub servers: Option<[u32; 2]>,
    /// The job as a scenario: its own file, or the entry's keys located in the cluster's file.
    pub scenario: Scenario,
    /// Whether it came from a file of its own.
    pub from_file: bool,
}

/// The keys of an entry that place the job rather than describe it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    name: Option<String>,
    servers: Option<[u32; 2]>,
    scenario: Option<Spanned<String>>,
}

const HEAD: [&str; 3] = ["name", "servers", "scenario"];

/// Reads the `[[job]]` array of a cluster scenario whose file is `source`.
pub fn read(value: Spanned<DeValue<'_>>, source: &Source) -> Result<Vec<JobEntry>, ScenarioError> {
    let span = value.span();
    let DeValue::Array(items) = value.into_inner() else {
        return Err(source
            .error(span, "`job` must be an array of tables")
            .with_help("write each job as a [[job]] table"));
    };
    let mut jobs = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let span = item.span();
        let DeValue::Table(mut table) = item.into_inner() else {
            return Err(source
                .error(span, "each `job` must be a table")
                .with_help("write each job as a [[job]] table"));
        };
        let mut head = DeTable::default();
        for key in HEAD {
            if let Some((k, v)) = table.remove_entry(key) {
                head.insert(k, v);
            }
        }
        let head = Head::deserialize(toml::de::Deserializer::from(Spanned::new(
            span.clone(),
            head,
        )))
        .map_err(|e| {
            source.error(
                e.span().unwrap_or(span.clone()),
                format!("job.{i}: {}", e.message()),
            )
        })?;
        let (scenario, from_file) =
            match &head.scenario {
                Some(file) => {
                    if let Some((k, _)) = table.iter().next() {
                        return Err(source
                        .error(k.span(), format!("`{}` beside `scenario` in a job", k.get_ref()))
                        .with_help(
                            "a job read from a file takes only name, servers and scenario: edit \
                             that file, or write the job inline without `scenario`",
                        ));
                    }
                    let dir = source.path.parent().unwrap_or(Path::new("."));
                    let path = dir.join(file.get_ref());
                    if !path.is_file() {
                        return Err(source
                            .error(
                                file.span(),
                                format!("job.{i}.scenario: no such file `{}`", path.display()),
                            )
                            .with_help("the path is relative to this cluster file"));
                    }
                    (Scenario::load(&path, &[])?, true)
                }
                None => (inline(table, span.clone(), source)?, false),
            };
        if scenario.kind == super::Kind::Cluster {
            return Err(source
                .error(span, "a job cannot itself be a cluster scenario")
                .with_help("a job is a training scenario"));
        }
        let name = head.name.clone().unwrap_or_else(|| match from_file {
            true => scenario.name(),
            false => format!("job {i}"),
        });
        jobs.push(JobEntry {
            name,
            servers: head.servers,
            scenario,
            from_file,
        });
    }
    Ok(jobs)
}

/// A job written inline: the entry's keys as a scenario, located in the cluster's file.
fn inline(
    table: DeTable<'_>,
    span: std::ops::Range<usize>,
    source: &Source,
) -> Result<Scenario, ScenarioError> {
    if let Some((k, _)) = table
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "cluster")
    {
        return Err(source
            .error(k.span(), "a job has no [cluster] of its own")
            .with_help("a job runs on the cluster scenario's [cluster], on its `servers`"));
    }
    if !table.iter().any(|(k, _)| k.get_ref().as_ref() == "kind") {
        let hint = suggest::closest("kind", table.iter().map(|(k, _)| k.get_ref().as_ref()))
            .map(|s| format!(" (`{s}`?)"))
            .unwrap_or_default();
        return Err(source
            .error(span, format!("the job has no `kind`{hint}"))
            .with_help(
                "write kind = \"training\" in the [[job]] table, or scenario = \"file.toml\"",
            ));
    }
    Scenario::from_root(source.clone(), table)
}

/// The root of a cluster scenario without its `job` array, and the array if there is one.
pub fn take<'a>(root: &mut DeTable<'a>) -> Option<Spanned<DeValue<'a>>> {
    root.remove("job")
}
