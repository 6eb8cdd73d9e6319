//! `merge`: the parts of a sharded sweep joined into the file the unsharded sweep writes.
//!
//! Every part must be of the output's format and have the same columns; every row the same
//! `points`; together they must hold each point of `0..points` exactly once. Rows are sorted by
//! `point` and written back through the sweep's own CSV encoder (JSON lines are kept as
//! written), so the result is byte for byte what one unsharded run writes. A part with no rows
//! (a shard that got no points) is accepted. Deliberately ignored: anything beyond the
//! `point` and `points` columns' values (metrics are not re-checked or recomputed).

use super::SweepError;
use super::format::{Format, write_csv};
use super::row::LEADING;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;

/// How many missing points an error names before it counts the rest.
const NAMED: usize = 8;

/// One part as read: its file (for errors) and its bytes.
pub struct Part {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// A row of a part: where it came from, its point, and its encoding to write back.
struct Record {
    part: usize,
    point: usize,
    encoded: Encoded,
}

enum Encoded {
    Csv(Vec<String>),
    Jsonl(String),
}

/// Joins `parts` (all in `format`) into one file's bytes.
pub fn merge(parts: &[Part], format: Format) -> Result<Vec<u8>, SweepError> {
    if parts.is_empty() {
        return Err(SweepError::Parts("give at least one part to merge".into()));
    }
    let mut columns: Option<(usize, Vec<String>)> = None;
    let mut points: Option<(usize, usize)> = None;
    let mut records = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let err = |message: String| SweepError::File {
            path: part.path.clone(),
            message,
        };
        let (cols, rows) = match format {
            Format::Csv => read_csv(&part.bytes).map_err(err)?,
            Format::Jsonl => read_jsonl(&part.bytes).map_err(err)?,
        };
        if let Some(cols) = cols {
            match &columns {
                None => columns = Some((i, cols)),
                Some((first, expected)) if *expected != cols => {
                    return Err(err(format!(
                        "its columns differ from those of {}:\n  {}\n  {}",
                        parts[*first].path.display(),
                        cols.join(","),
                        expected.join(",")
                    )));
                }
                Some(_) => {}
            }
        }
        for (line, point, total, encoded) in rows {
            match points {
                None => points = Some((i, total)),
                Some((first, expected)) if expected != total => {
                    return Err(err(format!(
                        "line {line} says the grid has {total} points, {} says {expected}; \
                         the parts come from different sweeps",
                        parts[first].path.display()
                    )));
                }
                Some(_) => {}
            }
            if point >= total {
                return Err(err(format!(
                    "line {line}: point {point} is outside a grid of {total} points"
                )));
            }
            records.push(Record {
                part: i,
                point,
                encoded,
            });
        }
    }
    let (Some((_, columns)), Some((_, total))) = (columns, points) else {
        return Err(SweepError::Parts(
            "no part has any row: there is nothing to merge".into(),
        ));
    };
    records.sort_by_key(|r| (r.point, r.part));
    for pair in records.windows(2) {
        if pair[0].point == pair[1].point {
            let (a, b) = (&parts[pair[0].part].path, &parts[pair[1].part].path);
            let place = if a == b {
                format!("twice in {}", a.display())
            } else {
                format!("in both {} and {}", a.display(), b.display())
            };
            return Err(SweepError::Parts(format!(
                "point {} appears {place}; was a part given twice or a shard run twice?",
                pair[0].point
            )));
        }
    }
    if records.len() < total {
        let have: Vec<usize> = records.iter().map(|r| r.point).collect();
        let missing: Vec<usize> = (0..total)
            .filter(|p| have.binary_search(p).is_err())
            .collect();
        let named: Vec<String> = missing.iter().take(NAMED).map(usize::to_string).collect();
        let more = missing.len().saturating_sub(NAMED);
        let rest = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return Err(SweepError::Parts(format!(
            "{} of {total} points are missing: {}{rest}; was a shard not run or its part not given?",
            missing.len(),
            named.join(", ")
        )));
    }
    let mut out = Vec::new();
    match format {
        Format::Csv => {
            let rows = records.into_iter().filter_map(|r| match r.encoded {
                Encoded::Csv(fields) => Some(fields),
                Encoded::Jsonl(_) => None,
            });
            write_csv(&columns, rows, &mut out).map_err(|e| SweepError::Parts(e.to_string()))?;
        }
        Format::Jsonl => {
            for r in records {
                if let Encoded::Jsonl(line) = r.encoded {
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
            }
        }
    }
    Ok(out)
}

/// A part's rows: (line, point, points, the row to write back).
type Rows = Vec<(usize, usize, usize, Encoded)>;

fn read_csv(bytes: &[u8]) -> Result<(Option<Vec<String>>, Rows), String> {
    let mut r = csv::ReaderBuilder::new().from_reader(bytes);
    let header: Vec<String> = r
        .headers()
        .map_err(|e| format!("not CSV: {e}"))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.is_empty() || header == [""] {
        return Ok((None, Vec::new()));
    }
    check_leading(&header)?;
    let mut rows = Vec::new();
    for record in r.records() {
        let record = record.map_err(|e| format!("not CSV: {e}"))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let fields: Vec<String> = record.iter().map(str::to_string).collect();
        let number = |i: usize| {
            fields[i].parse::<usize>().map_err(|_| {
                format!(
                    "line {line}: `{}` is `{}`, not a whole number",
                    LEADING[i], fields[i]
                )
            })
        };
        let (point, total) = (number(0)?, number(1)?);
        rows.push((line, point, total, Encoded::Csv(fields)));
    }
    Ok((Some(header), rows))
}

fn read_jsonl(bytes: &[u8]) -> Result<(Option<Vec<String>>, Rows), String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?;
    let mut columns: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let Ordered(fields) = serde_json::from_str(line)
            .map_err(|e| format!("line {n} is not one JSON object: {e}"))?;
        let keys: Vec<String> = fields.iter().map(|(k, _)| k.clone()).collect();
        match &columns {
            None => {
                check_leading(&keys).map_err(|e| format!("line {n}: {e}"))?;
                columns = Some(keys);
            }
            Some(c) if *c != keys => {
                return Err(format!("line {n} has other keys than line 1 of the part"));
            }
            Some(_) => {}
        }
        let number = |i: usize| {
            fields[i].1.as_u64().map(|x| x as usize).ok_or_else(|| {
                format!(
                    "line {n}: `{}` is {}, not a whole number",
                    LEADING[i], fields[i].1
                )
            })
        };
        rows.push((n, number(0)?, number(1)?, Encoded::Jsonl(line.to_string())));
    }
    Ok((columns, rows))
}

