//! Serving traffic: arrival processes, length distributions and trace replay from `[workload]`.

use clustersim::engine::SimTime;
use clustersim::scenario::lower::traffic::{Request, TrafficError, generate, generate_with_notes};
use clustersim::scenario::serving::WorkloadSection;
use std::path::{Path, PathBuf};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces")
}

fn workload(toml_text: &str) -> WorkloadSection {
    toml::from_str(toml_text).unwrap_or_else(|e| panic!("bad test workload: {e}"))
}

fn run(toml_text: &str) -> Vec<Request> {
    generate(&workload(toml_text), 1, Some(&traces())).unwrap_or_else(|e| panic!("{e}"))
}

fn notes(toml_text: &str) -> Vec<String> {
    generate_with_notes(&workload(toml_text), 1, Some(&traces()))
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

fn error(toml_text: &str) -> TrafficError {
    match generate(&workload(toml_text), 1, Some(&traces())) {
        Ok(r) => panic!("expected an error, got {} requests", r.len()),
        Err(e) => e,
    }
}

fn gaps(requests: &[Request]) -> Vec<f64> {
    requests
        .windows(2)
        .map(|p| (p[1].arrival - p[0].arrival).as_secs_f64())
        .collect()
}

fn mean_and_cv(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt() / mean)
}

fn lengths(requests: &[Request], f: fn(&Request) -> u32) -> Vec<f64> {
    requests.iter().map(|r| f(r) as f64).collect()
}

#[test]
fn offline_requests_all_arrive_at_zero() {
    let r = run("requests = 50\narrival = \"offline\"\nprompt_tokens = 512\noutput_tokens = 128");
    assert_eq!(r.len(), 50);
    for (i, q) in r.iter().enumerate() {
        assert_eq!(q.id, i as u32);
        assert_eq!(q.arrival, SimTime::ZERO);
        assert_eq!((q.prompt_tokens, q.output_tokens), (512, 128));
    }
}

#[test]
fn poisson_gaps_average_one_over_the_rate() {
    let r = run(
        "requests = 100001\narrival = \"poisson\"\nrate = \"8/s\"\nprompt_tokens = 1\noutput_tokens = 1",
    );
    assert_eq!(r[0].arrival, SimTime::ZERO);
    let (mean, cv) = mean_and_cv(&gaps(&r));
    assert!(
        (mean * 8.0 - 1.0).abs() < 0.02,
        "mean gap {mean} s, want 0.125 s"
    );
    assert!((cv - 1.0).abs() < 0.02, "Poisson gaps have cv 1, got {cv}");
    assert!(
        r.windows(2)
            .all(|p| p[0].arrival <= p[1].arrival && p[0].id + 1 == p[1].id)
    );
}

#[test]
fn gamma_gaps_have_the_rate_and_cv_asked_for() {
    for cv_wanted in [0.5, 1.0, 2.0, 4.0] {
        let r = run(&format!(
            "requests = 100001\narrival = \"gamma\"\nrate = \"20/s\"\ncv = {cv_wanted}\n\
             prompt_tokens = 1\noutput_tokens = 1"
        ));
        let (mean, cv) = mean_and_cv(&gaps(&r));
        // The sample mean's relative standard error is cv/sqrt(n): 1.3% at cv 4; allow 4 of them.
        let tolerance = (4.0 * cv_wanted / 100_000f64.sqrt()).max(0.02);
        assert!(
            (mean * 20.0 - 1.0).abs() < tolerance,
            "cv {cv_wanted}: mean gap {mean} s"
        );
        assert!(
            (cv / cv_wanted - 1.0).abs() < 0.05,
            "cv {cv} for {cv_wanted}"
        );
    }
}

#[test]
fn lognormal_lengths_have_the_mean_asked_for() {
    let r = run("requests = 100000\narrival = \"offline\"\n\
         prompt_tokens = { dist = \"lognormal\", mean = 1000, sigma = 1.0 }\n\
         output_tokens = { dist = \"lognormal\", mean = 200, sigma = 0.5 }");
    let (mean, _) = mean_and_cv(&lengths(&r, |q| q.prompt_tokens));
    assert!((mean / 1000.0 - 1.0).abs() < 0.02, "prompt mean {mean}");
    let (mean, cv) = mean_and_cv(&lengths(&r, |q| q.output_tokens));
    assert!((mean / 200.0 - 1.0).abs() < 0.02, "output mean {mean}");
    // A lognormal's cv is sqrt(e^(sigma^2) - 1): 0.533 for sigma 0.5.
    assert!((cv / 0.5329 - 1.0).abs() < 0.05, "output cv {cv}");
    assert!(
        r.iter()
            .all(|q| q.prompt_tokens >= 1 && q.output_tokens >= 1)
    );
}

