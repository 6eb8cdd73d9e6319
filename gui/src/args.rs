//! The command line: `clustersim-gui [SCENARIO|SWEEP] [--set KEY=VALUE]... [--view START..END]
//! [--compare KEY=VALUE]... [--tab NAME]`.
//!
//! `--set` is the CLI's override option, applied to the first run (and shown in the overrides
//! field for later ones). `--view` opens the timeline on a time window of the step, with units as
//! scenario files write durations (`--view 0ms..3ms`): a way to come back to, or share, the part
//! of a step one was looking at. `--compare` re-runs once the first run is in, with these
//! overrides added (as the what-if panel's "Apply and re-run" does), so the window opens on a
//! comparison; `--tab` picks the tab shown first. A path ending in .csv or .jsonl is a sweep
//! result and opens in the sweep tab; a .json file is a saved report or trace, and a second .json
//! file may follow it (the other half of the pair). `--measure-frames` draws the window headless
//! and prints its frame times instead of opening it (`measure`). Deliberately left out: a full argument parser (four options
//! don't need clap's compile time) and remembering the last session.

use crate::saved;
use clustersim::scenario::quantity::Duration;
use std::path::PathBuf;

pub const USAGE: &str = "\
Usage: clustersim-gui [SCENARIO|SWEEP|REPORT.json [TRACE.json]] [OPTIONS]

Opens a viewer of one clustersim run: the report as cards and plots, a timeline of every
operation, what-if knobs with a comparison against the previous run; or a sweep result.

Arguments:
  [SCENARIO|SWEEP]          Scenario file to open (or type a path in the window); a .csv or
                            .jsonl file written by `clustersim sweep` opens in the sweep tab;
                            .json files are a saved run: the report of `clustersim run --json`
                            and/or the file of `--trace`, in either order

Options:
      --set <KEY=VALUE>     Override a key of the scenario (repeatable), as `clustersim run --set`
      --view <START..END>   Open the timeline on this window of the step, e.g. --view 0ms..3ms
      --compare <KEY=VALUE> After the first run, run again with this override added and compare
                            the two (repeatable)
      --tab <NAME>          The tab to show first: timeline, topology, metrics, whatif or
                            sweep
      --measure-frames      Open no window: run the scenario, draw the whole window headless
                            and print the median CPU time of a frame for each of a few views
      --frames <N>          Frames timed per view with --measure-frames (default 35)
  -h, --help                Print help";

/// What the command line asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    pub scenario: Option<PathBuf>,
    /// The second .json file of a saved run (report and trace).
    pub also: Option<PathBuf>,
    pub sets: Vec<String>,
    /// Start and end of the initial timeline window, in seconds.
    pub view: Option<(f64, f64)>,
    /// Overrides for a second run, compared with the first.
    pub compare: Vec<String>,
    /// The first tab shown (`timeline`, `topology`, `metrics`, `whatif`, `sweep`).
    pub tab: Option<String>,
    /// `--measure-frames`: time frames headless instead of opening the window.
    pub measure: bool,
    /// `--frames N`: frames timed per view.
    pub frames: Option<usize>,
    pub help: bool,
}

/// The tab names `--tab` takes.
pub const TABS: [&str; 5] = ["timeline", "topology", "metrics", "whatif", "sweep"];

