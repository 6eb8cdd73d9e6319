//! Serving engines as data: what each engine does where a scenario does not say, one table per
//! engine (`[serving] engine`). A table gives the scheduler, the batch limits, how the KV cache's
//! memory is sized, the KV cache's format for an fp8 checkpoint, and the engine's time outside
//! the kernels ([`Overhead`]). Each figure names its source; validation/serving-engines.md and
//! validation/serving-fixed-costs.md hold the notes behind them.
//!
//! A table describes the engine's current release as its OpenAI-compatible server runs with no
//! flags. What the scenario states wins over the table.

use super::overhead::{Overhead, Overlap};
use super::policy::SchedulerKind;
use crate::hw::Dtype;
use serde::Deserialize;

/// An engine a scenario may name (`[serving] engine`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    Vllm,
    TensorrtLlm,
    Sglang,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Vllm => "vllm",
            EngineKind::TensorrtLlm => "tensorrt-llm",
            EngineKind::Sglang => "sglang",
        }
    }

    /// The engine's table.
    pub fn stack(self) -> &'static Stack {
        match self {
            EngineKind::Vllm => &VLLM,
            EngineKind::TensorrtLlm => &TENSORRT_LLM,
            EngineKind::Sglang => &SGLANG,
        }
    }
}

/// What an engine does by default.
#[derive(Debug)]
pub struct Stack {
    pub kind: EngineKind,
    /// How the engine and release are named in assumptions ("vLLM 0.8+ (V1)").
    pub label: &'static str,
    pub scheduler: SchedulerKind,
    /// The scheduler, in the engine's words, and where that is documented.
    pub scheduler_source: &'static str,
    pub limits: BatchLimits,
    pub kv_budget: KvBudget,
    /// The KV cache's format when the weights are fp8: fp8 where the engine keeps the
    /// checkpoint's, else the 16-bit activation format.
    pub fp8_checkpoint_kv: Dtype,
    pub kv_source: &'static str,
    /// The engine's releases that differ in their time outside the kernels, oldest first.
    pub eras: &'static [Era],
}

/// Releases of an engine from `from` (major, minor) on, until the next era.
#[derive(Debug)]
pub struct Era {
    pub from: (u32, u32),
    /// The releases, as assumptions name them.
    pub label: &'static str,
    pub overhead: Overhead,
    pub source: &'static str,
}

impl Stack {
    /// The era of release `version` (the newest era when `None`), or why there is none.
    pub fn era(&self, version: Option<(u32, u32)>) -> Result<&Era, String> {
        let newest = self.eras.last().expect("every engine has an era");
        let Some(v) = version else {
            return Ok(newest);
        };
        self.eras.iter().rev().find(|e| e.from <= v).ok_or_else(|| {
            let (major, minor) = self.eras[0].from;
            format!(
                "{} before {major}.{minor} has no table here; the tables cover {}",
                self.kind.name(),
                self.eras
                    .iter()
                    .map(|e| e.label)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}

/// Most requests and most tokens in one iteration: the large pair on devices with at least
/// `large_from_bytes` of memory whose names contain none of `not_on`, the small pair elsewhere.
#[derive(Debug)]
pub struct BatchLimits {
    pub large: (u32, u32),
    pub small: (u32, u32),
    pub large_from_bytes: u64,
    pub not_on: &'static [&'static str],
    pub source: &'static str,
}

impl BatchLimits {
    /// The limits for a fleet whose devices have these names and memories: the large pair only
    /// if every device qualifies.
    pub fn for_devices<'a>(&self, devices: impl IntoIterator<Item = (&'a str, u64)>) -> (u32, u32) {
        let mut any = false;
        let large = devices.into_iter().all(|(name, bytes)| {
            any = true;
            let name = name.to_lowercase();
            bytes >= self.large_from_bytes && !self.not_on.iter().any(|n| name.contains(n))
        });
        if large && any { self.large } else { self.small }
    }
}

/// How much of a GPU's memory the KV cache gets, from the engine's memory fraction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KvBudget {
    /// The fraction of the GPU's whole memory the engine may use, less the weights and the
    /// activation reserve (vLLM's `gpu_memory_utilization`, SGLang's `mem_fraction_static`).
    Total(f64),
    /// The fraction of what is free once the weights and the activation reserve are in place
    /// (TensorRT-LLM's `kv_cache_free_gpu_memory_fraction`).
    Free(f64),
    /// As `Total`, the fraction chosen by the tensor-parallel degree: the entry of the largest
    /// degree not above the replica's (SGLang).
    TotalByTp(&'static [(u32, f64)]),
}

impl KvBudget {
    /// The same kind of budget at another fraction (a scenario's `kv_memory_fraction`).
    pub fn with_fraction(self, fraction: f64) -> KvBudget {
        match self {
            KvBudget::Free(_) => KvBudget::Free(fraction),
            KvBudget::Total(_) | KvBudget::TotalByTp(_) => KvBudget::Total(fraction),
        }
    }

