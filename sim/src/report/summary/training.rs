//! The summary of a training run: the layout, the step's time and throughput, memory, and where
//! the scenario asked for them energy, goodput, cost and every rank; the step's figures read
//! from the typed report (`report::training`), its optional sections as JSON.

use super::*;
use crate::report::training::TrainingReport;

/// The summary of a training run; `r` is its JSON, for the sections kept untyped.
pub(super) fn render_training(t: &TrainingReport, r: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  [{}]", t.scenario, t.kind);
    row(
        &mut out,
        "GPUs",
        format!("{} x {} ({})", t.cluster.gpus, t.cluster.gpu, nodes_of(r)),
    );
    row(
        &mut out,
        "model",
        format!(
            "{} ({:.2} B parameters)",
            t.model.name,
            t.model.params as f64 / 1e9
        ),
    );
    let p = &t.parallel;
    row(
        &mut out,
        "parallel",
        format!(
            "dp {} tp {} pp {} cp {} ep {}{}{}, micro-batch {}, global batch {} ({} accumulation steps), recompute {}, ZeRO {}",
            p.dp,
            p.tp,
            p.pp,
            p.cp,
            p.ep,
            if p.sequence_parallel {
                " (sequence parallel)"
            } else {
                ""
            },
            if p.pp > 1 {
                format!(
                    ", {} schedule with {} virtual stages",
                    p.schedule, p.virtual_stages
                )
            } else {
                String::new()
            },
            p.micro_batch,
            p.global_batch,
            p.accumulation_steps,
            match p.recompute_layers {
                Some(n) => format!("{} (first {n} layers of each chunk)", p.recompute),
                None => p.recompute.clone(),
            },
            p.zero
        ),
    );
    row(
        &mut out,
        "iteration time",
        format!(
            "{}{}",
            seconds(t.iteration_time_s),
            band(r, "iteration_time_s", seconds)
        ),
    );
    row(
        &mut out,
        "tokens/s",
        format!(
            "{:.0}{}",
            t.tokens_per_s,
            band(r, "tokens_per_s", |x| format!("{x:.0}"))
        ),
    );
    row(
        &mut out,
        "TFLOP/s per GPU",
        format!(
            "{:.1}{} model ({:.1}% MFU), {:.1} hardware ({:.1}% HFU)",
            t.tflops_per_gpu,
            band(r, "tflops_per_gpu", |x| format!("{x:.1}")),
            100.0 * t.mfu,
            t.hardware_tflops_per_gpu,
            100.0 * t.hfu
        ),
    );
    let b = &t.breakdown_s;
    row(
        &mut out,
        "step breakdown",
        format!(
            "compute {} ({} of it from collectives slowing the kernels beside them), exposed \
             communication {}, pipeline bubble {}",
            seconds(b.compute),
            seconds(num(&t.contention, "compute_s")),
            seconds(b.exposed_communication),
            seconds(b.pipeline_bubble)
        ),
    );
    let m = &t.memory;
    row(
        &mut out,
        "memory per GPU",
        format!(
            "{} of {} ({})",
            gib(m.peak_bytes_per_gpu as f64),
            gib(m.capacity_bytes as f64),
            if m.fits { "fits" } else { "DOES NOT FIT" }
        ),
    );
    capacity_rows(&mut out, r);
    let f = &t.fidelity;
    row(
        &mut out,
        "fidelity",
        format!(
            "compute {}, network {}; {}",
            f.compute, f.network, f.symmetry
        ),
    );
    rank_rows(&mut out, r);
    assumption_rows(&mut out, r);
    row(
        &mut out,
        "simulated",
        format!(
            "{} events in {}",
            t.sim.events,
            seconds(t.sim.wall_s.unwrap_or(f64::NAN))
        ),
    );
    out
}

/// Every rank simulated: who finished when, and whom the others waited for.
fn rank_rows(out: &mut String, r: &Value) {
    let k = &r["ranks"];
    if !k.is_object() {
        return;
    }
    let held: Vec<String> = k["held_up_by"]
        .as_array()
        .into_iter()
        .flatten()
        .take(3)
        .map(|h| {
            format!(
                "GPU {} ({})",
                h["gpu"],
                seconds(h["others_waited_s"].as_f64().unwrap_or(0.0))
            )
        })
        .collect();
    row(
        out,
        "ranks",
        format!(
            "pipelines finish between {} and {}; GPUs waited {} at collectives ({} a GPU){}",
            seconds(num(r, "ranks.finish_s.first")),
            seconds(num(r, "ranks.finish_s.last")),
            seconds(num(r, "ranks.waited_s.total")),
            seconds(num(r, "ranks.waited_s.per_gpu")),
            if held.is_empty() {
                String::new()
            } else {
                format!(", mostly for {}", held.join(", "))
            }
        ),
    );
}

/// Training's energy, goodput, cost and time to train, where the scenario asked for them.
fn capacity_rows(out: &mut String, r: &Value) {
    if r["energy"].is_object() {
        row(
            out,
            "energy",
            format!(
                "{:.0} W per GPU ({:.0}% busy), {} kWh per million tokens",
                num(r, "energy.board_watts_per_gpu"),
                100.0 * num(r, "energy.gpu_busy_fraction"),
                significant(num(r, "energy.kwh_per_million_tokens"))
            ),
        );
    }
    if r["power"].is_object() {
        let limit = if r["power"]["limited"] == true {
            format!(
                "; held to {:.0} W, GEMMs at {:.0}% of their clock",
                num(r, "power.limit_watts"),
                100.0 * num(r, "power.gemm_clock")
            )
        } else {
            String::new()
        };
        row(
            out,
            "power",
            format!(
                "{:.0} W peak, {:.0} W mean, {:.0} W while waiting (per GPU, by kernel){limit}",
                num(r, "power.peak_watts"),
                num(r, "power.mean_watts"),
                num(r, "power.p1_watts"),
            ),
        );
    }
    if r["reliability"].is_object() {
        row(
            out,
            "goodput",
            format!(
                "{:.1}% with synchronous restart, {:.1}% fault-tolerant ({} replicas); {:.1} failures a day, checkpoint every {}",
                100.0 * num(r, "reliability.synchronous_restart.goodput"),
                100.0 * num(r, "reliability.fault_tolerant.goodput"),
                num(r, "reliability.fault_tolerant.replicas"),
                num(r, "reliability.failures_per_day"),
                seconds(num(r, "reliability.checkpoint_interval_s"))
            ),
        );
    }
    if r["cost"].is_object() && r["cost"]["usd_per_million_tokens"].is_number() {
        row(
            out,
            "cost",
            format!(
                "${:.2} of GPU time per million tokens",
                num(r, "cost.usd_per_million_tokens")
            ),
        );
    }
    if r["capacity"].is_object() {
        let c = &r["capacity"];
        let usd = c["cost_usd"]["total"]
            .as_f64()
            .map_or(String::new(), |u| format!(", ${:.2} M", u / 1e6));
        row(
            out,
            "to train",
            format!(
                "{:.3e} tokens in {:.1} days, {:.0} GPU-hours, {:.0} MWh{usd}",
                num(c, "tokens"),
                num(c, "time_to_train_days"),
                num(c, "gpu_hours"),
                num(c, "energy_kwh") / 1e3
            ),
        );
    }
}
