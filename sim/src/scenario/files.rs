//! The files a scenario names (Hugging Face configs, calibration profiles, traces, graph files),
//! read here at the edge so that the layers below parse text and never open a file.

use std::path::Path;

/// The text of the file at `path`, or why it cannot be read ("no such file", or the system's
/// message).
pub fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        _ => e.to_string(),
    })
}
