//! `--shard I/N`: which points of a grid one process runs.
//!
//! Shard `I` of `N` (0-based, `0 <= I < N`, so `I` is a Slurm array task id or a Kubernetes
//! completion index as it is) takes the points whose number is `I` modulo `N`. Round-robin
//! rather than contiguous blocks, so that expensive corners of a grid (the last values of the
//! first axis, say) spread over the shards. Deterministic: it depends on nothing but the grid.

use super::SweepError;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The whole grid: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Reads `I/N`.
    pub fn parse(text: &str) -> Result<Shard, SweepError> {
        let bad = |why: &str| {
            SweepError::Flag(format!(
                "--shard {text}: {why}; write --shard I/N with 0 <= I < N, e.g. --shard 0/4 .. \
                 --shard 3/4 (I is 0-based, like SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)"
            ))
        };
        let (i, n) = text.split_once('/').ok_or_else(|| bad("missing `/`"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| bad(&format!("`{i}` is not a whole number")))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| bad(&format!("`{n}` is not a whole number")))?;
        if count == 0 {
            return Err(bad("the count must be at least 1"));
        }
        if index >= count {
            return Err(bad(&format!(
                "the index {index} must be below the count {count}"
            )));
        }
        Ok(Shard { index, count })
    }

    /// Whether this shard runs `point`.
    pub fn contains(self, point: usize) -> bool {
        point % self.count == self.index
    }

    /// The points of a `total`-point grid this shard runs, in order.
    pub fn points(self, total: usize) -> impl Iterator<Item = usize> {
        (self.index..total).step_by(self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_points() {
        let total = 10;
        let mut seen = vec![0; total];
        for i in 0..4 {
            let s = Shard::parse(&format!("{i}/4")).unwrap();
            for p in s.points(total) {
                assert!(s.contains(p));
                seen[p] += 1;
            }
        }
        assert_eq!(seen, vec![1; total]);
        assert_eq!(
            Shard::parse("1/4").unwrap().points(10).collect::<Vec<_>>(),
            [1, 5, 9]
        );
        assert_eq!(Shard::parse("7/8").unwrap().points(3).count(), 0);
    }

    #[test]
    fn bad_shards_are_refused() {
        for (text, why) in [
            ("4/4", "below the count"),
            ("1/0", "at least 1"),
            ("1", "missing `/`"),
            ("a/2", "`a` is not"),
            ("-1/2", "`-1` is not"),
        ] {
            let e = Shard::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