fn check_leading(columns: &[String]) -> Result<(), String> {
    if columns.len() < 2 || columns[..2] != LEADING {
        return Err(format!(
            "not the output of `clustersim sweep`: it must start with the columns {}, it starts \
             with {}",
            LEADING.join(","),
            columns
                .iter()
                .take(2)
                .cloned()
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    Ok(())
}

/// A JSON object's fields in the order they were written.
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    fields.push(entry);
                }
                Ok(Ordered(fields))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(name: &str, text: &str) -> Part {
        Part {
            path: PathBuf::from(name),
            bytes: text.as_bytes().to_vec(),
        }
    }

    const HEAD: &str = "point,points,k,status,error,m\n";

    #[test]
    fn csv_parts_sort_by_point() {
        let a = part("a.csv", &format!("{HEAD}0,3,1,ok,,\"x,y\"\n2,3,3,ok,,z\n"));
        let b = part("b.csv", &format!("{HEAD}1,3,2,error,\"bad, very\",\n"));
        let out = merge(&[b, a], Format::Csv).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{HEAD}0,3,1,ok,,\"x,y\"\n1,3,2,error,\"bad, very\",\n2,3,3,ok,,z\n")
        );
    }

    #[test]
    fn missing_duplicate_and_foreign_parts_are_refused() {
        let a = || part("a.csv", &format!("{HEAD}0,3,1,ok,,1\n"));
        let e = merge(&[a()], Format::Csv).unwrap_err().to_string();
        assert!(e.contains("2 of 3 points are missing: 1, 2"), "{e}");
        let e = merge(
            &[a(), part("b.csv", &format!("{HEAD}0,3,1,ok,,1\n"))],
            Format::Csv,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("point 0 appears in both a.csv and b.csv"), "{e}");
        let e = merge(
            &[a(), part("c.csv", "point,points,k,status,error\n")],
            Format::Csv,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("c.csv") && e.contains("columns differ"), "{e}");
        let e = merge(
            &[a(), part("d.csv", &format!("{HEAD}1,4,1,ok,,1\n"))],
            Format::Csv,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("d.csv") && e.contains("different sweeps"), "{e}");
        let e = merge(&[part("e.csv", "a,b\n1,2\n")], Format::Csv)
            .unwrap_err()
            .to_string();
        assert!(e.contains("e.csv") && e.contains("not the output"), "{e}");
    }

    #[test]
    fn jsonl_lines_are_kept_as_written() {
        let a = part("a.jsonl", "{\"point\":1,\"points\":2,\"z\":1.50}\n");
        let b = part("b.jsonl", "{\"point\":0,\"points\":2,\"z\":null}\n");
        let empty = part("c.jsonl", "");
        let out = merge(&[a, empty, b], Format::Jsonl).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"point\":0,\"points\":2,\"z\":null}\n{\"point\":1,\"points\":2,\"z\":1.50}\n"
        );
        let bad = part("d.jsonl", "{\"points\":2,\"point\":0}\n");
        let e = merge(&[bad], Format::Jsonl).unwrap_err().to_string();
        assert!(e.contains("d.jsonl") && e.contains("line 1"), "{e}");
    }
}