/// Reads the arguments after the program name. Errors are one line, for stderr.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut out = Args::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value_of = |name: &str, inline: Option<&str>| -> Result<String, String> {
            match inline {
                Some(v) => Ok(v.to_string()),
                None => it.next().ok_or_else(|| format!("{name} needs a value")),
            }
        };
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (arg.as_str(), None),
        };
        match name {
            "-h" | "--help" => out.help = true,
            "--set" => out.sets.push(value_of("--set", inline)?),
            "--view" => out.view = Some(parse_view(&value_of("--view", inline)?)?),
            "--compare" => out.compare.push(value_of("--compare", inline)?),
            "--measure-frames" => out.measure = true,
            "--frames" => {
                let v = value_of("--frames", inline)?;
                match v.parse::<usize>() {
                    Ok(n) if n > 0 => out.frames = Some(n),
                    _ => return Err(format!("--frames {v}: expected a whole number ≥ 1")),
                }
            }
            "--tab" => {
                let tab = value_of("--tab", inline)?.to_ascii_lowercase();
                if !TABS.contains(&tab.as_str()) {
                    return Err(format!("--tab {tab}: expected one of {}", TABS.join(", ")));
                }
                out.tab = Some(tab);
            }
            _ if name.starts_with('-') && name.len() > 1 => {
                return Err(format!("unknown option `{name}` (try --help)"));
            }
            _ => {
                let path = PathBuf::from(&arg);
                match &out.scenario {
                    None => out.scenario = Some(path),
                    Some(first)
                        if out.also.is_none()
                            && saved::is_saved_path(first)
                            && saved::is_saved_path(&path) =>
                    {
                        out.also = Some(path)
                    }
                    Some(_) => {
                        return Err(format!(
                            "one scenario at a time: `{arg}` is a second one (only a saved \
                             report and its trace, two .json files, go together)"
                        ));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// `START..END` with units, e.g. `0ms..3ms` or `1.5 ms..2 ms`.
pub fn parse_view(text: &str) -> Result<(f64, f64), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("--view {text}: expected START..END, e.g. 0ms..3ms"))?;
    let read = |s: &str| {
        Duration::parse(s.trim())
            .map(Duration::secs)
            .map_err(|e| format!("--view {text}: {}", e.0))
    };
    let (t0, t1) = (read(a)?, read(b)?);
    if t1 <= t0 {
        return Err(format!("--view {text}: the end must come after the start"));
    }
    Ok((t0, t1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Args, String> {
        parse(s.split_whitespace().map(str::to_string))
    }

    #[test]
    fn scenario_sets_and_view() {
        let a =
            parse_str("s.toml --set parallel.micro_batch=4 --set=a.b=1 --view 0ms..3ms").unwrap();
        assert_eq!(a.scenario, Some(PathBuf::from("s.toml")));
        assert_eq!(a.sets, ["parallel.micro_batch=4", "a.b=1"]);
        let (t0, t1) = a.view.unwrap();
        assert_eq!(t0, 0.0);
        assert!((t1 - 3e-3).abs() < 1e-15);
        assert_eq!(parse_str("").unwrap(), Args::default());
        assert!(parse_str("--help").unwrap().help);
        let a = parse_str("s.toml --compare parallel.pp=8 --compare=parallel.dp=16 --tab Metrics")
            .unwrap();
        assert_eq!(a.compare, ["parallel.pp=8", "parallel.dp=16"]);
        assert_eq!(a.tab.as_deref(), Some("metrics"));
        assert!(
            parse_str("--tab plots")
                .unwrap_err()
                .contains("expected one of")
        );
    }

    #[test]
    fn mistakes_are_explained() {
        assert!(
            parse_str("--sett x")
                .unwrap_err()
                .contains("unknown option `--sett`")
        );
        assert!(parse_str("a.toml b.toml").unwrap_err().contains("second"));
        assert!(
            parse_str("a.json b.json c.json")
                .unwrap_err()
                .contains("second")
        );
        let a = parse_str("report.json trace.json --measure-frames --frames 3").unwrap();
        assert_eq!(a.also, Some(PathBuf::from("trace.json")));
        assert!(a.measure);
        assert_eq!(a.frames, Some(3));
        assert!(parse_str("--frames 0").unwrap_err().contains("≥ 1"));
        assert!(parse_str("--set").unwrap_err().contains("needs a value"));
        assert!(parse_view("3ms").unwrap_err().contains("START..END"));
        assert!(
            parse_view("0..3ms").is_err(),
            "a bare number is not a duration"
        );
        assert!(parse_view("3ms..1ms").unwrap_err().contains("after"));
        let (a, b) = parse_view("1.5 ms..2 ms").unwrap();
        assert!((a - 1.5e-3).abs() < 1e-15 && (b - 2e-3).abs() < 1e-15);
    }
}
