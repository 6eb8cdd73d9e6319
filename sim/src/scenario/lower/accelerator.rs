//! `[cluster.accelerator]` resolved to a device (`hw::accelerator`): its figures checked at
//! their keys, its defaults recorded as assumptions. Every workload then prices kernels on it as
//! on a catalog GPU (`scenario::lower::cluster::resolve`).

use crate::hw::accelerator::Accelerator;
use crate::hw::{Efficiency, GpuSpec};
use crate::scenario::Scenario;
use crate::scenario::cluster::AcceleratorSection;
use crate::scenario::error::ScenarioError;
use std::sync::Arc;

/// PCIe Gen3 x16 per direction, bytes/s: the host link a device gets when none is stated.
pub const DEFAULT_HOST_BANDWIDTH: f64 = 16e9;

/// The device `a` defines, at `cluster.accelerator`.
pub fn resolve(
    s: &Scenario,
    a: &AcceleratorSection,
    assumptions: &mut Vec<String>,
) -> Result<Arc<GpuSpec>, ScenarioError> {
    let at = |key: &str| format!("cluster.accelerator.{key}");
    let fp16 = a.peak.fp16.ok_or_else(|| {
        s.error_at(&at("peak"), "the accelerator needs an fp16 peak")
            .with_help(
                "activations and attention run in 16 bits: add fp16 = \"6 TFLOP/s\" to `peak`",
            )
    })?;
    if a.peak.fp32.is_none() {
        assumptions.push(format!(
            "{}: vector arithmetic (elementwise kernels) at the fp16 peak (no fp32 peak given)",
            a.name
        ));
    }
    if a.memory.0 == 0 {
        return Err(s.error_at(&at("memory"), "the accelerator needs some memory"));
    }
    let tdp = a.tdp.0;
    if tdp <= 0.0 {
        return Err(s.error_at(&at("tdp"), "the board power must be positive"));
    }
    let idle_watts = match a.idle_power {
        Some(p) if p.0 > tdp => {
            return Err(s
                .error_at(
                    &at("idle_power"),
                    format!("idle power {} W is above the board power {tdp} W", p.0),
                )
                .with_help("idle_power is what the board draws doing nothing, below `tdp`"));
        }
        Some(p) => Some(p.0),
        None => {
            assumptions.push(format!(
                "{}: idle power 15% of its {tdp} W board power (as for GPUs)",
                a.name
            ));
            None
        }
    };
    let compute_units = match a.compute_units {
        Some(0) => {
            return Err(s.error_at(&at("compute_units"), "`compute_units` must be at least 1"));
        }
        Some(n) => n,
        None => 1,
    };
    let host_bandwidth = match a.host_bandwidth {
        Some(b) => b.0,
        None => {
            assumptions.push(format!(
                "{}: host link 16 GB/s per direction (PCIe Gen3 x16); peers talk over it",
                a.name
            ));
            DEFAULT_HOST_BANDWIDTH
        }
    };
    let sustained_clock = match a.sustained_clock {
        Some(f) if !(f > 0.0 && f <= 1.0) => {
            return Err(s
                .error_at(
                    &at("sustained_clock"),
                    format!("sustained_clock {f} is outside (0, 1]"),
                )
                .with_help(
                    "the share of its rated clock at which a compute-bound matrix kernel draws the \
                     TDP: 1 for a device that holds its clock, 0.923 for a 700 W Hopper SXM board",
                ));
        }
        Some(f) => f,
        None => 1.0,
    };
    let efficiency = efficiency(s, a, assumptions)?;
    let source = match &a.source {
        Some(text) => text.clone(),
        None => {
            assumptions.push(format!("{}: no source given for its figures", a.name));
            "stated in the scenario".into()
        }
    };
    let device = Accelerator {
        name: a.name.clone(),
        peak_fp16: fp16.0,
        peak_fp32: a.peak.fp32.map(|t| t.0),
        peak_bf16: a.peak.bf16.map(|t| t.0),
        peak_fp8: a.peak.fp8.map(|t| t.0),
        peak_int8: a.peak.int8.map(|t| t.0),
        peak_int4: a.peak.int4.map(|t| t.0),
        memory_bytes: a.memory.0,
        memory_bandwidth: a.memory_bandwidth.0,
        tdp_watts: tdp,
        idle_watts,
        nonlinear_rate: a.nonlinear_rate.map(|t| t.0),
        sustained_clock,
        compute_units,
        host_bandwidth,
        efficiency,
        source,
    };
    Ok(Arc::new(device.spec()))
}

/// The GPU constants with the section's replacements, each checked; the rest recorded.
fn efficiency(
    s: &Scenario,
    a: &AcceleratorSection,
    assumptions: &mut Vec<String>,
) -> Result<Efficiency, ScenarioError> {
    let mut e = Efficiency::DEFAULT;
    let Some(section) = &a.efficiency else {
        assumptions.push(format!(
            "{}: the efficiency constants measured on GPUs (no [cluster.accelerator.efficiency])",
            a.name
        ));
        return Ok(e);
    };
    let fraction = |value: Option<f64>, key: &str, slot: &mut f64| {
        if let Some(v) = value {
            if !(v > 0.0 && v <= 1.0) {
                return Err(s
                    .error_at(
                        &format!("cluster.accelerator.efficiency.{key}"),
                        format!(
                            "`{key}` is a fraction of the peak, above 0 and at most 1, not {v}"
                        ),
                    )
                    .with_help("e.g. 0.8"));
            }
            *slot = v;
        }
        Ok(())
    };
    fraction(
        section.gemm_peak_fraction,
        "gemm_peak_fraction",
        &mut e.gemm_peak_fraction,
    )?;
    fraction(
        section.attention_peak_fraction,
        "attention_peak_fraction",
        &mut e.attention_peak_fraction,
    )?;
    fraction(
        section.memory_fraction,
        "memory_fraction",
        &mut e.memory_fraction,
    )?;
    fraction(
        section.elementwise_fraction,
        "elementwise_fraction",
        &mut e.elementwise_fraction,
    )?;
    for (value, key, slot) in [
        (section.gemm_half_dim, "gemm_half_dim", &mut e.gemm_half_dim),
        (
            section.overlap_exponent,
            "overlap_exponent",
            &mut e.overlap_exponent,
        ),
    ] {
        if let Some(v) = value {
            if !(v.is_finite() && v >= if key == "overlap_exponent" { 1.0 } else { 0.0 }) {
                return Err(s
                    .error_at(
                        &format!("cluster.accelerator.efficiency.{key}"),
                        format!("`{key}` = {v} is out of range"),
                    )
                    .with_help(
                        "gemm_half_dim is a dimension of 0 or more (32 on GPUs); \
                         overlap_exponent is 1 (no overlap) or more (1.75 on GPUs)",
                    ));
            }
            *slot = v;
        }
    }
    if let Some(d) = section.kernel_overhead {
        e.kernel_overhead_s = d.secs();
    }
    if let Some(d) = section.tensor_core_latency {
        e.tensor_core_latency_s = d.secs();
    }
    if e != Efficiency::DEFAULT {
        assumptions.push(format!(
            "{}: efficiency constants not given keep the values measured on GPUs",
            a.name
        ));
    }
    Ok(e)
}
