//! Plain-text tables for the listings this tool prints: left-aligned columns as wide as their
//! widest cell (counted in characters), two spaces between columns, no trailing blanks.
//!
//! Deliberately ignored: terminal width, wrapping, and right-aligned numbers.

use std::fmt::Write as _;

/// Appends `header` and `rows` to `out`, each line starting with `indent`.
pub fn write_table<const N: usize>(
    out: &mut String,
    indent: &str,
    header: [&str; N],
    rows: &[[String; N]],
) {
    let header = header.map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{indent}{}", cells.join("  ").trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_take_the_widest_cell() {
        let mut out = String::new();
        let rows = [
            ["a100".to_string(), "1".to_string()],
            ["h".to_string(), "".to_string()],
        ];
        write_table(&mut out, "  ", ["GPU", "points"], &rows);
        assert_eq!(out, "  GPU   points\n  a100  1\n  h\n");
    }
}
