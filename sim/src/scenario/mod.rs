//! Scenario files: the TOML a user writes to describe one run.
//!
//! Reading is strict and every error is located (`error`): quantities need units (`quantity`),
//! unknown keys are refused with the closest valid one (`suggest`), `--set` options override any
//! dotted key and are located as themselves (`set`, `source`). What a scenario means is worked out
//! by the workloads; they report semantic errors at the key's place through [`Scenario::error_at`].

pub mod cluster;
pub mod collective;
pub mod compression;
pub mod cost;
pub mod diffusion;
pub mod error;
pub mod expect;
pub mod federated;
pub mod job;
pub mod kernels;
pub mod lower;
pub mod model;
pub mod parallel;
pub mod perturb;
pub use crate::quantity;
pub mod sequences;
pub mod serving;
pub mod set;
pub mod source;
pub use crate::suggest;

use cluster::ClusterSection;
use error::ScenarioError;
use expect::Expectation;
use model::ModelSection;
use parallel::ParallelSection;
use serde::Deserialize;
use source::Source;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// What kind of work a scenario simulates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Training,
    Serving,
    Diffusion,
    /// One collective operation on the cluster (`[collective]`).
    Collective,
    /// Federated training over a population of devices (`[federated]`).
    Federated,
    /// Many small kernel launches against consolidated ones on one GPU (`[kernels]`).
    Kernels,
    /// Several jobs sharing one cluster (`[[job]]`).
    Cluster,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Training => "training",
            Kind::Serving => "serving",
            Kind::Diffusion => "diffusion",
            Kind::Collective => "collective",
            Kind::Federated => "federated",
            Kind::Kernels => "kernels",
            Kind::Cluster => "cluster",
        }
    }
}

/// Kinds this build can simulate.
pub const SUPPORTED_KINDS: &[Kind] = &[
    Kind::Training,
    Kind::Serving,
    Kind::Diffusion,
    Kind::Collective,
    Kind::Federated,
    Kind::Kernels,
    Kind::Cluster,
];

/// `[sim]`: how the simulator itself runs.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSection {
    pub network: Option<NetworkTier>,
    pub seed: Option<u64>,
    /// Add up the bytes every link carries over the run and report them (`links`): training and
    /// collective runs. Off by default (it prices every group of every collective).
    pub record_links: Option<bool>,
    /// Training: one GPU per pipeline stage (`"stage"`, the default) or every GPU its own
    /// timeline (`"all"`).
    pub ranks: Option<crate::workload::training::policy::Ranks>,
    /// Training with every rank simulated: GPUs whose pipelines the trace and the viewer draw
    /// (default: the pipeline that finishes last).
    pub trace_gpus: Option<Vec<u32>>,
    /// Cluster: steps every job runs with the others beside it (default 2).
    pub steps: Option<u32>,
}

/// Which network model prices communication.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkTier {
    /// Flow-level: max-min fair sharing of every link among active flows.
    Flow,
    /// Closed-form: latency plus size over bandwidth, no contention.
    Analytical,
}

/// The file's top level, as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: Option<String>,
    pub description: Option<String>,
    pub kind: Option<Kind>,
    #[serde(default)]
    pub cluster: ClusterSection,
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub parallel: ParallelSection,
    #[serde(default)]
    pub sim: SimSection,
    pub serving: Option<serving::ServingSection>,
    pub diffusion: Option<diffusion::DiffusionSection>,
    pub workload: Option<serving::WorkloadSection>,
    pub slo: Option<serving::SloSection>,
    pub cost: Option<cost::CostSection>,
    pub capacity: Option<cost::CapacitySection>,
    pub reliability: Option<cost::ReliabilitySection>,
    pub compression: Option<compression::CompressionSection>,
    pub collective: Option<collective::CollectiveSection>,
    pub federated: Option<federated::FederatedSection>,
    pub kernels: Option<kernels::KernelsSection>,
    /// Training over sequences of unlike lengths (`[sequences]`).
    pub sequences: Option<sequences::SequencesSection>,
    /// Training: GPUs and servers that compute slower than their peers (`[[perturb]]`).
    #[serde(default)]
    pub perturb: Vec<perturb::PerturbEntry>,
    #[serde(default)]
    pub expect: BTreeMap<String, Expectation>,
}

/// A scenario read and checked for form, with the way back to where each key was written.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: ScenarioFile,
    pub kind: Kind,
    pub source: Source,
    /// Span of every key and of its value, by dotted path.
    spans: BTreeMap<String, (Range<usize>, Range<usize>)>,
    /// A cluster scenario's jobs (`[[job]]`); empty for any other kind.
    pub jobs: Vec<job::JobEntry>,
}

