//! One candidate of a serving or diffusion plan: the scenario as written plus `--set` options,
//! read by the scenario loader and simulated by [`crate::run`] exactly as `clustersim run`
//! would with those options, so the planner repeats none of the set-up's checks. What the
//! loader or the set-up refuses is an invalid candidate, counted by reason.
//!
//! Candidates run in parallel on rayon's pool; each simulation is single-threaded and
//! deterministic, and results come back in the candidates' order, so a plan's bytes depend on
//! neither the thread count nor the scheduling.
//!
//! Deliberately ignored: the cost of reading the scenario's text once per candidate (a
//! millisecond against a simulation's tens of milliseconds).

use crate::scenario::Scenario;
use crate::scenario::error::ScenarioError;
use rayon::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A configuration to try: its words, the options that make it, and the GPUs it uses.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// In the words of the workload's users ("4 x TP2", "Ulysses 4 x Ring 2").
    pub layout: String,
    /// The `--set` options that give the scenario this configuration.
    pub sets: Vec<String>,
    pub gpus: u32,
}

/// What running a candidate gave.
pub enum Outcome {
    /// Refused by the loader or the workload's set-up: the reason (see [`reason`]).
    Invalid(String),
    /// The report.
    Ran(Value),
}

/// The options `scenario` was loaded with (the user's `--set`s), which every candidate keeps.
pub fn base_sets(scenario: &Scenario) -> Vec<String> {
    scenario
        .source
        .overrides
        .iter()
        .map(|o| o.option.clone())
        .collect()
}

/// Loads and runs `scenario` with its own options and then `sets` (later options win).
pub fn run_one(scenario: &Scenario, sets: &[String]) -> Result<Value, ScenarioError> {
    let mut all = base_sets(scenario);
    all.extend(sets.iter().cloned());
    let s = Scenario::parse(&scenario.source.path, scenario.source.text.clone(), &all)?;
    crate::run(&s).map(|o| o.report)
}

/// Runs every candidate in parallel; outcomes in the candidates' order. A panic of the
/// simulator (a bug) is caught and counted as an invalid candidate that names it, so that one
/// configuration cannot end a plan.
pub fn run_all(scenario: &Scenario, candidates: &[Candidate]) -> Vec<Outcome> {
    candidates
        .par_iter()
        .map(
            |c| match catch_unwind(AssertUnwindSafe(|| run_one(scenario, &c.sets))) {
                Ok(Ok(report)) => Outcome::Ran(report),
                Ok(Err(e)) => Outcome::Invalid(reason(&e)),
                Err(_) => {
                    Outcome::Invalid("the simulator panicked (a bug; please report it)".into())
                }
            },
        )
        .collect()
}

/// The reason an error gives, for counting: its message's first line with every number written
/// `N`, so that "tp x ulysses = 16 does not divide 24 heads" and "... = 48 ..." count together.
pub fn reason(e: &ScenarioError) -> String {
    let first = e.message.lines().next().unwrap_or("");
    first
        .split(' ')
        .map(|word| {
            let core = word.trim_end_matches([',', ';', ':', ')', '.']);
            let is_number = !core.is_empty()
                && core.chars().all(|c| c.is_ascii_digit() || c == '.')
                && core.chars().any(|c| c.is_ascii_digit());
            if is_number {
                format!("N{}", &word[core.len()..])
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// How the candidates of a plan were accounted for.
#[derive(Default, Debug)]
pub struct Tally {
    pub considered: usize,
    pub invalid: BTreeMap<String, usize>,
    pub does_not_fit: BTreeMap<String, usize>,
    pub ranked: usize,
    /// Full simulations run (a candidate that does not fit is found so by its simulation's
    /// set-up, which stops at time zero).
    pub simulated: usize,
}

impl Tally {
    /// The plan's `candidates` object (the training plan's shape, with reasons for not fitting).
    pub fn json(&self) -> Value {
        json!({
            "considered": self.considered,
            "pruned": {
                "invalid": self.invalid.values().sum::<usize>(),
                "invalid_by_reason": self.invalid,
                "does_not_fit": self.does_not_fit.values().sum::<usize>(),
                "does_not_fit_by_reason": self.does_not_fit,
            },
            "ranked": self.ranked,
            "simulated": self.simulated,
        })
    }
}

/// The space's candidates, each `item` with its simulation's `outcome`, tallied: those that ran
/// and fit (`unfit` says why one does not) made into `entry`s in the space's order.
pub(super) fn rank<I, R>(
    considered: usize,
    runs: impl IntoIterator<Item = (I, Outcome)>,
    unfit: impl Fn(&Value) -> Option<&'static str>,
    entry: impl Fn(I, Value) -> R,
) -> (Vec<R>, Tally) {
    let mut tally = Tally {
        considered,
        ..Tally::default()
    };
    let mut ranked = Vec::new();
    for (item, outcome) in runs {
        match outcome {
            Outcome::Invalid(why) => *tally.invalid.entry(why).or_default() += 1,
            Outcome::Ran(report) => {
                tally.simulated += 1;
                match unfit(&report) {
                    Some(why) => *tally.does_not_fit.entry(why.to_string()).or_default() += 1,
                    None => ranked.push(entry(item, report)),
                }
            }
        }
    }
    tally.ranked = ranked.len();
    (ranked, tally)
}

/// The candidates that meet `keep`, best first by `order`, and the first `n` of them as the
/// plan's `top` rows (ranked from 1).
pub fn best<R>(
    ranked: &[R],
    keep: impl Fn(&R) -> bool,
    order: impl Fn(&R, &R) -> std::cmp::Ordering,
    n: usize,
    row: impl Fn(&R, usize) -> Value,
) -> (Vec<&R>, Vec<Value>) {
    let mut best: Vec<&R> = ranked.iter().filter(|r| keep(r)).collect();
    best.sort_by(|a, b| order(a, b));
    let top = best
        .iter()
        .take(n)
        .enumerate()
        .map(|(i, r)| row(r, i + 1))
        .collect();
    (best, top)
}

/// The divisors of `n`, ascending.
pub fn divisors(n: u32) -> Vec<u32> {
    (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn reasons_group_errors_that_differ_only_in_numbers() {
        let e = |m: &str| ScenarioError::whole(Path::new("s.toml"), m);
        assert_eq!(
            reason(&e(
                "Wan has 40 attention heads, which tp x ulysses = 16 does not divide"
            )),
            "Wan has N attention heads, which tp x ulysses = N does not divide"
        );
        assert_eq!(
            reason(&e("pipefusion = 32 stages but X has 30 blocks.\nmore")),
            "pipefusion = N stages but X has N blocks."
        );
        // Names with digits stay as they are.
        assert_eq!(
            reason(&e("H100 has no fp4 arithmetic")),
            "H100 has no fp4 arithmetic"
        );
    }

    #[test]
    fn divisors_ascend() {
        assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(1), vec![1]);
    }
}
