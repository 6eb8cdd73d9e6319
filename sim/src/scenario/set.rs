//! `--set KEY=VALUE`: overriding any dotted key of a scenario from the command line.
//!
//! The value is read as TOML when it is valid TOML (`8`, `true`, `"200 Gb/s"`, `[1, 2]`) and as a
//! string otherwise (`H100`, `1f1b`, `200 Gb/s`), so shells need no extra quoting. The key may name a
//! table or key that the file lacks; it is created. The option's line is parsed with spans placed
//! after the file's text (see `source`), so errors in an overridden value point at the option.

use super::error::ScenarioError;
use super::source::{OverrideText, Source};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A parsed option: its dotted key and the text to parse, padded so that spans land after the file.
pub struct Override {
    pub parts: Vec<String>,
    pub padded: String,
    pub option: String,
}

/// Reads `option` ("KEY=VALUE") and records its line in `source`.
pub fn read(source: &mut Source, option: &str) -> Result<Override, ScenarioError> {
    let bad = |message: String| {
        ScenarioError::whole(&source.path, message).with_help(
            "write --set KEY=VALUE with a dotted key, e.g. --set parallel.tp=8 or \
             --set cluster.inter_node.nic_bandwidth=\"400 Gb/s\"",
        )
    };
    let Some((key, value)) = option.split_once('=') else {
        return Err(bad(format!("--set {option}: missing `=`")));
    };
    let parts: Vec<String> = key
        .trim()
        .split('.')
        .map(|p| p.trim().to_string())
        .collect();
    if parts.iter().any(String::is_empty) {
        return Err(bad(format!("--set {option}: `{key}` is not a dotted key")));
    }
    let value = value.trim();
    let literal = if DeValue::parse(value).is_ok() {
        value.to_string()
    } else {
        toml::Value::String(value.to_string()).to_string()
    };
    let quoted: Vec<String> = parts
        .iter()
        .map(|p| toml::Value::String(p.clone()).to_string())
        .collect();
    let line = format!("{} = {literal}", quoted.join("."));
    let start = source.end();
    source.overrides.push(OverrideText {
        option: option.to_string(),
        span: start..start + line.len(),
    });
    Ok(Override {
        parts,
        padded: format!("{}{line}", " ".repeat(start)),
        option: option.to_string(),
    })
}

/// Parses the option's line and puts its single leaf into `root`, creating tables on the way.
pub fn apply<'a>(
    root: &mut DeTable<'a>,
    o: &'a Override,
    source: &Source,
) -> Result<(), ScenarioError> {
    let parsed = DeTable::parse(&o.padded)
        .map_err(|e| source.error(e.span().unwrap_or_default(), e.message().to_string()))?
        .into_inner();
    let parts: Vec<&str> = o.parts.iter().map(String::as_str).collect();
    merge(root, parsed, &parts, source, &o.option)
}

fn merge<'a>(
    root: &mut DeTable<'a>,
    parsed: DeTable<'a>,
    parts: &[&str],
    source: &Source,
    option: &str,
) -> Result<(), ScenarioError> {
    let (key, value) = parsed
        .into_iter()
        .next()
        .expect("the option's line defines one key");
    let (first, rest) = parts.split_first().expect("at least one part");
    if rest.is_empty() {
        root.insert(key, value);
        return Ok(());
    }
    let DeValue::Table(inner) = value.into_inner() else {
        unreachable!("a dotted key parses to nested tables")
    };
    match root.get_mut(*first).map(Spanned::get_mut) {
        Some(DeValue::Table(existing)) => merge(existing, inner, rest, source, option),
        Some(other) => Err(ScenarioError::whole(
            &source.path,
            format!(
                "--set {option}: `{first}` is {}, not a table, so it has no key `{}`{}",
                with_article(other.type_str()),
                rest.join("."),
                if matches!(other, DeValue::Array(_)) {
                    "; --set does not index arrays: edit the file"
                } else {
                    ""
                }
            ),
        )),
        None => {
            let span = key.span();
            let mut fresh = DeTable::new();
            merge(&mut fresh, inner, rest, source, option)?;
            root.insert(key, Spanned::new(span, DeValue::Table(fresh)));
            Ok(())
        }
    }
}

/// A TOML type's name with its indefinite article ("an array", "a string").
fn with_article(kind: &str) -> String {
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}
