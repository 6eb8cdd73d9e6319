//! Structure-aware mutation of a TOML table (docs/FUZZ.md): values replaced by others at and
//! past their limits (zero, negative, huge, wrong types, unit strings good and bad), numbers
//! scaled by powers of ten, keys removed, unknown keys added, array entries repeated, `--set`
//! options on deep paths. JSON files are mutated through the same table ([`from_json`],
//! [`to_json`]); a JSON `null` has no TOML form and is left out. The viewer's tests include this
//! file by path, so it uses nothing of the `it` binary.

use proptest::prelude::*;
use serde_json::Value as Json;
use toml::{Table, Value};

/// A value put in place of another.
pub fn value() -> impl Strategy<Value = Value> {
    let strings = prop::sample::select(vec![
        "",
        "0",
        "-1",
        "0 s",
        "-3 ms",
        "1e99 GB",
        "5 furlongs",
        "NaN",
        "inf",
        "400 Gb/s",
        "0 Gb/s",
        "1e-30 s",
        "18446744073709551616",
        "H100",
        "all",
        "stage",
        "flow",
        "training",
        "cluster",
        "node0/nic0",
        "leaf0",
        "1 TB",
        "10/s",
        "0/s",
        "1e9 W",
        "-5 W",
        "adam",
        "llama-3-8b",
        "gpt3-175b",
        "interleaved-1f1b",
        "1f1b",
        "poisson",
        "../../etc/passwd",
        "résumé ✓",
        "1_000",
        "1.5e3 GiB",
        "2 d",
        "300 min",
    ]);
    prop_oneof![
        prop::sample::select(vec![
            0i64,
            -1,
            1,
            2,
            3,
            7,
            i64::MAX,
            i64::MIN,
            u32::MAX as i64,
            u32::MAX as i64 + 1,
            1 << 31,
            1 << 40,
        ])
        .prop_map(Value::Integer),
        any::<i64>().prop_map(Value::Integer),
        prop::sample::select(vec![0.0, -0.0, -1.5, 1e-300, 1e308, 0.5, 1.0000001, 1e9])
            .prop_map(Value::Float),
        strings.prop_map(|s| Value::String(s.to_string())),
        "[a-z0-9 ./_-]{0,12}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Boolean),
        Just(Value::Array(Vec::new())),
        prop::collection::vec(0i64..20, 1..4)
            .prop_map(|v| Value::Array(v.into_iter().map(Value::Integer).collect())),
        Just(Value::Table(Table::new())),
    ]
}

/// One change to a table; `at` picks among the places it can apply to.
#[derive(Clone, Debug)]
pub enum Mutation {
    Replace {
        at: usize,
        with: Value,
    },
    Scale {
        at: usize,
        power: i32,
    },
    Remove {
        at: usize,
    },
    Add {
        at: usize,
        key: String,
        with: Value,
    },
    Repeat {
        at: usize,
    },
    Set {
        at: usize,
        extra: Option<String>,
        with: Value,
    },
}

/// Keys an `Add` or a deep `--set` names: scenario keys, Hugging Face and profile keys, and one
/// that nothing knows.
const KEYS: [&str; 32] = [
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "nodes",
    "gpus_per_node",
    "ranks",
    "perturb",
    "job",
    "servers",
    "steps",
    "trace_gpus",
    "global_batch",
    "micro_batch",
    "requests",
    "rate",
    "seed",
    "nic_bandwidth",
    "link",
    "bandwidth",
    "kind",
    "scenario",
    "num_attention_heads",
    "num_key_value_heads",
    "hidden_size",
    "num_hidden_layers",
    "num_local_experts",
    "torch_dtype",
    "schema",
    "gpu",
    "zzz",
];

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        4 => (at, value()).prop_map(|(at, with)| Mutation::Replace { at, with }),
        2 => (at, -6i32..10).prop_map(|(at, power)| Mutation::Scale { at, power }),
        2 => at.prop_map(|at| Mutation::Remove { at }),
        2 => (at, prop::sample::select(KEYS.to_vec()), value())
            .prop_map(|(at, key, with)| Mutation::Add { at, key: key.into(), with }),
        1 => at.prop_map(|at| Mutation::Repeat { at }),
        2 => (at, prop::option::of(prop::sample::select(KEYS.to_vec())), value()).prop_map(
            |(at, extra, with)| Mutation::Set { at, extra: extra.map(str::to_string), with }
        ),
    ]
}

