//! "Did you mean": the closest of a set of valid names to what was typed.

/// The candidate most like `typed`, when one is close enough to be a plausible typo.
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(typed, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn near_names_are_suggested_far_ones_are_not() {
        let keys = ["tp", "pp", "dp", "micro_batch", "global_batch"];
        assert_eq!(closest("micro_bacth", keys), Some("micro_batch"));
        assert_eq!(closest("globalbatch", keys), Some("global_batch"));
        assert_eq!(closest("zzzzzz", keys), None);
    }
}
