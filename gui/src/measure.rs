//! `clustersim-gui --measure-frames SCENARIO`: the frame time of the window, measured headless.
//!
//! Runs the scenario on the calling thread (as the worker would), then draws the whole window
//! (1400 × 900 points, as it opens) `frames` times for each of a few views and prints the median
//! and worst CPU time of one frame: egui's layout plus tessellation into triangles, which is what
//! eframe's `cpu_usage` counts. The first [`WARM_UP`] frames of each view are discarded (caches
//! such as the timeline's overview strip and the fonts fill then).
//!
//! Views: the Timeline tab on the whole step, on the middle tenth of it and on 10 ms in the
//! middle; the Topology tab on the whole cluster and zoomed onto the first server (scale 2).
//! Deliberately not measured: the GL upload and draw (there is no window; with a GPU they take
//! well under a millisecond, with Mesa's software renderer they depend on the CPU), and input
//! handling (a frame without events is what a still window and a smooth drag both cost).

use crate::app::App;
use crate::args::Args;
use crate::layout::Tab;
use crate::timeline::View;
use crate::topology_view::Camera;
use crate::units;
use crate::worker::{self, Outcome, Request, Worker};
use std::time::Instant;

/// Frames drawn before the timed ones, per view.
pub const WARM_UP: usize = 5;
/// Timed frames per view when `--frames` is not given.
pub const DEFAULT_FRAMES: usize = 35;

/// One view's frame times.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub view: String,
    pub median_s: f64,
    pub worst_s: f64,
    pub frames: usize,
}

/// Draws `frames` frames of the window (after [`WARM_UP`] untimed ones) and returns their times.
fn time_frames(app: &mut App, frames: usize, mut before: impl FnMut(&mut App)) -> Vec<f64> {
    let ctx = egui::Context::default();
    let input = || egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(1400.0, 900.0),
        )),
        ..Default::default()
    };
    let mut times = Vec::with_capacity(frames);
    for frame in 0..WARM_UP + frames {
        before(app);
        let t = Instant::now();
        let mut out = ctx.run_ui(input(), |ui| app.show(ui));
        let prims = ctx.tessellate(out.shapes, out.pixels_per_point);
        // No painter takes the font atlas's updates.
        out.textures_delta.clear();
        let dt = t.elapsed().as_secs_f64();
        std::hint::black_box(prims);
        if frame >= WARM_UP {
            times.push(dt);
        }
    }
    times.sort_by(f64::total_cmp);
    times
}

fn summarise(view: String, times: &[f64]) -> Measured {
    Measured {
        view,
        median_s: times[times.len() / 2],
        worst_s: times[times.len() - 1],
        frames: times.len(),
    }
}

/// Runs `args.scenario` (with `args.sets`) and measures each view; `report` gets one line per
/// view as it is measured. Errors (a scenario that does not run) are the located message.
pub fn measure(
    args: &Args,
    frames: usize,
    mut report: impl FnMut(&str),
) -> Result<Vec<Measured>, String> {
    let path = args
        .scenario
        .clone()
        .ok_or("--measure-frames needs a scenario file")?;
    let request = Request::scenario(path, args.sets.clone());
    let started = Instant::now();
    let result = worker::run_blocking(&request).map_err(|e| e.message)?;
    let wall = started.elapsed();
    let mut app = App::new(Args::default(), Worker::new(|| {}));
    app.accept(Outcome {
        id: 0,
        request,
        result: Ok(result),
        wall,
    });
    let s = app.shown.as_ref().expect("accepted");
    let makespan = s.loaded.tracks.makespan;
    report(&format!(
        "{}: {} operations on {} lanes, a {} run, simulated in {}",
        s.title(),
        s.loaded.tracks.ops,
        s.loaded.tracks.tracks.len(),
        units::duration(makespan),
        units::duration(wall.as_secs_f64())
    ));
    report(&format!(
        "whole window at 1400x900, CPU time of layout + tessellation per frame, median of {frames} after {WARM_UP} warm-up frames:"
    ));
    let first_server = s
        .loaded
        .topology
        .layout
        .as_ref()
        .ok()
        .and_then(|l| l.servers.first())
        .map(|server| server.rect);
    let mut out = Vec::new();
    let mid = 0.5 * makespan;
    let views = [
        ("timeline, whole step", None),
        (
            "timeline, a tenth of it",
            Some(View {
                t0: mid - 0.05 * makespan,
                t1: mid + 0.05 * makespan,
            }),
        ),
        (
            "timeline, 10 ms",
            Some(View {
                t0: mid,
                t1: mid + 0.01,
            }),
        ),
    ];
    app.tab = Tab::Timeline;
    for (name, view) in views {
        let times = time_frames(&mut app, frames, |app| app.timeline.view = view);
        let m = summarise(name.to_string(), &times);
        report(&line(&m, ""));
        out.push(m);
    }
    // The cards above the tabs and the Metrics tab's plots (a serving run's throughput over
    // time, latency distributions; a training step's parts; a video's phases).
    app.tab = Tab::Metrics;
    let times = time_frames(&mut app, frames, |_| {});
    let m = summarise("cards and metrics".to_string(), &times);
    report(&line(&m, ""));
    out.push(m);
    app.tab = Tab::Topology;
    let cameras = [
        ("topology, whole cluster", None),
        (
            "topology, zoomed on a server",
            first_server.map(|r| Camera {
                center: r.center(),
                scale: 2.0,
            }),
        ),
    ];
    for (name, camera) in cameras {
        if name.contains("zoomed") && camera.is_none() {
            continue;
        }
        let times = time_frames(&mut app, frames, |app| app.topology.camera = camera);
        let m = summarise(name.to_string(), &times);
        let detail = format!(
            " ({} lines, {} servers in detail)",
            app.topology.drawn, app.topology.detailed
        );
        report(&line(&m, &detail));
        out.push(m);
    }
    Ok(out)
}

fn line(m: &Measured, extra: &str) -> String {
    format!(
        "  {:<30} median {:>9}  worst {:>9}{extra}",
        m.view,
        units::duration(m.median_s),
        units::duration(m.worst_s)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The measurement runs on a small scenario, covers every view, and its numbers are times.
    #[test]
    fn every_view_is_measured() {
        let args = Args {
            scenario: Some(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../scenarios/training/gpt3-1.3b-8xh100.toml"),
            ),
            ..Args::default()
        };
        let mut lines = Vec::new();
        let out = measure(&args, 3, |l| lines.push(l.to_string())).unwrap();
        let names: Vec<&str> = out.iter().map(|m| m.view.as_str()).collect();
        assert_eq!(
            names,
            [
                "timeline, whole step",
                "timeline, a tenth of it",
                "timeline, 10 ms",
                "cards and metrics",
                "topology, whole cluster",
                "topology, zoomed on a server"
            ]
        );
        for m in &out {
            assert_eq!(m.frames, 3);
            assert!(m.median_s > 0.0 && m.median_s <= m.worst_s, "{m:?}");
        }
        assert!(lines[0].contains("operations on"), "{}", lines[0]);
        assert_eq!(lines.len(), 2 + out.len());
    }

    #[test]
    fn a_missing_scenario_is_an_error() {
        assert!(measure(&Args::default(), 1, |_| {}).is_err());
        let args = Args {
            scenario: Some(PathBuf::from("/nonexistent/x.toml")),
            ..Args::default()
        };
        let err = measure(&args, 1, |_| {}).unwrap_err();
        assert!(err.contains("no such file"), "{err}");
    }
}
