//! The text a scenario was read from, and the way back from byte spans to places a person can find.
//!
//! A scenario's values come from its file and from `--set KEY=VALUE` options. Both are parsed into one
//! spanned TOML tree whose spans index a single virtual text: the file's bytes first, then each
//! option's line after them. A span therefore tells by itself whether a value came from the file
//! (and at which line and column) or from which option.

use super::error::{Location, ScenarioError};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One `--set` option as given, and where its line sits in the virtual text.
#[derive(Clone, Debug)]
pub struct OverrideText {
    pub option: String,
    pub span: Range<usize>,
}

/// The scenario's file text plus the options' lines.
#[derive(Clone, Debug)]
pub struct Source {
    pub path: PathBuf,
    pub text: String,
    pub overrides: Vec<OverrideText>,
}

impl Source {
    pub fn new(path: &Path, text: String) -> Self {
        Source {
            path: path.to_path_buf(),
            text,
            overrides: Vec::new(),
        }
    }

    /// Length of the virtual text so far: the offset at which the next option's line starts.
    pub fn end(&self) -> usize {
        self.overrides
            .last()
            .map_or(self.text.len(), |o| o.span.end + 1)
    }

    /// Where a byte span of the virtual text is.
    pub fn locate(&self, span: Range<usize>) -> Location {
        if span.start >= self.text.len()
            && let Some((index, o)) = self
                .overrides
                .iter()
                .enumerate()
                .find(|(_, o)| o.span.start <= span.start && span.start <= o.span.end)
        {
            return Location::Override {
                index,
                option: o.option.clone(),
            };
        }
        let start = span.start.min(self.text.len());
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let line = self.text[..start].matches('\n').count() + 1;
        let line_text = self.text[line_start..line_end].trim_end_matches('\r');
        let column = self.text[line_start..start].chars().count() + 1;
        let end = span.end.clamp(start, line_end);
        Location::File {
            line,
            column,
            text: line_text.to_string(),
            width: self.text[start..end].chars().count(),
        }
    }

    /// An error at a span.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.path.clone(),
            location: self.locate(span),
            message: message.into(),
            help: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_map_to_lines_and_columns() {
        let src = Source::new(Path::new("a.toml"), "x = 1\n[p]\ntp = \"8\"\n".into());
        let at = src.text.find("\"8\"").unwrap();
        match src.locate(at..at + 3) {
            Location::File {
                line,
                column,
                text,
                width,
            } => {
                assert_eq!((line, column, width), (3, 6, 3));
                assert_eq!(text, "tp = \"8\"");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn spans_past_the_file_belong_to_options() {
        let mut src = Source::new(Path::new("a.toml"), "x = 1\n".into());
        let start = src.end();
        src.overrides.push(OverrideText {
            option: "p.tp=abc".into(),
            span: start..start + 12,
        });
        assert_eq!(
            src.locate(start + 5..start + 8),
            Location::Override {
                index: 0,
                option: "p.tp=abc".into()
            }
        );
    }
}
