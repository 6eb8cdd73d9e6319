//! clustersim-gui: a desktop viewer of one clustersim run.
//!
//! Opens a scenario (or a sweep result, or a saved report and trace), runs it on a worker thread,
//! and shows the report as cards, plots and every simulated operation on a zoomable timeline;
//! edits the main knobs and compares with the previous run. The UI thread never simulates.
//!
//! Modules by area: window and input (`args`, `app`, `layout`, `controls`, `opening`,
//! `path_field`, `measure`); results (`worker`, `shown`, `saved`); report views (`cards`,
//! `metrics`, `plots`, `throughput`, `whatif`, `compare`, `edited`, `sweep_view`); timeline
//! (`timeline`, `timeline_overview`, `timeline_tooltip`, `tracks`, `ruler`, `gpu_lanes`); topology
//! (`topology_layout`, `topology_links`, `topology_scene`, `topology_view`, `link_traffic`);
//! `units`. One line on each: docs/GUI.md#where-the-code-is.
//!
//! Rendering is eframe with the glow (OpenGL) backend on X11; it runs under Xvfb with Mesa's
//! software renderer (see `screenshot.sh`).

mod app;
mod args;
mod band;
mod cards;
mod compare;
mod controls;
mod edited;
mod fleet_plots;
#[cfg(test)]
mod fuzz;
mod gpu_lanes;
mod kind_cards;
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
