//! clustersim-gui: a desktop viewer of one clustersim run.
//!
//! Opens a scenario, runs it in the background, and shows the report as cards, plots and every
//! simulated operation on a zoomable timeline; edits the main knobs and compares with the previous
//! run; plots sweep results. Modules, one concept each:
//!
//! - `args`: the command line.
//! - `app`: the window's state.
//! - `layout`: where everything goes on screen; the tabs.
//! - `controls`: the control bar (path field, Open, Re-run, status, overrides).
//! - `opening`: opening the path in the field, dropped files, or the command line's.
//! - `shown`: a result on screen, and taking in the worker's results.
//! - `worker`: runs on background threads.
//! - `saved`: a saved report and trace read back.
//! - `path_field`: the path field's completion of file names.
//! - `measure`: `--measure-frames`, the window's frame time measured headless.
//! - `cards`: the report as cards.
//! - `metrics`: what the Metrics tab plots, read from a report.
//! - `plots`: the Metrics tab (egui_plot): step and memory, latency percentiles, video phases.
//! - `throughput`: a serving run's tokens and completions over time, from its trace.
//! - `whatif`: the what-if fields, turned into `--set` overrides.
//! - `compare`: the previous run against the current one, headline by headline.
//! - `edited`: the scenario with overrides applied, as TOML to save.
//! - `sweep_view`: a `clustersim sweep` result plotted, any metric against any varied key.
//! - `timeline`: the timeline widget (zoom, pan, overview strip, hover).
//! - `timeline_overview`: the timeline's strip of the whole step (click to jump).
//! - `timeline_tooltip`: what the operation or merged block under the pointer holds.
//! - `tracks`: a run's lanes of operations (visible-range search, merging of sub-pixel operations).
//! - `ruler`: the timeline's time axis.
//! - `topology_layout`: the run's cluster built and placed (worker thread).
//! - `topology_links`: the placed cluster's links, summed per server and switch, classed by kind.
//! - `topology_scene`: the cluster as one frame draws it (what is on screen, hit testing).
//! - `topology_view`: the Topology tab (level of detail, hover, click a GPU).
//! - `gpu_lanes`: which timeline lanes show a GPU of the cluster.
//! - `link_traffic`: how busy each drawn link was, from a collective run's report.
//! - `units`: numbers for people.
//!
//! Rendering is eframe with the glow (OpenGL) backend on X11; it runs under Xvfb with Mesa's
//! software renderer (see `screenshot.sh`).

mod app;
mod args;
mod cards;
mod compare;
mod controls;
mod edited;
#[cfg(test)]
mod fuzz;
mod gpu_lanes;
mod layout;
mod link_traffic;
mod measure;
mod metrics;
mod opening;
mod path_field;
mod plots;
mod ruler;
mod saved;
mod shown;
mod sweep_view;
mod throughput;
mod timeline;
mod timeline_overview;
mod timeline_tooltip;
mod topology_layout;
mod topology_links;
mod topology_scene;
mod topology_view;
mod tracks;
mod units;
mod whatif;
mod worker;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    if args.help {
        println!("{}", args::USAGE);
        return ExitCode::SUCCESS;
    }
    if args.measure {
        let frames = args.frames.unwrap_or(measure::DEFAULT_FRAMES);
        return match measure::measure(&args, frames, |line| println!("{line}")) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("clustersim")
            .with_inner_size([1400.0, 900.0])
            .with_min_inner_size([720.0, 480.0]),
        renderer: eframe::Renderer::Glow,
        ..Default::default()
    };
    let result = eframe::run_native(
        "clustersim-gui",
        options,
        Box::new(move |cc| {
            let ctx = cc.egui_ctx.clone();
            let worker = worker::Worker::new(move || ctx.request_repaint());
            Ok(Box::new(app::App::new(args, worker)))
        }),
    );
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot open the window: {e}");
            ExitCode::FAILURE
        }
    }
}
