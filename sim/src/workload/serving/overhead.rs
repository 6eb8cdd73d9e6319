//! The time an engine iteration spends outside the GPU kernels the roofline prices.
//!
//! Per iteration of `L` layers with `n` requests on `tp` GPUs, from an engine's constants
//! ([`super::engine`] has the tables and their sources):
//! - the forward pass: the kernels, plus `per_layer_s` of GPU idle between kernels in each layer
//!   (graph nodes or launches back to back); where the pass is not one CUDA graph (prefill
//!   iterations, or an engine that graphs only pieces), the host must also launch each layer's
//!   kernels, `launch_per_layer_s`, and the pass takes the longer of the two;
//! - the host's work between passes: `per_iteration_s + per_request_s n`, plus
//!   `tensor_parallel_s` when `tp > 1` (handing the step to the other GPUs' workers);
//! - an engine whose scheduler runs one iteration ahead (`overlap`) pays the longer of the pass
//!   and the host's work, one that does not pays their sum.
//!
//! Ignored: sampling's GPU kernels beyond the output projection (folded into the host's fixed
//! part), the extra decode step an overlap scheduler runs per request, the HTTP server's and the
//! tokenizer's time outside the engine loop, variation between iterations.

/// Which iterations overlap the host's work with the GPU's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    None,
    /// Iterations of decodes only (vLLM's async scheduling leaves prefills synchronous).
    Decode,
    All,
}

/// An engine's time outside the kernels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overhead {
    /// GPU idle between the kernels of a layer, seconds per layer.
    pub per_layer_s: f64,
    /// Host time to launch one layer's kernels where the pass is not one CUDA graph, seconds.
    pub launch_per_layer_s: f64,
    /// Whether decode-only passes run as one CUDA graph (no launches from the host).
    pub decode_graph: bool,
    /// Host time between passes, seconds per iteration.
    pub per_iteration_s: f64,
    /// Host time per request in the batch, seconds.
    pub per_request_s: f64,
    /// Extra host time per iteration when the replica spans several GPUs (tp > 1), seconds.
    pub tensor_parallel_s: f64,
    pub overlap: Overlap,
}

impl Overhead {
    /// No time outside the kernels.
    pub const NONE: Overhead = Overhead {
        per_layer_s: 0.0,
        launch_per_layer_s: 0.0,
        decode_graph: true,
        per_iteration_s: 0.0,
        per_request_s: 0.0,
        tensor_parallel_s: 0.0,
        overlap: Overlap::None,
    };

    /// Seconds of host work of an iteration of `requests` requests on `tp` GPUs.
    pub fn host_seconds(&self, requests: u32, tp: u32) -> f64 {
        self.per_iteration_s
            + self.per_request_s * requests as f64
            + if tp > 1 { self.tensor_parallel_s } else { 0.0 }
    }

    /// Seconds of an iteration whose kernels take `kernels_s` over `layers` layers, with
    /// `requests` requests in its batch (`decode_only`: none of them prefilling), on `tp` GPUs.
    pub fn iteration_seconds(
        &self,
        kernels_s: f64,
        layers: u32,
        (requests, decode_only): (u32, bool),
        tp: u32,
    ) -> f64 {
        if kernels_s <= 0.0 {
            return kernels_s;
        }
        let layers = layers as f64;
        let gpu = kernels_s + self.per_layer_s * layers;
        let forward = if decode_only && self.decode_graph {
            gpu
        } else {
            gpu.max(self.launch_per_layer_s * layers)
        };
        let host = self.host_seconds(requests, tp);
        let overlapped = match self.overlap {
            Overlap::None => false,
            Overlap::Decode => decode_only,
            Overlap::All => true,
        };
        if overlapped {
            forward.max(host)
        } else {
            forward + host
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOME: Overhead = Overhead {
        per_layer_s: 10e-6,
        launch_per_layer_s: 100e-6,
        decode_graph: true,
        per_iteration_s: 500e-6,
        per_request_s: 20e-6,
        tensor_parallel_s: 300e-6,
        overlap: Overlap::None,
    };

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn serial_host_work_adds_to_the_forward_pass() {
        let t = SOME.iteration_seconds(5e-3, 32, (8, true), 1);
        assert!(close(t, 5e-3 + 32.0 * 10e-6 + 500e-6 + 8.0 * 20e-6), "{t}");
        let tp4 = SOME.iteration_seconds(5e-3, 32, (8, true), 4);
        assert!(close(tp4 - t, 300e-6));
    }

    #[test]
    fn a_pass_the_host_launches_waits_for_the_launches_when_its_kernels_are_short() {
        // 32 layers of launches take 3.2 ms: more than 1 ms of kernels, less than 5 ms.
        let short = SOME.iteration_seconds(1e-3, 32, (1, false), 1);
        assert!(close(short, 3.2e-3 + SOME.host_seconds(1, 1)), "{short}");
        let long = SOME.iteration_seconds(5e-3, 32, (1, false), 1);
        assert!(close(long, 5e-3 + 32.0 * 10e-6 + SOME.host_seconds(1, 1)));
        // A graphed decode pass launches nothing from the host.
        let graphed = SOME.iteration_seconds(1e-3, 32, (1, true), 1);
        assert!(close(
            graphed,
            1e-3 + 32.0 * 10e-6 + SOME.host_seconds(1, 1)
        ));
    }

    #[test]
    fn overlapped_host_work_hides_behind_a_longer_pass() {
        let decode = Overhead {
            overlap: Overlap::Decode,
            ..SOME
        };
        let long = decode.iteration_seconds(5e-3, 32, (8, true), 1);
        assert!(close(long, 5e-3 + 32.0 * 10e-6));
        let short = decode.iteration_seconds(1e-4, 1, (8, true), 1);
        assert!(close(short, decode.host_seconds(8, 1)));
        // Prefill iterations stay synchronous unless the engine overlaps every iteration.
        let prefill = decode.iteration_seconds(5e-3, 32, (8, false), 1);
        assert!(close(
            prefill,
            5e-3 + 32.0 * 10e-6 + decode.host_seconds(8, 1)
        ));
        let all = Overhead {
            overlap: Overlap::All,
            ..SOME
        };
        assert!(close(
            all.iteration_seconds(5e-3, 32, (8, false), 1),
            5e-3 + 32.0 * 10e-6
        ));
    }

    #[test]
    fn an_empty_iteration_costs_nothing_and_none_adds_nothing() {
        assert_eq!(SOME.iteration_seconds(0.0, 32, (0, true), 1), 0.0);
        assert_eq!(
            Overhead::NONE.iteration_seconds(3e-3, 80, (64, false), 8),
            3e-3
        );
    }
}
