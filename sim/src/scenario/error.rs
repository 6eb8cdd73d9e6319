//! Errors in scenario files, located and explained.
//!
//! Every error a person can cause names where it is (file, line and column, or the `--set` option
//! that caused it), what is wrong, and what would be valid. They render like compiler errors:
//!
//! ```text
//! error: unknown key `tpp` in [parallel]
//!   --> scenarios/gpt.toml:14:1
//!    |
//! 14 | tpp = 8
//!    | ^^^
//!    = help: did you mean `tp`?
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

/// Where an error sits.
#[derive(Clone, Debug, PartialEq)]
pub enum Location {
    /// In the file: 1-based line and column (in characters), the line's text and the marked width.
    File {
        line: usize,
        column: usize,
        text: String,
        width: usize,
    },
    /// In the n-th `--set KEY=VALUE` option (0-based), as the user typed it.
    Override { index: usize, option: String },
    /// Nowhere more precise than the file itself (it could not be read, say).
    Whole,
}

/// A problem with a scenario: bad input, never a bug.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub file: PathBuf,
    pub location: Location,
    pub message: String,
    pub help: Option<String>,
}

impl ScenarioError {
    pub fn whole(file: &Path, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.to_path_buf(),
            location: Location::Whole,
            message: message.into(),
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// "file:line:column" (or the `--set` option), for one-line summaries.
    pub fn position(&self) -> String {
        match &self.location {
            Location::File { line, column, .. } => {
                format!("{}:{line}:{column}", self.file.display())
            }
            Location::Override { option, .. } => format!("--set {option}"),
            Location::Whole => self.file.display().to_string(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", self.message)?;
        match &self.location {
            Location::File {
                line,
                column,
                text,
                width,
            } => {
                let gutter = line.to_string().len();
                let pad = " ".repeat(gutter);
                writeln!(f, "{pad}--> {}:{line}:{column}", self.file.display())?;
                writeln!(f, "{pad} |")?;
                writeln!(f, "{line} | {text}")?;
                let indent: String = text
                    .chars()
                    .take(column - 1)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                write!(f, "{pad} | {indent}{}", "^".repeat((*width).max(1)))?;
            }
            Location::Override { option, .. } => {
                write!(
                    f,
                    "  --> in the option --set {option} (for {})",
                    self.file.display()
                )?;
            }
            Location::Whole => write!(f, "  --> {}", self.file.display())?,
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

pub use crate::key_error::KeyError;

impl KeyError {
    /// The error located in the scenario it came from.
    pub fn locate(self, s: &super::Scenario) -> ScenarioError {
        let e = s.error_at(&self.path, self.message);
        match self.help {
            Some(help) => e.with_help(help),
            None => e,
        }
    }
}
