//! The grid of a sweep: `--vary KEY=V1,V2,...` axes and their cartesian product.
//!
//! Points are numbered `0..len` with the first axis varying slowest (like nested loops written
//! in the order of the flags), so a point's number says which value of each axis it takes. A
//! value is the text handed to `--set KEY=VALUE` as it is: this module only splits and counts,
//! it never reads values (the scenario loader does).
//!
//! Values split on commas that stand outside quotes and brackets, so a TOML array or a quoted
//! string keeps its commas: `--vary 'serving.x=[1,2],[3,4]'` has two values, and
//! `--vary 'name="a,b",c'` has `"a,b"` and `c`. Deliberately ignored: escapes inside quotes
//! beyond `\"`, and any meaning of the values.

use super::SweepError;

/// One `--vary` flag: a dotted scenario key and the values it takes, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

impl Axis {
    /// Reads `KEY=V1,V2,...`. Refuses a missing `=`, an empty key, an empty value and a value
    /// given twice (it would make two identical points).
    pub fn parse(option: &str) -> Result<Axis, SweepError> {
        let bad = |why: String| {
            SweepError::Flag(format!(
                "--vary {option}: {why}; write --vary KEY=V1,V2,... with a dotted scenario key, \
                 e.g. --vary parallel.tp=1,2,4"
            ))
        };
        let Some((key, list)) = option.split_once('=') else {
            return Err(bad("missing `=`".into()));
        };
        let key = key.trim();
        if key.is_empty() || key.split('.').any(|p| p.trim().is_empty()) {
            return Err(bad(format!("`{key}` is not a dotted key")));
        }
        if list.trim().is_empty() {
            return Err(bad("no values".into()));
        }
        let values = split_values(list).map_err(bad)?;
        for (i, v) in values.iter().enumerate() {
            if v.is_empty() {
                return Err(bad(format!("value {} is empty", i + 1)));
            }
            if values[..i].contains(v) {
                return Err(bad(format!("the value `{v}` is given twice")));
            }
        }
        Ok(Axis {
            key: key.to_string(),
            values,
        })
    }
}

/// Splits on commas outside quotes and brackets; trims each value.
fn split_values(list: &str) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in list.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '[' | '{' => depth += 1,
                ']' | '}' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| format!("`{c}` closes nothing"))?
                }
                ',' if depth == 0 => {
                    values.push(current.trim().to_string());
                    current.clear();
                    continue;
                }
                _ => {}
            },
        }
        current.push(c);
    }
    if let Some(q) = quote {
        return Err(format!("the quote {q} is not closed"));
    }
    if depth > 0 {
        return Err("a bracket is not closed".into());
    }
    values.push(current.trim().to_string());
    Ok(values)
}

/// The cartesian product of the axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    axes: Vec<Axis>,
    len: usize,
}

impl Grid {
    /// Refuses a key varied twice and a grid too large to number.
    pub fn new(axes: Vec<Axis>) -> Result<Grid, SweepError> {
        for (i, a) in axes.iter().enumerate() {
            if axes[..i].iter().any(|b| b.key == a.key) {
                return Err(SweepError::Flag(format!(
                    "--vary {}: the key is varied twice; give all its values in one --vary",
                    a.key
                )));
            }
        }
        let len = axes
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
            .ok_or_else(|| SweepError::Flag("the --vary grid has too many points".into()))?;
        Ok(Grid { axes, len })
    }

    /// How many points the grid has (1 with no axes).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a grid has at least one point.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The value each axis takes at `point` (the first axis varies slowest).
    pub fn values(&self, point: usize) -> Vec<&str> {
        assert!(
            point < self.len,
            "point {point} of a {}-point grid",
            self.len
        );
        let mut rest = point;
        let mut out = vec![""; self.axes.len()];
        for (slot, axis) in out.iter_mut().zip(&self.axes).rev() {
            let n = axis.values.len();
            *slot = &axis.values[rest % n];
            rest /= n;
        }
        out
    }

    /// The `--set KEY=VALUE` options that select `point`.
    pub fn sets(&self, point: usize) -> Vec<String> {
        self.axes
            .iter()
            .zip(self.values(point))
            .map(|(a, v)| format!("{}={v}", a.key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(s: &str) -> Axis {
        Axis::parse(s).unwrap()
    }

    #[test]
    fn values_split_on_top_level_commas() {
        assert_eq!(axis("parallel.tp=1, 2,4").values, ["1", "2", "4"]);
        assert_eq!(axis("a.b=[1,2],[3,4]").values, ["[1,2]", "[3,4]"]);
        assert_eq!(axis(r#"a="x,y",z"#).values, [r#""x,y""#, "z"]);
        assert_eq!(axis("a='x,y'").values, ["'x,y'"]);
        assert_eq!(
            axis("a.b=200 Gb/s,400 Gb/s").values,
            ["200 Gb/s", "400 Gb/s"]
        );
    }

    #[test]
    fn bad_flags_say_what_is_wrong() {
        let why = |s: &str| Axis::parse(s).unwrap_err().to_string();
        assert!(
            why("parallel.tp").contains("missing `=`"),
            "{}",
            why("parallel.tp")
        );
        assert!(why("parallel.tp=").contains("no values"));
        assert!(why("parallel.tp=1,,2").contains("value 2 is empty"));
        assert!(why("parallel.tp=1,1").contains("given twice"));
        assert!(why("=1").contains("not a dotted key"));
        assert!(why("a..b=1").contains("not a dotted key"));
        assert!(why("a=[1,2").contains("bracket"));
        assert!(why("a=\"x").contains("quote"));
    }

    #[test]
    fn the_first_axis_varies_slowest() {
        let g = Grid::new(vec![axis("a=1,2"), axis("b=x,y,z")]).unwrap();
        assert_eq!(g.len(), 6);
        let all: Vec<Vec<&str>> = (0..6).map(|p| g.values(p)).collect();
        assert_eq!(
            all,
            [
                ["1", "x"],
                ["1", "y"],
                ["1", "z"],
                ["2", "x"],
                ["2", "y"],
                ["2", "z"]
            ]
        );
        assert_eq!(g.sets(4), ["a=2", "b=y"]);
    }

    #[test]
    fn a_key_varied_twice_is_refused() {
        let e = Grid::new(vec![axis("a=1"), axis("a=2")]).unwrap_err();
        assert!(e.to_string().contains("varied twice"), "{e}");
    }
}