/// Every leaf and table of `t` by path (tables and array entries indexed), in a stable order.
fn places(t: &Table, prefix: &[String], out: &mut Vec<(Vec<String>, bool)>) {
    for (k, v) in t {
        let mut path = prefix.to_vec();
        path.push(k.clone());
        match v {
            Value::Table(inner) => {
                out.push((path.clone(), true));
                places(inner, &path, out);
            }
            Value::Array(items) if items.iter().all(Value::is_table) && !items.is_empty() => {
                out.push((path.clone(), false));
                for (i, item) in items.iter().enumerate() {
                    let mut at = path.clone();
                    at.push(i.to_string());
                    out.push((at.clone(), true));
                    places(item.as_table().unwrap(), &at, out);
                }
            }
            _ => out.push((path, false)),
        }
    }
}

/// The value at `path` (array entries by index).
fn get_mut<'a>(t: &'a mut Table, path: &[String]) -> Option<&'a mut Value> {
    let (first, rest) = path.split_first()?;
    let mut v = t.get_mut(first)?;
    for p in rest {
        v = match v {
            Value::Table(t) => t.get_mut(p)?,
            Value::Array(a) => a.get_mut(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Applies `m` to `t`; `--set` options go to `sets`.
pub fn apply(t: &mut Table, m: &Mutation, sets: &mut Vec<String>) {
    let mut all = Vec::new();
    places(t, &[], &mut all);
    if all.is_empty() {
        return;
    }
    let pick = |at: usize| all[at % all.len()].clone();
    match m {
        Mutation::Replace { at, with } => {
            if let Some(v) = get_mut(t, &pick(*at).0) {
                *v = with.clone();
            }
        }
        Mutation::Scale { at, power } => {
            if let Some(v) = get_mut(t, &pick(*at).0) {
                let x = 10f64.powi(*power);
                let scaled = match &*v {
                    Value::Integer(i) => Value::Integer((*i as f64 * x).clamp(-9e18, 9e18) as i64),
                    Value::Float(f) => Value::Float(*f * x),
                    Value::String(s) => {
                        // "400 Gb/s" -> "4e+12 Gb/s": the number of a quantity scaled.
                        let (n, unit) = s.split_once(' ').unwrap_or((s.as_str(), ""));
                        match n.parse::<f64>() {
                            Ok(n) => Value::String(format!("{:e} {unit}", n * x)),
                            Err(_) => v.clone(),
                        }
                    }
                    other => other.clone(),
                };
                *v = scaled;
            }
        }
        Mutation::Remove { at } => {
            let (path, _) = pick(*at);
            let (last, parent) = path.split_last().unwrap();
            match if parent.is_empty() {
                None
            } else {
                get_mut(t, parent)
            } {
                Some(Value::Table(p)) => {
                    p.remove(last);
                }
                Some(Value::Array(a)) => {
                    if let Ok(i) = last.parse::<usize>()
                        && i < a.len()
                    {
                        a.remove(i);
                    }
                }
                Some(_) => {}
                None => {
                    t.remove(last);
                }
            }
        }
        Mutation::Add { at, key, with } => {
            let tables: Vec<Vec<String>> =
                all.iter().filter(|p| p.1).map(|p| p.0.clone()).collect();
            let target = match tables.get(at % tables.len().max(1)) {
                Some(p) => get_mut(t, p).and_then(Value::as_table_mut),
                None => Some(t),
            };
            if let Some(table) = target {
                table.insert(key.clone(), with.clone());
            }
        }
        Mutation::Repeat { at } => {
            if let Some(Value::Array(a)) = get_mut(t, &pick(*at).0)
                && let Some(first) = a.first().cloned()
            {
                a.push(first);
            }
        }
        Mutation::Set { at, extra, with } => {
            let mut path = pick(*at).0;
            path.extend(extra.clone());
            sets.push(format!("{}={with}", path.join(".")));
        }
    }
}

/// `json` as a table to mutate: an object as it is, anything else under the key `root`.
pub fn from_json(json: &Json) -> Table {
    match to_toml(json) {
        Some(Value::Table(t)) => t,
        Some(other) => Table::from_iter([("root".to_string(), other)]),
        None => Table::new(),
    }
}

/// The JSON a table from [`from_json`] stands for.
pub fn to_json(table: &Table, was_object: bool) -> Json {
    let json = serde_json::to_value(table).unwrap_or(Json::Null);
    match (was_object, json) {
        (false, Json::Object(mut o)) => o.remove("root").unwrap_or(Json::Null),
        (_, json) => json,
    }
}

fn to_toml(json: &Json) -> Option<Value> {
    Some(match json {
        Json::Null => return None,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Float(n.as_f64()?),
        },
        Json::String(s) => Value::String(s.clone()),
        Json::Array(a) => Value::Array(a.iter().filter_map(to_toml).collect()),
        Json::Object(o) => Value::Table(
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), to_toml(v)?)))
                .collect(),
        ),
    })
}
