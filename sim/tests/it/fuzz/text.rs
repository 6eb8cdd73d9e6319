//! Mutation of a file as text, for the files that are rows of fields (request traces, length
//! lists, sweep parts) and for breaking any file's syntax: lines removed, repeated or swapped,
//! a field replaced by a value at or past its limits, a field dropped or added, the file cut
//! short, odd bytes put in (a byte-order mark, a carriage return, a NUL, quotes), line ends
//! made CRLF. Fields are split on `sep`. The viewer's tests include this file by path, so it
//! uses nothing of the `it` binary.

use proptest::prelude::*;

/// A field put in place of another.
const FIELDS: [&str; 22] = [
    "",
    "0",
    "-1",
    "1",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "1e309",
    "-1e-300",
    "NaN",
    "inf",
    "0.5",
    "true",
    "null",
    "\"\"",
    "\"a,b\"",
    "2023-11-16 18:15:46.6805900",
    "2023-13-45 99:99:99",
    "ok",
    "error",
    "point",
    "é✓",
];

/// Bytes put in at some place.
const BYTES: [&str; 8] = ["\u{feff}", "\r", "\0", "\"", ",", "\n", "{", "\t"];

/// One change to a text; `line`, `field` and `at` pick the place modulo what there is.
#[derive(Clone, Debug)]
pub enum Edit {
    RemoveLine {
        line: usize,
    },
    RepeatLine {
        line: usize,
    },
    SwapLines {
        line: usize,
        other: usize,
    },
    ReplaceField {
        line: usize,
        field: usize,
        with: &'static str,
    },
    DropField {
        line: usize,
        field: usize,
    },
    AddField {
        line: usize,
        with: &'static str,
    },
    Cut {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: &'static str,
    },
    Crlf,
}

pub fn edit() -> impl Strategy<Value = Edit> {
    let n = any::<usize>;
    let field = || prop::sample::select(FIELDS.to_vec());
    prop_oneof![
        2 => n().prop_map(|line| Edit::RemoveLine { line }),
        2 => n().prop_map(|line| Edit::RepeatLine { line }),
        1 => (n(), n()).prop_map(|(line, other)| Edit::SwapLines { line, other }),
        5 => (n(), n(), field())
            .prop_map(|(line, field, with)| Edit::ReplaceField { line, field, with }),
        2 => (n(), n()).prop_map(|(line, field)| Edit::DropField { line, field }),
        1 => (n(), field()).prop_map(|(line, with)| Edit::AddField { line, with }),
        1 => n().prop_map(|at| Edit::Cut { at }),
        1 => (n(), prop::sample::select(BYTES.to_vec()))
            .prop_map(|(at, bytes)| Edit::Insert { at, bytes }),
        1 => Just(Edit::Crlf),
    ]
}

/// `text` with `e` applied, fields split on `sep`.
pub fn apply(text: &str, e: &Edit, sep: char) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let ended = text.ends_with('\n');
    let count = lines.len().max(1);
    let fields = |l: &str| -> Vec<String> { l.split(sep).map(str::to_string).collect() };
    let join = |f: Vec<String>| f.join(&sep.to_string());
    match e {
        Edit::RemoveLine { line } if !lines.is_empty() => {
            lines.remove(line % count);
        }
        Edit::RepeatLine { line } if !lines.is_empty() => {
            let l = lines[line % count].clone();
            lines.insert(line % count, l);
        }
        Edit::SwapLines { line, other } if !lines.is_empty() => {
            lines.swap(line % count, other % count)
        }
        Edit::ReplaceField { line, field, with } if !lines.is_empty() => {
            let mut f = fields(&lines[line % count]);
            let n = f.len();
            f[field % n] = with.to_string();
            lines[line % count] = join(f);
        }
        Edit::DropField { line, field } if !lines.is_empty() => {
            let mut f = fields(&lines[line % count]);
            let n = f.len();
            f.remove(field % n);
            lines[line % count] = join(f);
        }
        Edit::AddField { line, with } if !lines.is_empty() => {
            let mut f = fields(&lines[line % count]);
            f.push(with.to_string());
            lines[line % count] = join(f);
        }
        Edit::Cut { at } => return cut(text, at % (text.len() + 1)).to_string(),
        Edit::Insert { at, bytes } => {
            let head = cut(text, at % (text.len() + 1));
            return format!("{head}{bytes}{}", &text[head.len()..]);
        }
        Edit::Crlf => return text.replace('\n', "\r\n"),
        _ => {}
    }
    let mut out = lines.join("\n");
    if ended {
        out.push('\n');
    }
    out
}

/// `text` up to the character boundary at or before byte `at`.
fn cut(text: &str, mut at: usize) -> &str {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}
