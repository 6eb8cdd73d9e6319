//! A published case as the file states it, and reading a file of cases (`published.json`): a
//! missing file, bad JSON or a case without its fields is an error that says where.

use super::DEFAULT_FILE;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// One published case, as the file states it.
#[derive(Clone, Debug)]
pub struct Case {
    pub id: String,
    pub metric: String,
    pub unit: String,
    pub value: f64,
    /// The whole JSON object.
    pub raw: Value,
}

impl Case {
    pub(super) fn get(&self, section: &str, key: &str) -> Option<&Value> {
        self.raw.get(section).and_then(|s| s.get(key))
    }

    pub(super) fn notes(&self) -> &str {
        self.raw.get("notes").and_then(Value::as_str).unwrap_or("")
    }

    /// The id up to its first '-': "megatron", "nccl", "mpt".
    pub fn group(&self) -> String {
        group_of(&self.id)
    }
}

pub(super) fn group_of(id: &str) -> String {
    id.split('-').next().unwrap_or(id).to_string()
}

/// Why a file of cases could not be used.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadError {
    /// No file at the path.
    Missing(PathBuf),
    /// The file exists but could not be read.
    Unreadable { path: PathBuf, message: String },
    /// Not valid JSON, at a line and column.
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// Valid JSON, but not a list of cases.
    Shape { path: PathBuf, message: String },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Missing(path) => write!(
                f,
                "error: the file of published measurements was not found: {}\n  = help: give its \
                 path: clustersim validate PATH/TO/published.json (the default, {DEFAULT_FILE}, is \
                 relative to the current directory: run from the repository root, cloned beside \
                 shared/)",
                path.display()
            ),
            LoadError::Unreadable { path, message } => {
                write!(f, "error: cannot read {}: {message}", path.display())
            }
            LoadError::Json {
                path,
                line,
                column,
                message,
            } => write!(
                f,
                "error: {} is not valid JSON: {message}\n  --> {}:{line}:{column}",
                path.display(),
                path.display()
            ),
            LoadError::Shape { path, message } => write!(
                f,
                "error: {} is not a list of published cases: {message}\n  --> {}\n  = help: see \
                 shared/validation/README.md for the fields of a case",
                path.display(),
                path.display()
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads a file of cases: a JSON array of objects, each with a string `id`, `metric` and `unit` and
/// a numeric `value`.
pub fn load(path: &Path) -> Result<Vec<Case>, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing(path.to_path_buf()),
        _ => LoadError::Unreadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
    })?;
    parse(path, &text)
}

/// Reads cases from JSON text; `path` names the file in errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Case>, LoadError> {
    let value: Value = serde_json::from_str(text).map_err(|e| LoadError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let shape = |message: String| LoadError::Shape {
        path: path.to_path_buf(),
        message,
    };
    let Value::Array(items) = value else {
        return Err(shape("the top level is not an array".into()));
    };
    let mut cases = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        if !item.is_object() {
            return Err(shape(format!("case {i} is not an object")));
        }
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(format!("case {i} has no string `id`")))?
            .to_string();
        let text_field = |key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| shape(format!("case {i} ({id}) has no string `{key}`")))
        };
        let metric = text_field("metric")?;
        let unit = text_field("unit")?;
        let value = item
            .get("value")
            .and_then(Value::as_f64)
            .ok_or_else(|| shape(format!("case {i} ({id}) has no numeric `value`")))?;
        if cases.iter().any(|c: &Case| c.id == id) {
            return Err(shape(format!("case {i}: the id \"{id}\" is used twice")));
        }
        cases.push(Case {
            id,
            metric,
            unit,
            value,
            raw: item,
        });
    }
    Ok(cases)
}