    /// The fraction for a replica of `tp` GPUs.
    pub fn fraction(&self, tp: u32) -> f64 {
        match *self {
            KvBudget::Total(f) | KvBudget::Free(f) => f,
            KvBudget::TotalByTp(table) => table
                .iter()
                .filter(|&&(t, _)| t <= tp)
                .map(|&(_, f)| f)
                .next_back()
                .unwrap_or(table[0].1),
        }
    }

    /// Bytes of KV cache on a GPU of `memory` bytes holding `weights` bytes of weights and
    /// `reserve` bytes of activations, in a replica of `tp` GPUs (negative: nothing fits).
    pub fn kv_bytes(&self, memory: f64, weights: f64, reserve: f64, tp: u32) -> f64 {
        let f = self.fraction(tp);
        match self {
            KvBudget::Free(_) => f * (memory - weights - reserve),
            KvBudget::Total(_) | KvBudget::TotalByTp(_) => memory * f - weights - reserve,
        }
    }

    /// In words, for assumptions.
    pub fn describe(&self) -> String {
        match self {
            KvBudget::Total(f) => {
                format!("{f} of GPU memory for weights, activations and KV cache")
            }
            KvBudget::Free(f) => format!("{f} of the memory left free by weights and activations"),
            KvBudget::TotalByTp(t) => format!(
                "a fraction of GPU memory by tensor-parallel degree ({})",
                t.iter()
                    .map(|(tp, f)| format!("TP{tp} {f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

const GIB: u64 = 1 << 30;

/// GPU idle between the kernels of one decoder layer, seconds: about 11 kernels a layer (vLLM's
/// Llama layer) at about 0.5 us between graph nodes or stream launches. Weak: no trace of a data
/// centre GPU isolates it (validation/serving-fixed-costs.md, section 3).
const KERNEL_GAPS_PER_LAYER_S: f64 = 5e-6;

/// Host time to launch one layer's kernels from Python (eager PyTorch, or attention launched
/// between graph pieces), seconds: vLLM PR #1440 (47 us a layer, Llama-2-7B), SGLang #1401 (28 to
/// 69 us a layer, Llama-3-8B eager decode), vLLM PR #25444 (129 us a layer, a 48-layer MoE).
const PYTHON_LAUNCH_PER_LAYER_S: f64 = 60e-6;

/// vLLM V1's host work per step, synchronous: schedule, update the persistent batch, prepare
/// inputs, process outputs. PR #25444 (async scheduling hides 0.46 ms a step with full graphs,
/// 1xH100, batch 10), PR #42131 (0.2 + 0.18 + 0.05 ms of parts, B200), PR #17866 (0.27 ms of input
/// preparation).
const VLLM_STEP_S: f64 = 0.5e-3;

/// Host work per request per step, seconds: vLLM's update_from_output 1.1 us a request (PR
/// #46112), TensorRT-LLM's samplers 3.4 to 11 us (PRs #15920, #11983).
const PER_REQUEST_S: f64 = 5e-6;

/// The step handed to the other workers of a tensor-parallel replica (one shared-memory
/// broadcast in vLLM V1, RFC #9856), seconds. An estimate: no timing found.
const TP_BROADCAST_S: f64 = 0.1e-3;

/// vLLM V0's synchronous host work per step, seconds: its scheduler, the inputs rebuilt from
/// Python lists every step, the sampler's copy of the tokens to the host. PR #4280 (the scheduler
/// alone about 2 ms a step on an A10 host before its fix), RFC #6854 (about 4 ms of GPU bubble a
/// decode step under load, 1xH100, Llama-3-8B, requests' output processing included). Weak: no
/// profile isolates it at batch 1.
const VLLM_V0_STEP_S: f64 = 1.0e-3;

/// vLLM 0.4-0.5's output processing per request per step (sequence bookkeeping,
/// detokenization), seconds, run after the step on the host: RFC #6913 (Llama-3-70B fp8 on
/// 4xH100: 0.2 ms at batch 1, 3.4 ms at batch 32, so about 0.1 ms a request).
const VLLM_V0_OUTPUT_PER_REQUEST_S: f64 = 0.1e-3;

/// V0's step sent to the tensor-parallel workers, seconds: the driver broadcasts the step's
/// inputs and metadata (torch.distributed, later shared memory, PRs #5399 and #5755); PR #4844
/// removed one of the broadcasts and saved 4-5% of a TP2 Llama-2-7B step (about 0.3 ms of a 7 ms
/// step), and the step made about three.
const VLLM_V0_TP_BROADCAST_S: f64 = 1.0e-3;

/// vLLM 0.4-0.5 (V0 engine): decode steps replay CUDA graphs, prefills run eagerly, everything
/// on the host is synchronous.
const VLLM_V0: Overhead = Overhead {
    per_layer_s: KERNEL_GAPS_PER_LAYER_S,
    launch_per_layer_s: PYTHON_LAUNCH_PER_LAYER_S,
    decode_graph: true,
    per_iteration_s: VLLM_V0_STEP_S,
    per_request_s: VLLM_V0_OUTPUT_PER_REQUEST_S,
    tensor_parallel_s: VLLM_V0_TP_BROADCAST_S,
    overlap: Overlap::None,
};

const VLLM_PIECEWISE: Overhead = Overhead {
    per_layer_s: KERNEL_GAPS_PER_LAYER_S,
    launch_per_layer_s: PYTHON_LAUNCH_PER_LAYER_S,
    decode_graph: false,
    per_iteration_s: VLLM_STEP_S,
    per_request_s: PER_REQUEST_S,
    tensor_parallel_s: TP_BROADCAST_S,
    overlap: Overlap::None,
};

/// vLLM's OpenAI server, V1 engine (the default engine since 0.8).
pub static VLLM: Stack = Stack {
    kind: EngineKind::Vllm,
    label: "vLLM 0.8+ (V1 engine)",
    scheduler: SchedulerKind::Sarathi,
    scheduler_source: "chunked prefill, running requests first (V1 always chunks; \
                       vllm/v1/core/sched/scheduler.py)",
    limits: BatchLimits {
        large: (1024, 8192),
        small: (256, 2048),
        large_from_bytes: 70 * GIB,
        not_on: &["a100"],
        source: "EngineArgs.get_batch_defaults, OpenAI server: 1024 sequences and 8192 tokens at \
                 70 GiB or more but A100, else 256 and 2048",
    },
    kv_budget: KvBudget::Total(0.9),
    fp8_checkpoint_kv: Dtype::Bf16,
    kv_source: "gpu_memory_utilization 0.9; kv_cache_dtype \"auto\" keeps the model's 16-bit \
                format",
    eras: &[
        Era {
            from: (0, 4),
            label: "vLLM 0.4-0.5 (V0 engine)",
            overhead: VLLM_V0,
            source: "V0 engine: decode CUDA graphs, eager prefills (model_runner \
                     _use_captured_graph), synchronous Python loop: about 1 ms of host work a \
                     step (PR #4280, RFC #6854), 0.1 ms a request of output processing (RFC \
                     #6913), about 1 ms to hand a step to the tensor-parallel workers (PR #4844)",
        },
        Era {
            from: (0, 6),
            label: "vLLM 0.6-0.7 (V0 engine)",
            overhead: Overhead {
                per_request_s: PER_REQUEST_S,
                ..VLLM_V0
            },
            source: "V0 engine as in 0.4-0.5, with the requests' output processing overlapped \
                     with the next step's forward pass (async output processing, on by default \
                     since 0.6.0, PR #7049)",
        },
        Era {
            from: (0, 8),
            label: "vLLM 0.8-0.10",
            overhead: VLLM_PIECEWISE,
            source: "V1 engine, piecewise CUDA graphs (attention launched from Python every \
                     layer), synchronous scheduling: about 0.5 ms of host work a step \
                     (PRs #25444, #42131, #17866) and 5 us a request (PR #46112)",
        },
        Era {
            from: (0, 11),
            label: "vLLM 0.11-0.13",
            overhead: Overhead {
                decode_graph: true,
                ..VLLM_PIECEWISE
            },
            source: "decode steps as one CUDA graph (FULL_AND_PIECEWISE, PR #25444), prefills \
                     piecewise; synchronous scheduling, about 0.5 ms of host work a step",
        },
        Era {
            from: (0, 14),
            label: "vLLM 0.14+",
            overhead: Overhead {
                decode_graph: true,
                overlap: Overlap::Decode,
                ..VLLM_PIECEWISE
            },
            source: "async scheduling on by default (PR #27614): a decode step's host work \
                     overlaps the previous step's GPU work; prefills stay synchronous (PR #27914)",
        },
    ],
};

/// SGLang's server (0.4 and later: overlap scheduler on).
pub static SGLANG: Stack = Stack {
    kind: EngineKind::Sglang,
    label: "SGLang 0.4+",
    scheduler: SchedulerKind::Vllm,
    scheduler_source: "prefill batches ahead of decode batches, prompts chunked at \
                       chunked_prefill_size (sglang/srt/server_args.py; mixed chunks off)",
    limits: BatchLimits {
        large: (4096, 8192),
        small: (4096, 2048),
        large_from_bytes: 35 * GIB,
        not_on: &[],
        source: "chunked_prefill_size 8192 (2048 below 35 GB of memory); max_running_requests \
                 follows the KV pool (half its tokens, at most the 4096 requests of its request \
                 pool)",
    },
    kv_budget: KvBudget::TotalByTp(&[(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.83), (16, 0.79)]),
    fp8_checkpoint_kv: Dtype::Bf16,
    kv_source: "mem_fraction_static by TP (server_args.py); kv_cache_dtype \"auto\" keeps the \
                model's 16-bit format",
    eras: &[Era {
        from: (0, 4),
        label: "SGLang 0.4+",
        overhead: Overhead {
            per_layer_s: KERNEL_GAPS_PER_LAYER_S,
            launch_per_layer_s: PYTHON_LAUNCH_PER_LAYER_S,
            decode_graph: true,
            per_iteration_s: 0.75e-3,
            per_request_s: PER_REQUEST_S,
            tensor_parallel_s: 0.15e-3,
            overlap: Overlap::All,
        },
        source: "overlap scheduler on (PR #2067): host work runs one batch ahead; 0.74 ms of it \
                 exposed at batch 1 without overlap (PR #38131); decode CUDA graphs, prefills \
                 eager; 0.15 ms a step to reach the other tensor-parallel workers (#30511)",
    }],
};

/// TensorRT-LLM's `trtllm-serve` (in-flight batching).
pub static TENSORRT_LLM: Stack = Stack {
    kind: EngineKind::TensorrtLlm,
    label: "TensorRT-LLM (trtllm-serve)",
    scheduler: SchedulerKind::Sarathi,
    scheduler_source: "in-flight batching, context and generation requests in one step under \
                       max_num_tokens (chunked context is opt-in: a prompt over the budget is \
                       refused there, chunked here)",
    limits: BatchLimits {
        large: (2048, 8192),
        small: (2048, 8192),
        large_from_bytes: 0,
        not_on: &[],
        source: "BuildConfig defaults, taken by trtllm-serve: max_batch_size 2048, \
                 max_num_tokens 8192 (docs/source/performance/perf-best-practices.md)",
    },
    kv_budget: KvBudget::Free(0.9),
    fp8_checkpoint_kv: Dtype::Fp8,
    kv_source: "kv_cache_free_gpu_memory_fraction 0.9 of the memory free after loading; the KV \
                cache follows an fp8 checkpoint's kv_cache_quant_algo (features/quantization)",
    eras: &[
        Era {
            from: (0, 5),
            label: "TensorRT-LLM before 1.0",
            overhead: Overhead {
                per_layer_s: KERNEL_GAPS_PER_LAYER_S,
                launch_per_layer_s: 30e-6,
                decode_graph: false,
                per_iteration_s: 0.15e-3,
                per_request_s: 2e-6,
                tensor_parallel_s: 0.05e-3,
                overlap: Overlap::None,
            },
            source: "C++ runtime over TensorRT engines: no CUDA graphs with in-flight batching \
                     (issue #402), kernels launched from C++ (about 11 a layer at 2.7 us), \
                     synchronous; host work a step estimated at 0.15 ms (no published profile)",
        },
        Era {
            from: (1, 0),
            label: "TensorRT-LLM 1.0+",
            overhead: Overhead {
                per_layer_s: KERNEL_GAPS_PER_LAYER_S,
                launch_per_layer_s: PYTHON_LAUNCH_PER_LAYER_S,
                decode_graph: true,
                per_iteration_s: 0.5e-3,
                per_request_s: 6e-6,
                tensor_parallel_s: TP_BROADCAST_S,
                overlap: Overlap::All,
            },
            source: "PyTorch backend: overlap scheduler on (PR #4174), decode CUDA graphs (PR \
                     #5480); host work about 0.5 ms a step and 6 us a request (PRs #11983, #15920)",
        },
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_takes_its_large_limits_on_large_devices_other_than_the_a100() {
        let l = &VLLM.limits;
        assert_eq!(l.for_devices([("H100-SXM5-80GB", 80 * GIB)]), (1024, 8192));
        assert_eq!(l.for_devices([("A100-SXM4-80GB", 80 * GIB)]), (256, 2048));
        assert_eq!(l.for_devices([("L40S", 48 * GIB)]), (256, 2048));
        // A mixed fleet takes the large ones only if every device qualifies.
        assert_eq!(
            l.for_devices([("H100-SXM5-80GB", 80 * GIB), ("L4", 24 * GIB)]),
            (256, 2048)
        );
    }

    #[test]
    fn budgets_differ_in_what_the_fraction_is_of() {
        let (m, w, r) = (80.0, 16.0, 1.0);
        assert!((KvBudget::Total(0.9).kv_bytes(m, w, r, 1) - 55.0).abs() < 1e-9);
        assert!((KvBudget::Free(0.9).kv_bytes(m, w, r, 1) - 0.9 * 63.0).abs() < 1e-9);
        let sglang = SGLANG.kv_budget;
        assert_eq!(sglang.fraction(1), 0.88);
        assert_eq!(sglang.fraction(4), 0.85);
        assert_eq!(sglang.fraction(6), 0.85);
        assert_eq!(sglang.fraction(32), 0.79);
        assert_eq!(sglang.with_fraction(0.5), KvBudget::Total(0.5));
        assert_eq!(KvBudget::Free(0.9).with_fraction(0.5), KvBudget::Free(0.5));
    }

    #[test]
    fn every_engine_names_its_sources() {
        for kind in [
            EngineKind::Vllm,
            EngineKind::TensorrtLlm,
            EngineKind::Sglang,
        ] {
            let s = kind.stack();
            assert_eq!(s.kind, kind);
            for text in [s.scheduler_source, s.limits.source, s.kv_source] {
                assert!(!text.is_empty(), "{}", kind.name());
            }
            assert!(s.eras.windows(2).all(|w| w[0].from < w[1].from));
            for era in s.eras {
                assert!(!era.source.is_empty() && era.overhead != Overhead::NONE);
            }
        }
    }

    #[test]
    fn a_release_picks_its_era_and_an_older_one_is_refused() {
        let era = |v: &str| {
            VLLM.era(Some(crate::release::parse(v).unwrap()))
                .map(|e| e.label)
        };
        assert_eq!(era("0.9.2"), Ok("vLLM 0.8-0.10"));
        assert_eq!(era("0.11"), Ok("vLLM 0.11-0.13"));
        assert_eq!(era("v0.14.1"), Ok("vLLM 0.14+"));
        assert_eq!(era("1.2"), Ok("vLLM 0.14+"));
        assert_eq!(VLLM.era(None).unwrap().label, "vLLM 0.14+");
        assert_eq!(era("0.5.3"), Ok("vLLM 0.4-0.5 (V0 engine)"));
        assert_eq!(era("0.6.0"), Ok("vLLM 0.6-0.7 (V0 engine)"));
        assert_eq!(era("0.7.3"), Ok("vLLM 0.6-0.7 (V0 engine)"));
        let old = era("0.3.3").unwrap_err();
        assert!(
            old.contains("before 0.4") && old.contains("vLLM 0.4-0.5 (V0 engine)"),
            "{old}"
        );
        assert_eq!(
            TENSORRT_LLM.era(Some((0, 9))).unwrap().label,
            "TensorRT-LLM before 1.0"
        );
        for bad in ["", "latest", "0", "x.1"] {
            assert!(crate::release::parse(bad).is_err(), "{bad}");
        }
    }
}
