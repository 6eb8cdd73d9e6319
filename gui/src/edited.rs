//! The edited scenario: a scenario file's text with `--set` overrides applied, as a TOML document
//! to save and reopen.
//!
//! Values are read as `clustersim --set` reads them: as TOML when the text is valid TOML (`8`,
//! `true`, `"200 Gb/s"`), otherwise as a string (`H100`, `1f1b`). Dotted keys create the tables
//! they name. The file is parsed into a `toml::Table`, edited and written back, so the original's
//! comments, blank lines and inline-table layout are not kept (the UI says so); the keys and
//! values are. A one-line header says where the file came from.
//! Deliberately left out: format-preserving editing (toml_edit would keep comments but is one more
//! dependency for CI to build) and removing keys (`--set` cannot remove one either).

use toml::{Table, Value};

/// A `--set` value as the simulator reads it.
pub fn value(text: &str) -> Value {
    let text = text.trim();
    match format!("v = {text}").parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(text.into())),
        Err(_) => Value::String(text.to_string()),
    }
}

/// Sets `KEY=VALUE` (a dotted key) in `table`, creating tables on the way.
pub fn set(table: &mut Table, option: &str) -> Result<(), String> {
    let (key, text) = option
        .split_once('=')
        .ok_or_else(|| format!("--set {option}: missing `=`"))?;
    let parts: Vec<&str> = key.trim().split('.').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("--set {option}: `{key}` is not a dotted key"));
    }
    let (leaf, path) = parts.split_last().expect("split gives one part at least");
    let mut t = table;
    for (i, p) in path.iter().enumerate() {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        t = match entry {
            Value::Table(inner) => inner,
            _ => {
                return Err(format!(
                    "--set {option}: `{}` is a value, not a table",
                    parts[..=i].join(".")
                ));
            }
        };
    }
    t.insert(leaf.to_string(), value(text));
    Ok(())
}

/// The scenario `text` with every option of `sets` applied, as TOML. `from` names the original
/// in the header line.
pub fn apply(text: &str, sets: &[String], from: &str) -> Result<String, String> {
    let table = table(text, sets).map_err(|e| format!("{from}: {e}"))?;
    let body = toml::to_string(&table).map_err(|e| e.to_string())?;
    let header = if sets.is_empty() {
        format!("# Saved by clustersim-gui from {from}.\n")
    } else {
        format!(
            "# Saved by clustersim-gui from {from} with {} applied.\n",
            sets.iter()
                .map(|s| format!("--set {s}"))
                .collect::<Vec<_>>()
                .join(" ")
        )
    };
    Ok(format!("{header}\n{body}"))
}

/// The scenario `text` with `sets` applied, parsed (for reading values the report does not echo).
pub fn table(text: &str, sets: &[String]) -> Result<Table, String> {
    let mut table: Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    for s in sets {
        set(&mut table, s)?;
    }
    Ok(table)
}

/// The value at a dotted `key` of a parsed scenario, as it would be typed in a field.
pub fn lookup(table: &Table, key: &str) -> Option<String> {
    let mut parts = key.split('.');
    let mut v = table.get(parts.next()?)?;
    for p in parts {
        v = v.as_table()?.get(p)?;
    }
    Some(match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Where to save an edited `path` by default: `NAME-edited.toml` beside it.
pub fn default_path(path: &std::path::Path) -> std::path::PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
    path.with_file_name(format!("{stem}-edited.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn values_read_as_the_simulator_reads_them() {
        assert_eq!(value("8"), Value::Integer(8));
        assert_eq!(value("true"), Value::Boolean(true));
        assert_eq!(value("\"200 Gb/s\""), Value::String("200 Gb/s".into()));
        assert_eq!(value("200 Gb/s"), Value::String("200 Gb/s".into()));
        assert_eq!(value("H100"), Value::String("H100".into()));
    }

    #[test]
    fn dotted_keys_are_set_and_tables_created() {
        let mut t: Table = "[parallel]\ntp = 8\n".parse().unwrap();
        set(&mut t, "parallel.tp=4").unwrap();
        set(&mut t, "cluster.inter_node.nic_bandwidth=400 Gb/s").unwrap();
        assert_eq!(lookup(&t, "parallel.tp").as_deref(), Some("4"));
        assert_eq!(
            lookup(&t, "cluster.inter_node.nic_bandwidth").as_deref(),
            Some("400 Gb/s")
        );
        assert!(
            set(&mut t, "parallel.tp.x=1")
                .unwrap_err()
                .contains("not a table")
        );
        assert!(set(&mut t, "nothing").is_err());
    }

    /// The saved file runs to the same report as the original with the overrides.
    #[test]
    fn a_saved_scenario_runs_like_the_original_with_its_overrides() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/training/gpt3-1.3b-8xh100.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let sets = vec!["parallel.micro_batch=4".to_string()];
        let saved = apply(&text, &sets, "gpt3-1.3b-8xh100.toml").unwrap();
        assert!(saved.starts_with("# Saved by clustersim-gui"));
        let dir =
            std::env::temp_dir().join(format!("clustersim-gui-edited-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("saved.toml");
        std::fs::write(&out, &saved).unwrap();
        let a = clustersim::Scenario::load(&path, &sets).unwrap();
        let b = clustersim::Scenario::load(&out, &[]).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        let (ra, rb) = (
            clustersim::run(&a).unwrap().report,
            clustersim::run(&b).unwrap().report,
        );
        assert_eq!(rb["parallel"]["micro_batch"], 4);
        assert_eq!(ra["iteration_time_s"], rb["iteration_time_s"]);
        assert_eq!(ra["memory"], rb["memory"]);
    }

    #[test]
    fn the_default_path_sits_beside_the_original() {
        assert_eq!(
            default_path(std::path::Path::new("a/b/c.toml")),
            PathBuf::from("a/b/c-edited.toml")
        );
    }
}
