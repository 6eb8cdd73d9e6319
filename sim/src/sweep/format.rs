//! The two files a sweep writes: CSV and JSON Lines, chosen by the output's extension.
//!
//! CSV: a header of column names, then one record per row; fields quoted as RFC 4180 says
//! (only where needed: commas, quotes, line breaks), `\n` line ends; an empty cell where a value
//! is absent; numbers as serde_json prints them (shortest round-trip form), booleans as
//! `true`/`false`, objects and arrays as compact JSON.
//! JSON Lines: one object per row, keys in column order, `null` where a value is absent.
//!
//! Both encoders are the only ones: `merge` writes through [`write_csv`] and keeps JSON lines
//! as written, so a merged file has the bytes the unsharded sweep would have written.

use super::SweepError;
use super::row::Table;
use serde_json::Value;
use std::io::{self, Write};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    /// The format a file's extension names: `.csv` or `.jsonl`.
    pub fn of_path(path: &Path) -> Result<Format, SweepError> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Ok(Format::Csv),
            Some(e) if e.eq_ignore_ascii_case("jsonl") => Ok(Format::Jsonl),
            _ => Err(SweepError::File {
                path: path.to_path_buf(),
                message: "the file must end in .csv (CSV) or .jsonl (JSON Lines)".into(),
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "CSV",
            Format::Jsonl => "JSON Lines",
        }
    }
}

/// Writes a table in `format`.
pub fn write(table: &Table, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::Csv => write_csv(
            &table.columns,
            table
                .rows
                .iter()
                .map(|r| r.cells.iter().map(csv_cell).collect::<Vec<_>>()),
            out,
        ),
        Format::Jsonl => {
            for row in &table.rows {
                writeln!(out, "{}", jsonl_line(&table.columns, &row.cells))?;
            }
            Ok(())
        }
    }
}

/// Writes a CSV header and records (already turned into text).
pub fn write_csv<R: AsRef<[String]>>(
    columns: &[String],
    records: impl IntoIterator<Item = R>,
    out: &mut impl Write,
) -> io::Result<()> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out);
    w.write_record(columns)?;
    for r in records {
        w.write_record(r.as_ref())?;
    }
    w.flush()
}

/// A cell's CSV text.
pub fn csv_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One JSON Lines object, keys in column order (serde_json's map would sort them).
pub fn jsonl_line(columns: &[String], cells: &[Value]) -> String {
    let fields: Vec<String> = columns
        .iter()
        .zip(cells)
        .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
        .collect();
    format!("{{{}}}", fields.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::row::Row;
    use serde_json::json;

    fn table() -> Table {
        Table {
            columns: vec![
                "point".into(),
                "points".into(),
                "a".into(),
                "status".into(),
                "error".into(),
                "m".into(),
            ],
            rows: vec![
                Row::ok(0, 2, &["x,y"], vec![Some(json!(1.5))]),
                Row::failed(1, 2, &["2"], "bad \"quote\"", 1),
            ],
        }
    }

    #[test]
    fn csv_quotes_as_rfc_4180_says() {
        let mut out = Vec::new();
        write(&table(), Format::Csv, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "point,points,a,status,error,m\n0,2,\"x,y\",ok,,1.5\n1,2,2,error,\"bad \"\"quote\"\"\",\n"
        );
    }

    #[test]
    fn jsonl_keeps_column_order() {
        let mut out = Vec::new();
        write(&table(), Format::Jsonl, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            r#"{"point":0,"points":2,"a":"x,y","status":"ok","error":"","m":1.5}"#
        );
        assert!(text.lines().nth(1).unwrap().ends_with(r#""m":null}"#));
    }

    #[test]
    fn formats_come_from_extensions() {
        assert_eq!(Format::of_path(Path::new("a/b.csv")).unwrap(), Format::Csv);
        assert_eq!(
            Format::of_path(Path::new("b.JSONL")).unwrap(),
            Format::Jsonl
        );
        let e = Format::of_path(Path::new("b.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.json") && e.contains(".jsonl"), "{e}");
    }
}