impl Scenario {
    /// Reads a scenario file and applies `--set` options to it.
    pub fn load(path: &Path, sets: &[String]) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            };
            ScenarioError::whole(path, format!("cannot read the scenario: {why}"))
        })?;
        Scenario::parse(path, text, sets)
    }

    /// Reads a scenario from text; `path` names it in errors.
    pub fn parse(path: &Path, text: String, sets: &[String]) -> Result<Scenario, ScenarioError> {
        let mut source = Source::new(path, text);
        let overrides = sets
            .iter()
            .map(|o| set::read(&mut source, o))
            .collect::<Result<Vec<_>, _>>()?;
        let text = source.text.clone();
        let mut root = DeTable::parse(&text)
            .map_err(|e| source.error(e.span().unwrap_or(0..0), capitalize_toml(e.message())))?
            .into_inner();
        for o in &overrides {
            set::apply(&mut root, o, &source)?;
        }
        let mut spans = BTreeMap::new();
        index_spans(&root, "", &mut spans);
        let kind = read_kind(&root, &source)?;
        let jobs = match job::take(&mut root) {
            Some(v) if kind == Kind::Cluster => job::read(v, &source)?,
            Some(v) => {
                return Err(source
                    .error(
                        v.span(),
                        format!("`job` does not apply to a {} scenario", kind.name()),
                    )
                    .with_help("[[job]] belongs to cluster scenarios (kind = \"cluster\")"));
            }
            None => Vec::new(),
        };
        Scenario::finish(source, root, spans, kind, jobs)
    }

    /// A scenario from a table already parsed out of `source`'s text (a job written inline in
    /// a cluster scenario).
    pub(crate) fn from_root(source: Source, root: DeTable<'_>) -> Result<Scenario, ScenarioError> {
        let mut spans = BTreeMap::new();
        index_spans(&root, "", &mut spans);
        let kind = read_kind(&root, &source)?;
        Scenario::finish(source, root, spans, kind, Vec::new())
    }

    fn finish(
        source: Source,
        root: DeTable<'_>,
        spans: BTreeMap<String, (Range<usize>, Range<usize>)>,
        kind: Kind,
        jobs: Vec<job::JobEntry>,
    ) -> Result<Scenario, ScenarioError> {
        let whole = Spanned::new(0..source.text.len(), root);
        let file = ScenarioFile::deserialize(toml::de::Deserializer::from(whole))
            .map_err(|e| explain_serde(&source, &spans, e))?;
        let scenario = Scenario {
            file,
            kind,
            source,
            spans,
            jobs,
        };
        scenario.check_expectations()?;
        scenario.check_sections()?;
        Ok(scenario)
    }

    /// Refuses sections and keys another kind of scenario reads: a key that would be ignored is
    /// an error, not a silent default.
    fn check_sections(&self) -> Result<(), ScenarioError> {
        let f = &self.file;
        let kind = self.kind.name();
        let refuse = |path: String, help: &str| {
            Err(self
                .error_at(
                    &path,
                    format!("`{path}` does not apply to a {kind} scenario"),
                )
                .with_help(help.to_string()))
        };
        let sections = [
            (f.serving.is_some(), "serving", Kind::Serving),
            (f.workload.is_some(), "workload", Kind::Serving),
            (f.slo.is_some(), "slo", Kind::Serving),
            (f.diffusion.is_some(), "diffusion", Kind::Diffusion),
            (f.capacity.is_some(), "capacity", Kind::Training),
            (f.reliability.is_some(), "reliability", Kind::Training),
            (f.compression.is_some(), "compression", Kind::Training),
            (f.collective.is_some(), "collective", Kind::Collective),
            (f.federated.is_some(), "federated", Kind::Federated),
            (f.kernels.is_some(), "kernels", Kind::Kernels),
            (f.sequences.is_some(), "sequences", Kind::Training),
            (!f.perturb.is_empty(), "perturb", Kind::Training),
            (f.sim.ranks.is_some(), "sim.ranks", Kind::Training),
            (f.sim.trace_gpus.is_some(), "sim.trace_gpus", Kind::Training),
            (f.sim.steps.is_some(), "sim.steps", Kind::Cluster),
        ];
        if self.kind == Kind::Cluster
            && let Some(section) = ["model", "parallel", "cost"]
                .into_iter()
                .find(|s| self.spans.contains_key(*s))
        {
            return refuse(
                section.to_string(),
                "a cluster scenario's workloads are its [[job]] entries; move it into a job",
            );
        }
        for (given, section, owner) in sections {
            // A diffusion scenario serves videos with [workload].
            let shared = section == "workload" && self.kind == Kind::Diffusion;
            if given && owner != self.kind && !shared {
                return refuse(
                    section.to_string(),
                    &if section.contains('.') {
                        format!(
                            "`{section}` belongs to {} scenarios; remove it",
                            owner.name()
                        )
                    } else {
                        format!(
                            "[{section}] belongs to {} scenarios; remove it",
                            owner.name()
                        )
                    },
                );
            }
        }
        let p = &f.parallel;
        let foreign = match self.kind {
            Kind::Training => p.diffusion_keys(),
            Kind::Diffusion => p.training_keys(),
            Kind::Serving | Kind::Collective | Kind::Federated | Kind::Kernels | Kind::Cluster => {
                let mut all = p.training_keys();
                all.extend(p.diffusion_keys());
                if p.tp.is_some() {
                    all.push("tp");
                }
                all
            }
        };
        if let Some(key) = foreign.first() {
            let help = match self.kind {
                Kind::Serving => "a serving replica's parallelism is [serving] tp and pp",
                Kind::Training => "ulysses, ring, pipefusion, dsp, latent and cfg are diffusion's",
                Kind::Diffusion => {
                    "a video's parallelism is ulysses, ring, pipefusion, dsp, latent, cfg and tp"
                }
                Kind::Collective => {
                    "a collective scenario prices [collective] alone; remove [parallel]"
                }
                Kind::Federated => {
                    "a federated scenario's devices train alone; what they train is [federated]'s"
                }
                Kind::Kernels => "a kernels scenario prices [kernels] alone; remove [parallel]",
                Kind::Cluster => "a job's parallelism is in its [[job]] entry",
            };
            return refuse(format!("parallel.{key}"), help);
        }
        Ok(())
    }

    /// The scenario's display name: its `name`, else its file name.
    pub fn name(&self) -> String {
        self.file.name.clone().unwrap_or_else(|| {
            self.source
                .path
                .file_stem()
                .map_or("scenario".into(), |s| s.to_string_lossy().into_owned())
        })
    }

    /// Span of the value at a dotted path, if the scenario wrote one.
    pub fn span_of(&self, path: &str) -> Option<Range<usize>> {
        self.spans.get(path).map(|(_, v)| v.clone())
    }

    /// An error about the value at `path` (or, when absent, about its table, or the file).
    pub fn error_at(&self, path: &str, message: impl Into<String>) -> ScenarioError {
        let mut p = path;
        loop {
            if let Some((key, value)) = self.spans.get(p) {
                // A table's value span is the whole table; point at its header instead.
                let span = if value.end - value.start > 80 {
                    key.clone()
                } else {
                    value.clone()
                };
                return self.source.error(span, message);
            }
            match p.rsplit_once('.') {
                Some((parent, _)) => p = parent,
                None => {
                    return ScenarioError::whole(&self.source.path, message);
                }
            }
        }
    }

    /// Refuses the first of `keys` that the scenario sets (`(set, path)` pairs, in order): the
    /// error at its path, `message` of the path, with `help`. Ok when none is set.
    pub fn refuse_set(
        &self,
        keys: &[(bool, &str)],
        message: impl Fn(&str) -> String,
        help: &str,
    ) -> Result<(), ScenarioError> {
        match keys.iter().find(|(set, _)| *set) {
            Some((_, path)) => Err(self.error_at(path, message(path)).with_help(help)),
            None => Ok(()),
        }
    }

    fn check_expectations(&self) -> Result<(), ScenarioError> {
        for (path, e) in &self.file.expect {
            if e.min.is_none() && e.max.is_none() && e.equals.is_none() {
                return Err(self
                    .error_at(
                        &format!("expect.{path}"),
                        format!("expectation `{path}` checks nothing"),
                    )
                    .with_help("give it min, max or equals, e.g. { min = 120, max = 170 }"));
            }
            if let (Some(min), Some(max)) = (e.min, e.max)
                && min > max
            {
                return Err(self.error_at(
                    &format!("expect.{path}"),
                    format!("expectation `{path}` has min {min} above max {max}"),
                ));
            }
        }
        Ok(())
    }
}

