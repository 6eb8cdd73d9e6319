//! Weights kept in host memory (`[serving] weights_offload`) and how an iteration uses them
//! (`weights_offload_mode`). Each GPU keeps `bytes` of its share in host memory, spread evenly
//! over its stage's `l` layers; `p` seconds to read them all over the GPU's PCIe link
//! (`Topology::host_copy_seconds`), `g` seconds of the stage's kernels on the GPU.
//!
//! - `serial`: the reads do not overlap the kernels: `g + p`.
//! - `prefetch`: layer i+1's weights stream in while layer i computes:
//!   `p/l + (l - 1) max(g/l, p/l) + g/l`.
//! - `cpu`: as prefetch, but the operators using a fraction `y` of every layer's offloaded weights
//!   run on the host CPUs (`hw::host`), the hidden states crossing PCIe both ways:
//!   `t + (l - 1) max(c, k, t) + max(c, k)` with `c = g/l`, `t` a layer's copy, `k` its CPU time.
//!   `y` (in 1/32s) minimises the iteration; the GPU's time drops by `y` x `offloaded`.
//!
//! Ignored: dependencies inside a layer, the KV cache and attention staying on the GPU,
//! pinned-memory set-up. In full: docs/SERVING.md#weights-in-host-memory.

use super::kind::{EnginePolicy, ReplicaKind};
use super::policy::OffloadMode;
use crate::hw::host::HostSpec;
use serde_json::{Value, json};

/// Steps of the CPU's share of the offloaded weights (`y` in multiples of `1 / CPU_SHARE_STEPS`).
pub const CPU_SHARE_STEPS: u32 = 32;

/// How one GPU's offloaded weights are used.
#[derive(Clone, Copy, Debug)]
pub struct Offload {
    pub mode: OffloadMode,
    /// Offloaded weight bytes of this GPU.
    pub bytes: f64,
    /// Seconds a byte takes over this GPU's PCIe link.
    pub pcie_seconds_per_byte: f64,
    /// Layers of a pipeline stage, over which the offloaded bytes are spread.
    pub layers: u32,
    /// Bytes of one weight (the model's format).
    pub weight_bytes: f64,
    /// Width of the hidden states (what crosses PCIe when the CPU takes part).
    pub hidden: u32,
    /// This GPU's share of its server's host (mode `cpu` only).
    pub host: Option<HostSpec>,
}

impl Offload {
    /// Seconds of a pipeline stage's iteration whose kernels take `gpu` seconds on the GPU, of
    /// which `offloaded` are GEMMs over the offloaded weights, over a batch of `tokens` tokens;
    /// and the share of the offloaded weights computed on the CPU.
    pub fn stage_seconds(&self, gpu: f64, offloaded: f64, tokens: u64) -> (f64, f64) {
        let p = self.bytes * self.pcie_seconds_per_byte;
        if self.bytes <= 0.0 || tokens == 0 {
            return (gpu + if self.bytes > 0.0 { p } else { 0.0 }, 0.0);
        }
        match (self.mode, self.host) {
            (OffloadMode::Serial, _) => (gpu + p, 0.0),
            (OffloadMode::Prefetch, _) | (OffloadMode::Cpu, None) => {
                (self.pipelined(gpu, tokens, 0.0, None), 0.0)
            }
            (OffloadMode::Cpu, Some(host)) => (0..=CPU_SHARE_STEPS)
                .map(|i| {
                    let y = i as f64 / CPU_SHARE_STEPS as f64;
                    let on_gpu = gpu - y * offloaded.min(gpu);
                    (self.pipelined(on_gpu, tokens, y, Some(&host)), y)
                })
                // Fewest CPU operators among equally fast choices: strict improvement only.
                .fold(
                    (f64::INFINITY, 0.0),
                    |best, c| if c.0 < best.0 { c } else { best },
                ),
        }
    }

    /// The layer pipeline with a share `y` of the offloaded weights on the CPU.
    fn pipelined(&self, gpu: f64, tokens: u64, y: f64, host: Option<&HostSpec>) -> f64 {
        let l = self.layers.max(1) as f64;
        let layer_bytes = self.bytes / l;
        let c = gpu / l;
        let (k, hidden_states) = match host {
            Some(h) if y > 0.0 => {
                let on_cpu = y * layer_bytes;
                let flops = 2.0 * tokens as f64 * on_cpu / self.weight_bytes;
                // Down and back, 16-bit.
                let states = 2.0 * tokens as f64 * self.hidden as f64 * 2.0;
                (
                    h.seconds(flops, on_cpu),
                    states * self.pcie_seconds_per_byte,
                )
            }
            _ => (0.0, 0.0),
        };
        let t = (1.0 - y) * layer_bytes * self.pcie_seconds_per_byte + hidden_states;
        t + (l - 1.0) * c.max(k).max(t) + c.max(k)
    }
}