#[test]
fn lognormal_lengths_are_clamped_to_min_and_max() {
    let r = run("requests = 20000\narrival = \"offline\"\n\
         prompt_tokens = { dist = \"lognormal\", mean = 1000, sigma = 1.5, min = 16, max = 2048 }\n\
         output_tokens = { dist = \"lognormal\", mean = 2, sigma = 2.0 }");
    let p = lengths(&r, |q| q.prompt_tokens);
    assert!(p.iter().all(|&v| (16.0..=2048.0).contains(&v)));
    assert!(p.contains(&2048.0) && p.contains(&16.0), "both clamps bite");
    assert!(r.iter().all(|q| q.output_tokens >= 1), "at least one token");
}

#[test]
fn uniform_lengths_cover_their_inclusive_bounds() {
    let r = run("requests = 20000\narrival = \"offline\"\n\
         prompt_tokens = { dist = \"uniform\", min = 10, max = 20 }\noutput_tokens = 7");
    let p = lengths(&r, |q| q.prompt_tokens);
    assert!(p.iter().all(|&v| (10.0..=20.0).contains(&v)));
    for v in 10..=20 {
        assert!(p.contains(&(v as f64)), "{v} never drawn");
    }
    let (mean, _) = mean_and_cv(&p);
    assert!((mean - 15.0).abs() < 0.1, "mean {mean}");
    assert!(r.iter().all(|q| q.output_tokens == 7));
}

#[test]
fn empirical_lengths_come_from_the_file() {
    let r = run("requests = 3000\narrival = \"offline\"\n\
         prompt_tokens = { dist = \"empirical\", file = \"lengths.txt\" }\n\
         output_tokens = { dist = \"empirical\", file = \"lengths.txt\", max = 50 }");
    let p = lengths(&r, |q| q.prompt_tokens);
    for v in [17.0, 42.0, 99.0] {
        let share = p.iter().filter(|&&x| x == v).count() as f64 / p.len() as f64;
        assert!(
            (share - 1.0 / 3.0).abs() < 0.04,
            "{v} drawn {share} of the time"
        );
    }
    assert!(p.iter().all(|v| [17.0, 42.0, 99.0].contains(v)));
    assert!(r.iter().all(|q| [17, 42, 50].contains(&q.output_tokens)));
}

#[test]
fn azure_traces_replay_relative_to_their_first_row() {
    let r = run("arrival = \"trace\"\ntrace = \"azure.csv\"");
    assert_eq!(r.len(), 6);
    let at: Vec<u64> = r.iter().map(|q| q.arrival.as_ps()).collect();
    assert_eq!(
        at,
        [
            0,
            4_314_579_000_000,
            4_567_510_000_000,
            5_119_410_000_000,
            6_319_410_000_000,
            14_442_866_700_000
        ]
    );
    assert_eq!(
        r.iter()
            .map(|q| (q.prompt_tokens, q.output_tokens))
            .collect::<Vec<_>>(),
        [
            (374, 44),
            (396, 109),
            (879, 15),
            (91, 1),
            (1524, 322),
            (4021, 7)
        ],
        "a zero output is raised to one token"
    );
    let n = notes("arrival = \"trace\"\ntrace = \"azure.csv\"");
    assert!(n.iter().any(|s| s.contains("1 zero")), "{n:?}");
}

#[test]
fn simple_traces_skip_blank_lines_and_extra_columns() {
    let r = run("arrival = \"trace\"\ntrace = \"simple.csv\"");
    let got: Vec<(u32, f64, u32, u32)> = r
        .iter()
        .map(|q| {
            (
                q.id,
                q.arrival.as_secs_f64(),
                q.prompt_tokens,
                q.output_tokens,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, 0.0, 100, 10),
            (1, 0.25, 200, 20),
            (2, 1.5, 300, 30),
            (3, 9.5, 400, 40)
        ]
    );
}