fn index_spans(
    table: &DeTable<'_>,
    prefix: &str,
    out: &mut BTreeMap<String, (Range<usize>, Range<usize>)>,
) {
    for (k, v) in table {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        match v.get_ref() {
            DeValue::Table(t) => index_spans(t, &path, out),
            // Arrays of tables by index: `perturb.0.gpu`.
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let DeValue::Table(t) = item.get_ref() {
                        let at = format!("{path}.{i}");
                        index_spans(t, &at, out);
                        out.insert(at, (item.span(), item.span()));
                    }
                }
            }
            _ => {}
        }
        out.insert(path, (k.span(), v.span()));
    }
}

fn read_kind(root: &DeTable<'_>, source: &Source) -> Result<Kind, ScenarioError> {
    let supported = SUPPORTED_KINDS
        .iter()
        .map(|k| format!("\"{}\"", k.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let Some(value) = root.get("kind") else {
        return Err(
            ScenarioError::whole(&source.path, "the scenario has no `kind`")
                .with_help(format!("add a line at the top: kind = {supported}")),
        );
    };
    let kind = match value.get_ref().as_str() {
        Some("training") => Kind::Training,
        Some("serving") => Kind::Serving,
        Some("diffusion") => Kind::Diffusion,
        Some("collective") => Kind::Collective,
        Some("federated") => Kind::Federated,
        Some("kernels") => Kind::Kernels,
        Some("cluster") => Kind::Cluster,
        Some(other) => {
            let hint = suggest::closest(
                other,
                [
                    "training",
                    "serving",
                    "diffusion",
                    "collective",
                    "federated",
                    "kernels",
                    "cluster",
                ],
            )
            .map(|s| format!("did you mean \"{s}\"? "))
            .unwrap_or_default();
            return Err(source
                .error(value.span(), format!("unknown kind \"{other}\""))
                .with_help(format!(
                    "{hint}valid kinds: \"training\", \"serving\", \"diffusion\", \"collective\", \
                     \"federated\", \"kernels\", \"cluster\""
                )));
        }
        None => {
            return Err(source.error(
                value.span(),
                format!(
                    "`kind` must be a string, not a {}",
                    value.get_ref().type_str()
                ),
            ));
        }
    };
    if !SUPPORTED_KINDS.contains(&kind) {
        return Err(source
            .error(
                value.span(),
                format!("{} workloads are not modelled by this version", kind.name()),
            )
            .with_help(format!("kinds this version simulates: {supported}")));
    }
    Ok(kind)
}

/// Turns serde's message into one that says where and what would be valid.
fn explain_serde(
    source: &Source,
    spans: &BTreeMap<String, (Range<usize>, Range<usize>)>,
    e: toml::de::Error,
) -> ScenarioError {
    let span = e.span().unwrap_or(0..0);
    let message = e.message();
    let path = spans
        .iter()
        .filter(|(_, (k, v))| contains(k, &span) || contains(v, &span))
        .max_by_key(|(p, _)| p.len())
        .map(|(p, _)| p.clone());
    if let Some((name, expected)) = parse_unknown(message, "unknown field `") {
        let table = path
            .as_deref()
            .and_then(|p| p.rsplit_once('.').map(|(t, _)| t))
            .map_or("the top level".to_string(), |t| format!("[{t}]"));
        let mut err = source.error(span, format!("unknown key `{name}` in {table}"));
        let hint = suggest::closest(&name, expected.iter().map(String::as_str))
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default();
        err.help = Some(format!("{hint}valid keys here: {}", expected.join(", ")));
        return err;
    }
    if let Some((name, expected)) = parse_unknown(message, "unknown variant `") {
        let key = path.unwrap_or_default();
        let mut err = source.error(span, format!("`{name}` is not a valid value for `{key}`"));
        let hint = suggest::closest(&name, expected.iter().map(String::as_str))
            .map(|s| format!("did you mean \"{s}\"? "))
            .unwrap_or_default();
        let valid: Vec<String> = expected.iter().map(|v| format!("\"{v}\"")).collect();
        err.help = Some(format!("{hint}valid values: {}", valid.join(", ")));
        return err;
    }
    let prefix = path.map(|p| format!("{p}: ")).unwrap_or_default();
    source.error(span, format!("{prefix}{}", humanize(message)))
}

fn contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end && outer.start < outer.end
}

/// Reads "unknown field `x`, expected one of `a`, `b`" (or "expected `a` or `b`").
fn parse_unknown(message: &str, lead: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix(lead)?;
    let (name, tail) = rest.split_once('`')?;
    let expected = tail
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((name.to_string(), expected))
}

/// Serde's wording, in the scenario's terms.
fn humanize(message: &str) -> String {
    message
        .replace("expected u32", "expected a whole number (0 or more)")
        .replace("expected u64", "expected a whole number (0 or more)")
        .replace("expected u8", "expected a small whole number")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false")
        .replace("invalid type: ", "")
        .replace("invalid value: ", "")
}

fn capitalize_toml(message: &str) -> String {
    format!("this is not valid TOML: {message}")
}

#[cfg(test)]
mod tests;