/// The report's `offload` section: the mode, the host where one is used, and what a decode of
/// one token and of a full batch costs each kind of replica's stage beside its GPU time.
pub fn report(kinds: &[ReplicaKind], memory: &EnginePolicy) -> Value {
    let per_kind: Vec<Value> = kinds
        .iter()
        .map(|k| {
            let copy = k.offload.bytes * k.offload.pcie_seconds_per_byte;
            let (one, y_one) = k.offload.stage_seconds(0.0, 0.0, 1);
            json!({
                "gpu": k.gpu.name,
                "bytes_per_gpu": k.offload.bytes,
                "layers_per_stage": k.offload.layers,
                "pcie_copy_s": copy,
                "cpu_share_one_token": y_one,
                "stage_s_one_token_beside_idle_gpu": one,
            })
        })
        .collect();
    json!({
        "mode": memory.offload_mode.name(),
        "bytes_per_gpu": memory.offload_bytes,
        "host": memory.host.map(|h| json!({
            "cpu_flops": h.flops,
            "memory_bandwidth": h.memory_bandwidth,
            "memory_bytes": h.memory_bytes,
        })),
        "kinds": per_kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offload(mode: OffloadMode, host: Option<HostSpec>) -> Offload {
        Offload {
            mode,
            bytes: 10e9,
            // 12.8 GB/s: 80% of PCIe Gen3 x16.
            pcie_seconds_per_byte: 1.0 / 12.8e9,
            layers: 40,
            weight_bytes: 2.0,
            hidden: 5120,
            host,
        }
    }

    #[test]
    fn serial_adds_the_copy_to_the_kernels() {
        let (s, y) = offload(OffloadMode::Serial, None).stage_seconds(0.05, 0.0, 1);
        assert!((s - (0.05 + 10e9 / 12.8e9)).abs() < 1e-12);
        assert_eq!(y, 0.0);
    }

    #[test]
    fn prefetch_hides_the_shorter_of_copy_and_kernels_but_one_layer() {
        let p = 10e9 / 12.8e9;
        // Copy-bound: the kernels hide behind the copy but for the last layer's.
        let (s, _) = offload(OffloadMode::Prefetch, None).stage_seconds(0.05, 0.0, 1);
        assert!((s - (p + 0.05 / 40.0)).abs() < 1e-9, "{s}");
        // Compute-bound: the copy hides but for the first layer's.
        let (s, _) = offload(OffloadMode::Prefetch, None).stage_seconds(4.0, 0.0, 1);
        assert!((s - (4.0 + p / 40.0)).abs() < 1e-9, "{s}");
    }

    #[test]
    fn the_cpu_takes_the_weights_it_reads_faster_than_pcie_copies_them() {
        let host = HostSpec::DEFAULT;
        let prefetch = offload(OffloadMode::Prefetch, None)
            .stage_seconds(0.05, 0.0, 1)
            .0;
        let (decode, y) = offload(OffloadMode::Cpu, Some(host)).stage_seconds(0.05, 0.0, 1);
        // DRAM at 430 GB/s against PCIe at 12.8 GB/s: nearly all of a decode's weights go to
        // the CPU, several times faster than streaming them.
        assert!(y > 0.9, "{y}");
        assert!(decode < prefetch / 5.0, "{decode} vs {prefetch}");
        // A 4,096-token prefill is arithmetic: the CPU takes a smaller share.
        let (prefill, y_prefill) =
            offload(OffloadMode::Cpu, Some(host)).stage_seconds(0.5, 0.0, 4096);
        assert!(y_prefill < y, "{y_prefill} vs {y}");
        let prefill_prefetch = offload(OffloadMode::Prefetch, None)
            .stage_seconds(0.5, 0.0, 4096)
            .0;
        assert!(prefill <= prefill_prefetch);
    }

    #[test]
    fn a_weak_host_is_left_out() {
        // 10 MB/s: a thirty-second of a layer's offloaded weights takes longer than the copy of
        // all of them.
        let weak = HostSpec {
            flops: 1e7,
            memory_bandwidth: 1e7,
            memory_bytes: 1e12,
        };
        let (s, y) = offload(OffloadMode::Cpu, Some(weak)).stage_seconds(0.05, 0.0, 1);
        assert_eq!(y, 0.0);
        let prefetch = offload(OffloadMode::Prefetch, None)
            .stage_seconds(0.05, 0.0, 1)
            .0;
        assert_eq!(s, prefetch);
    }
}
