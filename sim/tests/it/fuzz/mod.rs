//! The fuzzer (docs/FUZZ.md): mutants of scenario files (`scenarios`) and of the files beside
//! them (`files`: Hugging Face configs, calibration profiles, request traces, length lists,
//! sweep parts for `merge`, validation files), made by `mutation` (a TOML or JSON tree) and
//! `text` (lines and fields). Each mutant runs in a thread of its own; it may succeed or be
//! refused with an error that says what is wrong. A panic, or a run over `LIMIT`, is a finding,
//! printed as the file that reproduces it; findings kept in `sim/tests/fuzz/` run every time.
//! CI runs a fixed number of mutants from a fixed seed; the `long` tests take `FUZZ_MINUTES`,
//! `FUZZ_CASES` and `FUZZ_SEED`; `FUZZ_VERBOSE` prints why each refused mutant was refused.

pub mod mutation;
pub mod text;

mod files;
mod scenarios;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A run longer than this is a hang: 10 s in a release build, 60 s in a debug one (about ten
/// times slower).
pub const LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 60 } else { 10 });

/// What running a mutant came to.
pub enum Outcome {
    Ran,
    /// Refused, with the error's message.
    Refused(String),
    Panicked(String),
    Hung,
}

/// Runs `f` in a thread of its own: `Ok` ran, `Err` was refused (with a message that must say
/// something), a panic or a run over `LIMIT` is a finding.
pub fn contained(f: impl FnOnce() -> Result<(), String> + Send + 'static) -> Outcome {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(match result {
            Ok(Ok(())) => Outcome::Ran,
            Ok(Err(message)) if message.trim().is_empty() => {
                Outcome::Panicked("refused with an empty message".into())
            }
            Ok(Err(message)) => Outcome::Refused(message),
            Err(p) => Outcome::Panicked(clustersim::panic_message(&*p, "")),
        });
    });
    rx.recv_timeout(LIMIT).unwrap_or(Outcome::Hung)
}

/// How much a run does: `cases` mutants from `seed`, or as many as `minutes` allow.
pub struct Budget {
    pub cases: u32,
    pub seed: u64,
    pub minutes: Option<u64>,
}

impl Budget {
    /// A long run's budget from `FUZZ_CASES`, `FUZZ_SEED` and `FUZZ_MINUTES` (2,000 mutants
    /// from seed 1 when none is set).
    pub fn from_env() -> Budget {
        let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        let minutes = var("FUZZ_MINUTES");
        let cases = var("FUZZ_CASES").unwrap_or(if minutes.is_some() {
            u32::MAX.into()
        } else {
            2000
        });
        Budget {
            cases: cases.min(u32::MAX.into()) as u32,
            seed: var("FUZZ_SEED").unwrap_or(1),
            minutes,
        }
    }
}

/// Draws values of `strategy` and gives each to `trial`, which says what it came to and how to
/// reproduce it. Stops at the first hang (its thread cannot be stopped and would slow every
/// run after it); panics listing the findings.
pub fn campaign<S: Strategy>(
    what: &str,
    budget: &Budget,
    strategy: S,
    mut trial: impl FnMut(S::Value) -> (Outcome, String),
) {
    let started = Instant::now();
    let deadline = budget
        .minutes
        .map(|m| started + Duration::from_secs(60 * m));
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&budget.seed.to_le_bytes());
    let config = Config {
        cases: budget.cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let (mut ran, mut refused) = (0, 0);
    let verbose = std::env::var_os("FUZZ_VERBOSE").is_some();
    let mut findings = Vec::new();
    for _ in 0..budget.cases {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let value = strategy.new_tree(&mut runner).unwrap().current();
        let (outcome, reproducer) = trial(value);
        let hung = matches!(outcome, Outcome::Hung);
        let why = match outcome {
            Outcome::Ran => {
                ran += 1;
                continue;
            }
            Outcome::Refused(message) => {
                if verbose {
                    eprintln!("refused: {}", message.lines().next().unwrap_or(""));
                }
                refused += 1;
                continue;
            }
            Outcome::Panicked(why) => format!("panicked: {}", why.replace('\n', " ")),
            Outcome::Hung => format!("ran over {LIMIT:?}"),
        };
        eprintln!("fuzz finding ({what}):\n# {why}\n{reproducer}\n");
        findings.push(format!("# {why}\n{reproducer}"));
        if hung {
            break;
        }
    }
    eprintln!(
        "fuzz {what}: {} mutants from seed {} in {:.0} s: {ran} ran, {refused} refused, {} findings",
        ran + refused + findings.len(),
        budget.seed,
        started.elapsed().as_secs_f64(),
        findings.len()
    );
    assert!(findings.is_empty(), "{}", findings.join("\n\n"));
}
