//! `[capacity]`: the tokens a training run is to see, checked at its key.

use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;

/// Reads `[capacity] tokens` (a positive count).
pub fn tokens(s: &Scenario) -> Result<Option<f64>, ScenarioError> {
    let Some(c) = &s.file.capacity else {
        return Ok(None);
    };
    match c.tokens {
        Some(t) if t.is_finite() && t >= 1.0 => Ok(Some(t)),
        Some(t) => Err(s.error_at(
            "capacity.tokens",
            format!("`capacity.tokens` must be a count of 1 or more, not {t}"),
        )),
        None => Err(s
            .error_at("capacity", "[capacity] needs tokens")
            .with_help("the tokens to train on, e.g. tokens = 300e9")),
    }
}
