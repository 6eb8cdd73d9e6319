//! A refusal of one key, found below the scenario layer by code that reads plain values (model
//! resolution, traffic generation, file parsers) and located afterwards by the scenario layer
//! (`scenario::error`, `KeyError::locate`). It names the key's dotted path, never a file position.

use std::fmt;

/// An error about one key, by its dotted path.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyError {
    /// Dotted path of the key, e.g. "model.heads" or "workload.rate".
    pub path: String,
    pub message: String,
    pub help: Option<String>,
}

impl KeyError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> KeyError {
        KeyError {
            path: path.into(),
            message: message.into(),
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> KeyError {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)?;
        if let Some(help) = &self.help {
            write!(f, " ({help})")?;
        }
        Ok(())
    }
}

impl std::error::Error for KeyError {}
