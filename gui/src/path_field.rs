//! Completion of file names in the path field (Tab), the viewer's stand-in for a file dialog.
//!
//! The text up to its last `/` is a directory (the working directory when there is none), the
//! rest a prefix of a name in it. The candidates are that directory's sub-directories (shown with
//! a trailing `/`) and the files the viewer opens (.toml scenarios, .json saved runs, .csv and
//! .jsonl sweep results) whose names start with the prefix, sorted; hidden entries only when the
//! prefix starts with a dot. The text is extended by what all candidates share (the whole name
//! when there is one candidate), as a shell does.
//!
//! Why not a native file dialog: the `rfd` crate needs GTK 3's development files on Linux (not
//! installed on the development machine) or, with its XDG-portal backend (zbus, pure Rust), a
//! running desktop portal service on a D-Bus session bus (neither exists there nor under Xvfb, so
//! no test or screenshot could exercise it). Files can also be
//! dropped on the window. Deliberately left out: `~` expansion and matching inside names.

use std::path::Path;

/// What Tab does to the field's text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Completion {
    /// The field's new text.
    pub text: String,
    /// Every match, as the text that would select it (directory part included).
    pub candidates: Vec<String>,
}

/// Extensions of the files the viewer opens.
pub const OPENS: [&str; 4] = ["toml", "json", "csv", "jsonl"];

fn opens(name: &str) -> bool {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| OPENS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The completion of `text`, relative to the working directory `cwd` when not absolute.
pub fn complete(text: &str, cwd: &Path) -> Completion {
    let (dir, prefix) = match text.rfind('/') {
        Some(i) => text.split_at(i + 1),
        None => ("", text),
    };
    let listed = if dir.is_empty() {
        cwd.to_path_buf()
    } else {
        cwd.join(dir)
    };
    let Ok(entries) = std::fs::read_dir(&listed) else {
        return Completion {
            text: text.to_string(),
            candidates: Vec::new(),
        };
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            // Follows symbolic links, so a linked directory completes as one.
            let is_dir = std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir());
            if is_dir {
                Some(format!("{name}/"))
            } else {
                opens(&name).then_some(name)
            }
        })
        .collect();
    names.sort();
    let shared = match names.split_first() {
        Some((first, rest)) => rest.iter().fold(first.as_str(), |acc, n| {
            let common = acc
                .char_indices()
                .zip(n.chars())
                .take_while(|((_, a), b)| a == b)
                .last()
                .map_or(0, |((i, a), _)| i + a.len_utf8());
            &acc[..common]
        }),
        None => prefix,
    };
    Completion {
        text: format!(
            "{dir}{}",
            if shared.len() > prefix.len() {
                shared
            } else {
                prefix
            }
        ),
        candidates: names.iter().map(|n| format!("{dir}{n}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn completes_directories_then_scenarios() {
        let c = complete("scen", &repo());
        assert_eq!(c.text, "scenarios/");
        assert_eq!(c.candidates, ["scenarios/"]);
        let c = complete("scenarios/tr", &repo());
        assert_eq!(c.text, "scenarios/training/");
        // Several matches: extended by what they share, all listed.
        let c = complete("scenarios/training/gpt3-1", &repo());
        assert_eq!(c.text, "scenarios/training/gpt3-1");
        assert!(c.candidates.len() >= 3, "{:?}", c.candidates);
        assert!(
            c.candidates
                .iter()
                .all(|n| n.starts_with("scenarios/training/gpt3-1")),
            "{:?}",
            c.candidates
        );
        let c = complete("scenarios/training/gpt3-175b-1024xa100-pt", &repo());
        assert_eq!(c.text, "scenarios/training/gpt3-175b-1024xa100-ptdp.toml");
    }

    #[test]
    fn only_files_the_viewer_opens_and_no_hidden_ones() {
        // The repository's root has Cargo.toml (opens), Cargo.lock (does not), .git (hidden).
        let c = complete("Cargo.", &repo());
        assert_eq!(c.candidates, ["Cargo.toml"]);
        assert!(
            complete("", &repo())
                .candidates
                .iter()
                .all(|n| !n.starts_with('.'))
        );
        // Nothing matches, or no such directory: the text is left alone.
        let c = complete("nonexistent/x", &repo());
        assert_eq!(
            c,
            Completion {
                text: "nonexistent/x".into(),
                candidates: Vec::new()
            }
        );
    }
}