#[test]
fn requests_limits_the_rows_replayed() {
    let r = run("requests = 2\narrival = \"trace\"\ntrace = \"simple.csv\"");
    assert_eq!(r.len(), 2);
    assert_eq!(r[1].prompt_tokens, 200);
    let e = error("requests = 5\narrival = \"trace\"\ntrace = \"simple.csv\"");
    assert_eq!(e.path, "workload.requests");
    assert!(e.message.contains("only 4"), "{e}");
}

#[test]
fn trace_lengths_override_the_scenario_and_say_so() {
    let toml_text =
        "arrival = \"trace\"\ntrace = \"simple.csv\"\nprompt_tokens = 5\noutput_tokens = 6";
    let r = run(toml_text);
    assert_eq!(r[0].prompt_tokens, 100);
    let n = notes(toml_text);
    assert!(
        n.iter()
            .any(|s| s.contains("workload.prompt_tokens is ignored")),
        "{n:?}"
    );
    assert!(
        n.iter()
            .any(|s| s.contains("workload.output_tokens is ignored"))
    );
}

#[test]
fn a_trace_without_output_lengths_takes_them_from_the_scenario() {
    let r = run("arrival = \"trace\"\ntrace = \"inputs-only.csv\"\n\
         output_tokens = { dist = \"uniform\", min = 1, max = 4 }");
    assert_eq!(
        r.iter().map(|q| q.prompt_tokens).collect::<Vec<_>>(),
        [128, 256, 512]
    );
    assert!(r.iter().all(|q| (1..=4).contains(&q.output_tokens)));
    let e = error("arrival = \"trace\"\ntrace = \"inputs-only.csv\"");
    assert_eq!(e.path, "workload.output_tokens");
}

#[test]
fn unsorted_traces_are_replayed_in_time_order() {
    let toml_text = "arrival = \"trace\"\ntrace = \"unsorted.csv\"";
    let r = run(toml_text);
    assert_eq!(
        r.iter()
            .map(|q| (q.arrival.as_secs_f64(), q.prompt_tokens))
            .collect::<Vec<_>>(),
        [(0.0, 2), (1.0, 3), (2.0, 1)]
    );
    assert!(notes(toml_text).iter().any(|s| s.contains("sorted")));
}

#[test]
fn bad_trace_rows_name_their_line() {
    let e = error("arrival = \"trace\"\ntrace = \"bad-row.csv\"");
    assert_eq!(e.path, "workload.trace");
    assert!(
        e.message.contains("bad-row.csv line 4") && e.message.contains("`abc`"),
        "{e}"
    );
    // Rows past `requests` are not read.
    assert_eq!(
        run("requests = 2\narrival = \"trace\"\ntrace = \"bad-row.csv\"").len(),
        2
    );

    let e = error("arrival = \"trace\"\ntrace = \"no-header.csv\"");
    assert!(e.message.contains("no arrival-time column"), "{e}");
    assert!(e.help.unwrap().contains("header"));
    let e = error("arrival = \"trace\"\ntrace = \"missing.csv\"");
    assert_eq!(e.path, "workload.trace");
    assert!(e.message.contains("cannot read"), "{e}");
    assert_eq!(error("arrival = \"trace\"").path, "workload.trace");
}

