//! Accelerators defined by their own figures rather than picked from the GPU catalog: an FPGA
//! design (FlightLLM on an Alveo U280), a research ASIC (Mugi), a GPU not in the catalog. A
//! scenario states the device's peaks per format, memory capacity and bandwidth, power, and
//! optionally how it departs from a GPU (its own efficiencies, a unit pricing softmax's
//! exponentials apart); [`Accelerator::spec`] turns that into a [`GpuSpec`] that every workload
//! prices kernels on, as it would a catalog GPU.
//!
//! Units: FLOP/s (or OP/s), bytes, bytes/s, watts, transcendental evaluations/s. What is modelled
//! is what the roofline uses (`hw::roofline`); what a GPU spec also carries but a device rarely
//! has is fixed and said so: peers join over the host link (PCIe, no NVLink or switch reduction),
//! and the device counts as one server of `gpus_per_node` devices like any other.
//!
//! The spec is an owned value built from the figures; nothing is kept between calls.

use super::dtype::Dtype;
use super::gpu::{Architecture, GpuSpec, IntraLinkKind};
use super::roofline::Efficiency;
use std::borrow::Cow;

/// A device's figures as a scenario states them (already in base units).
#[derive(Clone, Debug, PartialEq)]
pub struct Accelerator {
    pub name: String,
    /// Dense peak by format, FLOP/s or OP/s; 16-bit float is required (activations, attention).
    pub peak_fp16: f64,
    pub peak_fp32: Option<f64>,
    pub peak_bf16: Option<f64>,
    pub peak_fp8: Option<f64>,
    pub peak_int8: Option<f64>,
    pub peak_int4: Option<f64>,
    pub memory_bytes: u64,
    pub memory_bandwidth: f64,
    /// Board power at full load and idle, watts (idle `None`: `hw::power`'s share of the TDP).
    pub tdp_watts: f64,
    pub idle_watts: Option<f64>,
    /// Transcendental evaluations per second of its softmax unit (`None`: not priced apart).
    pub nonlinear_rate: Option<f64>,
    /// Clock share at which a compute-bound matrix kernel draws the TDP (`GpuSpec::sustained_clock`).
    pub sustained_clock: f64,
    /// Units that run thread blocks (or tiles) side by side, for small grids.
    pub compute_units: u32,
    /// Host link (PCIe) per direction, bytes/s; peers also talk over it.
    pub host_bandwidth: f64,
    pub efficiency: Efficiency,
    /// Where the figures come from.
    pub source: String,
}

impl Accelerator {
    /// The spec workloads price kernels on. Vector arithmetic (elementwise kernels) runs at the
    /// fp32 peak, or at the fp16 peak when no fp32 figure is given.
    pub fn spec(&self) -> GpuSpec {
        GpuSpec {
            name: Cow::Owned(self.name.clone()),
            aliases: &[],
            vendor: "custom",
            architecture: Architecture::Custom,
            peak_fp32: self.peak_fp32.unwrap_or(self.peak_fp16),
            peak_tf32: None,
            peak_bf16: self.peak_bf16,
            peak_fp16: self.peak_fp16,
            peak_fp8: self.peak_fp8,
            peak_int8: self.peak_int8,
            memory_bytes: self.memory_bytes,
            memory_bandwidth: self.memory_bandwidth,
            intra_link: IntraLinkKind::Pcie,
            intra_bandwidth: self.host_bandwidth,
            pcie_bandwidth: self.host_bandwidth,
            tdp_watts: self.tdp_watts,
            in_switch_reduction: false,
            multiprocessors: self.compute_units,
            peak_int4: self.peak_int4,
            idle_watts: self.idle_watts,
            nonlinear_rate: self.nonlinear_rate,
            sustained_clock: self.sustained_clock,
            intra_efficiency: None,
            efficiency: Some(self.efficiency),
            source: Cow::Owned(self.source.clone()),
        }
    }

    /// The formats the device computes in, for messages.
    pub fn formats(&self) -> Vec<Dtype> {
        let spec = self.spec();
        Dtype::ALL
            .into_iter()
            .filter(|&d| spec.peak_flops(d).is_some())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::{ComputeModel, Kernel};

    fn u280() -> Accelerator {
        Accelerator {
            name: "test FPGA".into(),
            peak_fp16: 6e12,
            peak_fp32: None,
            peak_bf16: None,
            peak_fp8: None,
            peak_int8: Some(24.5e12),
            peak_int4: Some(24.5e12),
            memory_bytes: 8 << 30,
            memory_bandwidth: 460e9,
            tdp_watts: 225.0,
            idle_watts: Some(20.0),
            nonlinear_rate: None,
            sustained_clock: 1.0,
            compute_units: 1,
            host_bandwidth: 16e9,
            efficiency: Efficiency::DEFAULT,
            source: "test".into(),
        }
    }

    #[test]
    fn the_spec_carries_the_figures() {
        let a = u280();
        let spec = a.spec();
        assert_eq!(spec.name, "test FPGA");
        assert_eq!(spec.peak_flops(Dtype::Int4), Some(24.5e12));
        assert_eq!(spec.peak_flops(Dtype::Bf16), None);
        assert_eq!(spec.peak_flops(Dtype::Fp32), Some(6e12));
        assert_eq!(spec.memory_bandwidth, 460e9);
        assert_eq!(spec, a.spec());
        let other = Accelerator {
            memory_bandwidth: 920e9,
            ..a.clone()
        };
        assert_ne!(spec, other.spec());
        assert_eq!(
            a.formats(),
            vec![Dtype::Fp32, Dtype::Fp16, Dtype::Int8, Dtype::Int4]
        );
    }

    #[test]
    fn a_matrix_vector_design_streams_its_weights_at_batch_one() {
        // With GPU tiles (half-saturation at 32) a 1-token GEMM on 24.5 TOP/s is compute-bound;
        // a design built for matrix-vector products (half-saturation at 1) is not.
        let gemm = Kernel::Gemm {
            m: 1,
            n: 11008,
            k: 4096,
            batch: 1,
            dtype: Dtype::Int4,
        };
        let gpu_like = ComputeModel::new(u280().spec());
        let mv = Accelerator {
            efficiency: Efficiency {
                gemm_half_dim: 1.0,
                ..Efficiency::DEFAULT
            },
            ..u280()
        };
        let mv = ComputeModel::new(mv.spec());
        assert!(!gpu_like.cost(&gemm).unwrap().memory_bound);
        let c = mv.cost(&gemm).unwrap();
        assert!(c.memory_bound);
        assert!(c.seconds < gpu_like.cost(&gemm).unwrap().seconds);
    }
}
