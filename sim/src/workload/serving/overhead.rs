//! The time an engine iteration spends outside the GPU kernels the roofline prices.
//!
//! Two parts, each an engine's constant ([`super::engine`] has the tables and their sources):
//! - on the GPU, idle time inside the forward pass: per layer, the gaps where a CUDA graph is
//!   broken to launch a kernel from the host (vLLM's piecewise graphs around attention) or the
//!   launch gaps of an engine without graphs, seconds a layer;
//! - on the host, the work between two forward passes: scheduling, preparing the inputs,
//!   sampling's bookkeeping, output processing and detokenization, a fixed part and a part per
//!   request in the batch, plus, with `tp > 1`, handing the step to the other GPUs' workers.
//!
//! An engine that overlaps its host work with the GPU (an overlap scheduler runs iteration n+1's
//! scheduling while iteration n computes) pays the longer of the two; one that does not pays
//! their sum. Ignored: the extra decode step an overlap scheduler runs per request, the HTTP
//! server's and the tokenizer's time outside the engine loop, variation between iterations.

/// An engine's time outside the kernels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overhead {
    /// GPU idle time inside the forward pass, seconds per layer.
    pub per_layer_s: f64,
    /// Host time between forward passes, seconds per iteration.
    pub per_iteration_s: f64,
    /// Host time per request in the batch, seconds.
    pub per_request_s: f64,
    /// Extra host time per iteration when the replica spans several GPUs (tp > 1), seconds.
    pub tensor_parallel_s: f64,
    /// Whether host work overlaps the GPU's.
    pub overlapped: bool,
}

impl Overhead {
    /// No time outside the kernels.
    pub const NONE: Overhead = Overhead {
        per_layer_s: 0.0,
        per_iteration_s: 0.0,
        per_request_s: 0.0,
        tensor_parallel_s: 0.0,
        overlapped: false,
    };

    /// Seconds of host work of an iteration of `requests` requests on `tp` GPUs.
    pub fn host_seconds(&self, requests: u32, tp: u32) -> f64 {
        self.per_iteration_s
            + self.per_request_s * requests as f64
            + if tp > 1 { self.tensor_parallel_s } else { 0.0 }
    }

    /// Seconds of an iteration whose kernels take `kernels_s` over `layers` layers, with
    /// `requests` requests in its batch, on `tp` GPUs.
    pub fn iteration_seconds(&self, kernels_s: f64, layers: u32, requests: u32, tp: u32) -> f64 {
        if kernels_s <= 0.0 {
            return kernels_s;
        }
        let gpu = kernels_s + self.per_layer_s * layers as f64;
        let host = self.host_seconds(requests, tp);
        if self.overlapped {
            gpu.max(host)
        } else {
            gpu + host
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOME: Overhead = Overhead {
        per_layer_s: 10e-6,
        per_iteration_s: 500e-6,
        per_request_s: 20e-6,
        tensor_parallel_s: 300e-6,
        overlapped: false,
    };

    #[test]
    fn serial_host_work_adds_to_the_gpu_time() {
        let t = SOME.iteration_seconds(5e-3, 32, 8, 1);
        let want = 5e-3 + 32.0 * 10e-6 + 500e-6 + 8.0 * 20e-6;
        assert!((t - want).abs() < 1e-12, "{t} {want}");
        let tp4 = SOME.iteration_seconds(5e-3, 32, 8, 4);
        assert!((tp4 - t - 300e-6).abs() < 1e-12);
    }

    #[test]
    fn overlapped_host_work_hides_behind_a_longer_forward_pass() {
        let overlapped = Overhead {
            overlapped: true,
            ..SOME
        };
        // A long forward pass hides the host's 0.66 ms; a tiny one waits for it.
        let long = overlapped.iteration_seconds(5e-3, 32, 8, 1);
        assert!((long - (5e-3 + 32.0 * 10e-6)).abs() < 1e-12);
        let short = overlapped.iteration_seconds(1e-4, 1, 8, 1);
        assert!((short - overlapped.host_seconds(8, 1)).abs() < 1e-12);
    }

    #[test]
    fn an_empty_iteration_costs_nothing_and_none_adds_nothing() {
        assert_eq!(SOME.iteration_seconds(0.0, 32, 0, 1), 0.0);
        assert_eq!(Overhead::NONE.iteration_seconds(3e-3, 80, 64, 8), 3e-3);
    }
}