#[test]
fn errors_carry_the_key_at_fault() {
    let base = "prompt_tokens = 10\noutput_tokens = 10\n";
    let cases = [
        ("requests = 10\narrival = \"poisson\"", "workload.rate"),
        (
            "requests = 10\narrival = \"poisson\"\nrate = \"0/s\"",
            "workload.rate",
        ),
        (
            "requests = 10\narrival = \"gamma\"\nrate = \"1/s\"",
            "workload.cv",
        ),
        (
            "requests = 10\narrival = \"gamma\"\nrate = \"1/s\"\ncv = 0.0",
            "workload.cv",
        ),
        (
            "requests = 10\narrival = \"gamma\"\nrate = \"1/s\"\ncv = -1.0",
            "workload.cv",
        ),
        ("arrival = \"poisson\"\nrate = \"1/s\"", "workload.requests"),
        ("requests = 0\narrival = \"offline\"", "workload.requests"),
        ("requests = 10", "workload.arrival"),
        (
            "requests = 10\narrival = \"poisson\"\nrate = \"0.0000001/s\"",
            "workload.rate",
        ),
    ];
    for (text, path) in cases {
        let e = error(&format!("{base}{text}"));
        assert_eq!(e.path, path, "{text}: {e}");
    }
    let lengths = [
        ("prompt_tokens = 0", "workload.prompt_tokens"),
        (
            "prompt_tokens = { dist = \"uniform\", min = 9, max = 3 }",
            "workload.prompt_tokens.min",
        ),
        (
            "prompt_tokens = { dist = \"uniform\", min = 9 }",
            "workload.prompt_tokens.max",
        ),
        (
            "prompt_tokens = { dist = \"uniform\", min = 0, max = 3 }",
            "workload.prompt_tokens.min",
        ),
        (
            "prompt_tokens = { dist = \"lognormal\", sigma = 1.0 }",
            "workload.prompt_tokens.mean",
        ),
        (
            "prompt_tokens = { dist = \"lognormal\", mean = 0.0, sigma = 1.0 }",
            "workload.prompt_tokens.mean",
        ),
        (
            "prompt_tokens = { dist = \"lognormal\", mean = 9.0 }",
            "workload.prompt_tokens.sigma",
        ),
        (
            "prompt_tokens = { dist = \"lognormal\", mean = 9.0, sigma = -1.0 }",
            "workload.prompt_tokens.sigma",
        ),
        (
            "prompt_tokens = { dist = \"empirical\" }",
            "workload.prompt_tokens.file",
        ),
        (
            "prompt_tokens = { dist = \"empirical\", file = \"no-lengths.txt\" }",
            "workload.prompt_tokens.file",
        ),
        (
            "prompt_tokens = { dist = \"empirical\", file = \"azure.csv\" }",
            "workload.prompt_tokens.file",
        ),
    ];
    for (spec, path) in lengths {
        let e = error(&format!(
            "requests = 3\narrival = \"offline\"\noutput_tokens = 1\n{spec}"
        ));
        assert_eq!(e.path, path, "{spec}: {e}");
    }
    let e = error("requests = 3\narrival = \"offline\"\nprompt_tokens = 1");
    assert_eq!(e.path, "workload.output_tokens");
    let e = error(
        "requests = 3\narrival = \"offline\"\noutput_tokens = 1\n\
         prompt_tokens = { dist = \"empirical\", file = \"azure.csv\" }",
    );
    assert!(e.message.contains("line 1"), "{e}");
}

#[test]
fn keys_without_effect_are_noted() {
    let n = notes(
        "requests = 3\narrival = \"poisson\"\nrate = \"1/s\"\ncv = 2.0\n\
         prompt_tokens = { dist = \"uniform\", min = 1, max = 3, mean = 2.0 }\noutput_tokens = 1",
    );
    assert!(
        n.iter().any(|s| s.contains("workload.cv is ignored")),
        "{n:?}"
    );
    assert!(
        n.iter()
            .any(|s| s.contains("workload.prompt_tokens.mean is ignored")),
        "{n:?}"
    );
}

#[test]
fn same_inputs_same_requests() {
    let w = workload(
        "requests = 1000\narrival = \"gamma\"\nrate = \"3/s\"\ncv = 3.0\n\
         prompt_tokens = { dist = \"lognormal\", mean = 700, sigma = 1.2 }\n\
         output_tokens = { dist = \"uniform\", min = 1, max = 900 }",
    );
    let a = generate(&w, 42, None).unwrap();
    assert_eq!(a, generate(&w, 42, None).unwrap());
    assert_ne!(a, generate(&w, 43, None).unwrap());
}

/// The draws are part of the output contract: pinned, so that a change in sampling (or in the
/// platform's arithmetic) shows up here rather than as drifting results.
#[test]
fn draws_are_pinned() {
    let r = run(
        "requests = 3\narrival = \"gamma\"\nrate = \"3/s\"\ncv = 2.0\n\
         prompt_tokens = { dist = \"lognormal\", mean = 700, sigma = 1.2 }\n\
         output_tokens = { dist = \"uniform\", min = 1, max = 900 }",
    );
    let got: Vec<(u64, u32, u32)> = r
        .iter()
        .map(|q| (q.arrival.as_ps(), q.prompt_tokens, q.output_tokens))
        .collect();
    assert_eq!(got, PINNED);
}

const PINNED: [(u64, u32, u32); 3] = [
    (0, 1640, 148),
    (1_280_135_601_565, 195, 870),
    (1_315_518_926_561, 116, 428),
];

#[test]
fn changing_one_distribution_leaves_the_other_streams_alone() {
    let a = run("requests = 500\narrival = \"poisson\"\nrate = \"10/s\"\n\
         prompt_tokens = { dist = \"lognormal\", mean = 300, sigma = 0.7 }\noutput_tokens = 64");
    let b = run("requests = 500\narrival = \"poisson\"\nrate = \"10/s\"\n\
         prompt_tokens = { dist = \"lognormal\", mean = 300, sigma = 0.7 }\n\
         output_tokens = { dist = \"lognormal\", mean = 900, sigma = 1.5 }");
    let c = run(
        "requests = 500\narrival = \"gamma\"\nrate = \"10/s\"\ncv = 3.0\n\
         prompt_tokens = { dist = \"lognormal\", mean = 300, sigma = 0.7 }\noutput_tokens = 64",
    );
    let arrivals = |r: &[Request]| r.iter().map(|q| q.arrival).collect::<Vec<_>>();
    let prompts = |r: &[Request]| r.iter().map(|q| q.prompt_tokens).collect::<Vec<_>>();
    assert_eq!(arrivals(&a), arrivals(&b));
    assert_eq!(prompts(&a), prompts(&b));
    assert_ne!(
        a.iter().map(|q| q.output_tokens).collect::<Vec<_>>(),
        b.iter().map(|q| q.output_tokens).collect::<Vec<_>>()
    );
    assert_ne!(arrivals(&a), arrivals(&c));
    assert_eq!(
        prompts(&a),
        prompts(&c),
        "arrivals changed, lengths did not"
    );
}

/// A piecewise rate: 2/s for 100 s, nothing for 50 s, then 10/s. Counts per step match the
/// rates, the quiet step stays empty, and each step's gaps are exponential with its rate.
#[test]
fn piecewise_rates_step_over_time() {
    let w = r#"
requests = 3000
arrival = "piecewise"
schedule = [
  { at = "0 s", rate = "2/s" },
  { at = "100 s", rate = "0/s" },
  { at = "150 s", rate = "10/s" },
]
prompt_tokens = 100
output_tokens = 10
"#;
    let r = run(w);
    assert_eq!(r.len(), 3000);
    let secs: Vec<f64> = r.iter().map(|q| q.arrival.as_secs_f64()).collect();
    assert!(secs.windows(2).all(|p| p[0] <= p[1]));
    let first: Vec<f64> = secs.iter().copied().filter(|&t| t < 100.0).collect();
    let quiet = secs
        .iter()
        .filter(|&&t| (100.0..150.0).contains(&t))
        .count();
    assert_eq!(quiet, 0);
    // About 200 arrivals in the first 100 s (Poisson: sd about 14).
    assert!((150..250).contains(&first.len()), "{}", first.len());
    let late: Vec<f64> = secs.iter().copied().filter(|&t| t >= 150.0).collect();
    let span = late.last().unwrap() - 150.0;
    let rate = late.len() as f64 / span;
    assert!((rate - 10.0).abs() < 0.6, "{rate}");
    // The first arrival is drawn too: not at time 0.
    assert!(secs[0] > 0.0);
    // Deterministic.
    assert_eq!(run(w), r);
    // A schedule starting late: nothing before it.
    let later = run(&w.replace(
        "{ at = \"0 s\", rate = \"2/s\" }",
        "{ at = \"30 s\", rate = \"2/s\" }",
    ));
    assert!(later[0].arrival.as_secs_f64() >= 30.0);
}

#[test]
fn piecewise_schedules_are_checked() {
    let base = "requests = 10\narrival = \"piecewise\"\nprompt_tokens = 1\noutput_tokens = 1\n";
    let e = error(base);
    assert_eq!(e.path, "workload.schedule");
    let e = error(&format!(
        "{base}schedule = [{{ at = \"10 s\", rate = \"1/s\" }}, {{ at = \"5 s\", rate = \"2/s\" }}]"
    ));
    assert!(
        e.message.contains("steps go forward in time"),
        "{}",
        e.message
    );
    let e = error(&format!(
        "{base}schedule = [{{ at = \"0 s\", rate = \"1/s\" }}, {{ at = \"5 s\", rate = \"0/s\" }}]"
    ));
    assert!(e.message.contains("never all arrive"), "{}", e.message);
    let n = notes(
        "requests = 2\narrival = \"poisson\"\nrate = \"1/s\"\nschedule = [{ at = \"0 s\", rate = \"1/s\" }]\nprompt_tokens = 1\noutput_tokens = 1",
    );
    assert!(
        n.iter().any(|n| n.contains("workload.schedule is ignored")),
        "{n:?}"
    );
}
