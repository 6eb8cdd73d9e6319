//! Serving: the fleet process, its schedulers and its report.

use crate::common;

use clustersim::report::serving::ServingReport;
use clustersim::report::typed::TypedReport;
use common::section;

/// Runs a serving scenario given as text; a parse or run error as its message.
fn simulate(name: &str, text: String) -> Result<ServingReport, String> {
    common::typed_outcome(name, &text)
}

/// The three latencies' medians and 99th percentiles, by name.
fn latencies(r: &ServingReport) -> [(&'static str, f64, f64); 3] {
    [
        ("ttft_s", r.ttft_s.p50.unwrap(), r.ttft_s.p99.unwrap()),
        ("tpot_s", r.tpot_s.p50.unwrap(), r.tpot_s.p99.unwrap()),
        ("e2e_s", r.e2e_s.p50.unwrap(), r.e2e_s.p99.unwrap()),
    ]
}

fn report(serving: &str, workload: &str) -> ServingReport {
    let text = format!(
        r#"
kind = "serving"
[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8
[model]
preset = "llama-3.1-8b"
[serving]
{serving}
[workload]
{workload}
[slo]
ttft = "2 s"
tpot = "100 ms"
"#
    );
    simulate("serving.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

const OFFLINE: &str =
    "requests = 200\narrival = \"offline\"\nprompt_tokens = 512\noutput_tokens = 128";

#[test]
fn every_request_completes_and_latencies_are_ordered() {
    for scheduler in ["vllm", "sarathi", "static"] {
        let r = report(&format!("scheduler = \"{scheduler}\""), OFFLINE);
        assert_eq!(r.requests_completed, 200, "{scheduler}");
        for (key, p50, p99) in latencies(&r) {
            assert!(p50 <= p99, "{scheduler} {key}");
        }
        assert!(
            r.ttft_s.mean.unwrap() < r.e2e_s.mean.unwrap(),
            "{scheduler}"
        );
        assert!(r.throughput.output_tokens_per_s > 0.0);
    }
}

/// Where `[serving]` is silent the fleet runs as current vLLM's OpenAI server does: chunked
/// prefill with running requests first, 1,024 sequences and 8,192 tokens a step on GPUs of 70 GiB
/// or more other than the A100, 256 and 2,048 elsewhere. Stating those defaults changes nothing.
#[test]
fn unstated_engine_settings_are_current_vllms() {
    let poisson = "requests = 300\narrival = \"poisson\"\nrate = \"20/s\"\n\
                   prompt_tokens = 3000\noutput_tokens = 200";
    for (gpu, seqs, tokens) in [("H100", 1024, 8192), ("A100", 256, 2048)] {
        let text = |serving: &str| {
            format!(
                "kind = \"serving\"\n[cluster]\ngpu = \"{gpu}\"\nnodes = 1\ngpus_per_node = 8\n\
                 [model]\npreset = \"llama-3.1-8b\"\n[serving]\n{serving}\n[workload]\n{poisson}\n"
            )
        };
        let silent = simulate("silent.toml", text("")).unwrap();
        let stated = simulate(
            "stated.toml",
            text(&format!(
                "scheduler = \"sarathi\"\nmax_batch_size = {seqs}\nmax_batch_tokens = {tokens}"
            )),
        )
        .unwrap();
        let figures = |r: &ServingReport| {
            [
                ("ttft_s.p50", r.ttft_s.p50.unwrap()),
                ("tpot_s.p50", r.tpot_s.p50.unwrap()),
                ("e2e_s.p99", r.e2e_s.p99.unwrap()),
                ("sim.iterations", r.sim.iterations.unwrap() as f64),
            ]
        };
        for ((key, a), (_, b)) in figures(&silent).into_iter().zip(figures(&stated)) {
            assert_eq!(a, b, "{gpu} {key}");
        }
        assert_eq!(silent.serving.scheduler, "sarathi");
        assert_eq!(silent.serving.max_batch_size, seqs);
        assert_eq!(silent.serving.max_batch_tokens, tokens);
        assert!(
            silent
                .assumptions
                .iter()
                .any(|a| a.contains("EngineArgs.get_batch_defaults"))
        );
    }
}

/// Requests submitted together are batched together: a static batch of 16 sent at once is
/// prefilled in one iteration and every request's first token comes with it, as the engines'
/// batch benchmarks (TensorRT-LLM's, LMDeploy's, vLLM's `generate` on a list) run it.
#[test]
fn requests_submitted_together_are_prefilled_together() {
    for scheduler in ["static", "vllm"] {
        let r = report(
            &format!("scheduler = \"{scheduler}\"\nmax_batch_size = 16"),
            "requests = 16\narrival = \"offline\"\nprompt_tokens = 128\noutput_tokens = 128",
        );
        assert_eq!(r.sim.iterations, Some(128), "{scheduler}");
        assert_eq!(r.ttft_s.p50, r.ttft_s.p99, "{scheduler}");
        assert!(r.ttft_s.p99.unwrap() < 0.1, "{scheduler}");
    }
}

#[test]
fn continuous_batching_beats_static_batching() {
    // Outputs of unequal lengths: a static batch holds its finished slots until its longest
    // request ends, where continuous batching refills them.
    let uneven = "requests = 200\narrival = \"offline\"\nprompt_tokens = 512\n\
                  output_tokens = { dist = \"uniform\", min = 16, max = 256 }";
    let continuous = report("scheduler = \"vllm\"\nmax_batch_size = 64", uneven);
    let fixed = report("scheduler = \"static\"\nmax_batch_size = 64", uneven);
    assert!(
        continuous.throughput.output_tokens_per_s > fixed.throughput.output_tokens_per_s,
        "{} vs {}",
        continuous.throughput.output_tokens_per_s,
        fixed.throughput.output_tokens_per_s
    );
}

#[test]
fn bigger_batches_raise_offline_throughput() {
    let small = report("max_batch_size = 8", OFFLINE);
    let large = report("max_batch_size = 128", OFFLINE);
    assert!(large.throughput.output_tokens_per_s > 3.0 * small.throughput.output_tokens_per_s);
}

#[test]
fn the_histograms_count_every_completed_request_and_agree_with_the_percentiles() {
    let r = report("max_batch_size = 256", OFFLINE);
    let h = &r.histograms;
    let edges: Vec<f64> = h["edges_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_f64().unwrap())
        .collect();
    assert_eq!(edges.len(), 181);
    for (key, p50, _) in latencies(&r) {
        let counts: Vec<u64> = h[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(counts.len(), 182, "{key}");
        assert_eq!(
            counts.iter().sum::<u64>(),
            200,
            "{key}: every request has more than one token"
        );
        // The p50 falls in the bucket where the running count passes half.
        let bucket = edges.partition_point(|&e| e <= p50);
        let before: u64 = counts[..bucket].iter().sum();
        assert!(
            before <= 100 && before + counts[bucket] >= 100,
            "{key}: {before}"
        );
    }
}

#[test]
fn over_time_stays_within_the_limits_and_peaks_where_the_cache_does() {
    let r = report("kv_memory_fraction = 0.25\nmax_batch_size = 64", OFFLINE);
    let o = section(&r.over_time, "over_time");
    let reps = o["replicas"].as_array().unwrap();
    assert!(!reps.is_empty());
    let series = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let mut kv_peak: f64 = 0.0;
    for rep in reps {
        assert!(series(&rep["running"]).iter().all(|&n| n <= 64.0));
        kv_peak = series(&rep["kv_use"])
            .iter()
            .fold(kv_peak, |a, &b| a.max(b));
    }
    // Offline: every request waits at time zero, so the first span's queue is the backlog.
    assert!(o["fleet"]["queued"][0].as_f64().unwrap() > 0.0);
    assert!(
        kv_peak > 0.5 && kv_peak <= r.kv_cache.peak_use + 1e-6,
        "{kv_peak}"
    );
}

#[test]
fn a_small_kv_cache_forces_preemption_and_still_finishes() {
    // A quarter of memory leaves about 3 GB of KV cache (23k tokens) for 200 x 640 tokens.
    let r = report("kv_memory_fraction = 0.25\nmax_batch_size = 256", OFFLINE);
    assert_eq!(r.requests_completed, 200);
    assert!(r.kv_cache.preemptions > 0, "{:?}", r.kv_cache);
    assert!(r.kv_cache.peak_use > 0.9);
}

/// Swap preemption keeps preempted caches in host memory: nothing is recomputed, the copies
/// cost PCIe time, and the same tokens come back as went out.
#[test]
fn swap_preemption_moves_caches_over_pcie_instead_of_recomputing() {
    for scheduler in ["vllm", "sarathi"] {
        let small =
            format!("kv_memory_fraction = 0.25\nmax_batch_size = 256\nscheduler = \"{scheduler}\"");
        let recompute = report(&small, OFFLINE);
        let swap = report(&format!("{small}\npreemption = \"swap\""), OFFLINE);
        assert_eq!(swap.requests_completed, 200, "{scheduler}");
        assert!(swap.kv_cache.preemptions > 0, "{scheduler}");
        assert_eq!(swap.kv_cache.preemption, "swap");
        assert_eq!(recompute.kv_cache.preemption, "recompute");
        assert_eq!(recompute.kv_cache.swapped_bytes, 0.0);
        // Llama 3.1 8B: 32 layers x 8 KV heads x 128 x (K and V) x 2 bytes = 131,072 a token; every
        // swapped-out token comes back in, so the total is an even number of tokens.
        let bytes = swap.kv_cache.swapped_bytes;
        let tokens = bytes / 131_072.0;
        assert!(
            tokens > 0.0 && tokens.fract() == 0.0 && tokens % 2.0 == 0.0,
            "{scheduler}: {tokens}"
        );
    }
}

#[test]
fn weights_that_do_not_fit_are_a_result() {
    let r = report("kv_memory_fraction = 0.05", OFFLINE);
    assert!(!r.memory.fits);
    assert_eq!(r.requests_completed, 0);
}

#[test]
fn more_replicas_serve_more_and_tensor_parallelism_speeds_decoding() {
    let one = report("replicas = 1", OFFLINE);
    let four = report("replicas = 4\nrouter = \"round-robin\"", OFFLINE);
    assert!(four.throughput.requests_per_s > 2.5 * one.throughput.requests_per_s);
    let tp1 = report("max_batch_size = 16", OFFLINE);
    let tp4 = report("tp = 4\nmax_batch_size = 16", OFFLINE);
    assert!(tp4.tpot_s.p50.unwrap() < tp1.tpot_s.p50.unwrap());
}

fn llama_70b(serving: &str, cluster: &str) -> Result<ServingReport, String> {
    let text = format!(
        r#"
kind = "serving"
[cluster]
gpu = "H100"
{cluster}
[model]
preset = "llama-3-70b"
[serving]
{serving}
[workload]
requests = 200
arrival = "poisson"
rate = "2/s"
prompt_tokens = 1000
output_tokens = 100
"#
    );
    simulate("pp.toml", text)
}

/// Pipeline parallelism splits the weights over the stages: Llama 3 70B (141 GB in bf16) does not
/// fit one H100, fits two as pp = 2, and serves every request; its engines (one per stage) each
/// take a share of the KV cache.
#[test]
fn pipeline_parallel_replicas_split_weights_over_stages() {
    let one = llama_70b("tp = 1\nreplicas = 1", "").unwrap();
    assert!(!one.memory.fits);
    let two = llama_70b("tp = 1\npp = 2\nreplicas = 1", "").unwrap();
    assert!(two.memory.fits);
    assert_eq!(two.requests_completed, 200);
    assert_eq!(two.cluster.pp, Some(2));
    let weights = |r: &ServingReport| r.memory.weights_bytes_per_gpu.unwrap() as f64;
    let w1 = weights(&one);
    let w2 = weights(&two);
    assert!((w1 / w2 - 2.0).abs() < 1e-6, "{w1} {w2}");
    // tp 2 x pp 2 against tp 4: the same four GPUs, the same compute per token; pipeline
    // stages hold half the weights each, so more KV cache, and add hand-offs.
    let tp4 = llama_70b("tp = 4\nreplicas = 1", "").unwrap();
    let pp2 = llama_70b("tp = 2\npp = 2\nreplicas = 1", "").unwrap();
    assert_eq!(tp4.requests_completed, 200);
    assert_eq!(pp2.requests_completed, 200);
    assert!(weights(&pp2) == weights(&tp4));
    // Stages that leave the node need the NICs stated.
    let e = llama_70b(
        "tp = 4\npp = 4\nreplicas = 1",
        "nodes = 2\ngpus_per_node = 8",
    )
    .unwrap_err();
    assert!(e.contains("nic_bandwidth"), "{e}");
    let cross = llama_70b(
        "tp = 4\npp = 4\nreplicas = 1",
        "nodes = 2\ngpus_per_node = 8\n[cluster.inter_node]\nnic_bandwidth = \"400 Gb/s\"",
    )
    .unwrap();
    assert_eq!(cross.requests_completed, 200);
}

#[test]
fn refused_features_say_so() {
    let e = llama_70b(
        "tp = 2\npp = 2\n[serving.disaggregation]\nprefill_replicas = 1\ndecode_replicas = 1",
        "nodes = 1\ngpus_per_node = 8",
    )
    .unwrap_err();
    assert!(e.contains("not modelled by this version"), "{e}");
}

/// Mixture of experts: a decode step of one request reads only the experts its token is routed
/// to, so Mixtral 8x7B (47 B parameters, 13 B active) decodes one request far faster than a
/// dense 70 B model, while its weights take all 47 B of memory.
#[test]
fn mixture_of_experts_models_read_only_the_experts_a_batch_touches() {
    let one = |preset: &str| {
        let text = format!(
            r#"
kind = "serving"
[cluster]
gpu = "H100"
[model]
preset = "{preset}"
[serving]
tp = 2
[workload]
requests = 1
arrival = "offline"
prompt_tokens = 100
output_tokens = 50
"#
        );
        simulate("moe.toml", text).unwrap()
    };
    let moe = one("mixtral-8x7b");
    let dense = one("llama-3-70b");
    assert_eq!(moe.requests_completed, 1);
    assert!(moe.tpot_s.p50.unwrap() < 0.4 * dense.tpot_s.p50.unwrap());
    let params = moe.model.params as f64;
    assert!((params / 46.7e9 - 1.0).abs() < 0.01, "{params}");
    assert!(moe.memory.weights_bytes_per_gpu.unwrap() as f64 > 0.45 * params * 2.0 / 2.0);
}

/// A disaggregated fleet of Llama 3 70B on two H100 servers: `pools` is the
/// `[serving.disaggregation]` body (or "" for none) and `replicas` the colocated count.
fn fleet(pools: &str, replicas: u32, extra: &str) -> Result<ServingReport, String> {
    let serving = if pools.is_empty() {
        format!("replicas = {replicas}")
    } else {
        format!("{extra}\n[serving.disaggregation]\n{pools}")
    };
    let text = format!(
        r#"
kind = "serving"
[cluster]
gpu = "H100"
nodes = 2
gpus_per_node = 8
[cluster.inter_node]
nic_bandwidth = "400 Gb/s"
[model]
preset = "llama-3-70b"
[serving]
tp = 2
{serving}
[workload]
requests = 300
arrival = "poisson"
rate = "3/s"
prompt_tokens = 2000
output_tokens = 150
"#
    );
    simulate("disagg.toml", text)
}

#[test]
fn disaggregated_pools_move_every_kv_cache_over_the_network() {
    let r = fleet("prefill_replicas = 2\ndecode_replicas = 6", 0, "").unwrap();
    assert_eq!(r.requests_completed, 300);
    let d = r.disaggregation.as_ref().unwrap();
    assert_eq!(d.prefill_replicas, 2);
    assert_eq!(d.kv_transfers, 300);
    // Llama 3 70B: 80 layers x 8 KV heads x 128 x (K and V) x 2 bytes = 327,680 bytes a token.
    let bytes = d.kv_transfer_bytes;
    assert!((bytes - 300.0 * 2000.0 * 327_680.0).abs() < 1.0, "{bytes}");
    // Replicas 0-1 (prefill) sit on node 0; decode replicas 2-3 share it (NVLink), 4-7 do not
    // (the 400 Gb/s NIC): the slowest transfer takes about a shard over a NIC.
    let shard = 2000.0 * 327_680.0 / 2.0;
    let nic = 50e9 * 0.92;
    let slowest = d.kv_transfer_s.p99.unwrap();
    assert!(
        slowest > 0.9 * shard / nic && slowest < 1.2 * shard / nic,
        "{slowest}"
    );
    assert!(d.kv_transfer_s.p50.unwrap() <= slowest);
    assert_eq!(r.cluster.replicas, 8);
    for (key, p50, p99) in latencies(&r) {
        assert!(p50 <= p99, "{key}");
    }
    assert!(r.ttft_s.mean.unwrap() < r.e2e_s.mean.unwrap());
    // Deterministic.
    let again = fleet("prefill_replicas = 2\ndecode_replicas = 6", 0, "").unwrap();
    assert_eq!(r.to_value(), again.to_value());
}

#[test]
fn disaggregation_spares_decodes_from_long_prefills() {
    // The same 8 replicas colocated (vLLM prefills pause every running decode) and split 2 + 6:
    // decoding in its own pool runs steadier, so time per output token improves.
    let colocated = fleet("", 8, "").unwrap();
    let split = fleet("prefill_replicas = 2\ndecode_replicas = 6", 0, "").unwrap();
    let p90 = |r: &ServingReport| r.tpot_s.p90.unwrap();
    assert!(
        p90(&split) < p90(&colocated),
        "{} vs {}",
        p90(&split),
        p90(&colocated)
    );
    assert!(colocated.disaggregation.is_none());
}

#[test]
fn disaggregation_errors_name_the_key() {
    let e = fleet(
        "prefill_replicas = 2\ndecode_replicas = 6",
        0,
        "replicas = 4",
    )
    .unwrap_err();
    assert!(e.contains("replicas = 4") && e.contains("2 + 6"), "{e}");
    let e = fleet("prefill_replicas = 2", 0, "").unwrap_err();
    assert!(e.contains("decode_replicas"), "{e}");
    let e = fleet(
        "prefill_replicas = 2\ndecode_replicas = 6",
        0,
        "scheduler = \"static\"",
    )
    .unwrap_err();
    assert!(
        e.contains("static batching with disaggregated pools"),
        "{e}"
    );
    let e = fleet("prefill_replicas = 8\ndecode_replicas = 4", 0, "").unwrap_err();
    assert!(e.contains("24 GPUs") && e.contains("16"), "{e}");
}

/// `cluster.profile` prices a serving fleet's kernels too, and the report says which.
#[test]
fn a_calibration_profile_prices_serving_iterations() {
    let run = |profile: &str| {
        let text = format!(
            r#"
kind = "serving"
[cluster]
gpu = "H100"
{profile}
[model]
preset = "llama-3.1-8b"
[serving]
replicas = 1
[workload]
requests = 100
arrival = "offline"
prompt_tokens = 512
output_tokens = 64
"#
        );
        simulate("p.toml", text)
    };
    let roofline = run("").unwrap();
    let measured = run("profile = \"h100-sxm5-80gb-vidur\"").unwrap();
    assert!(roofline.cluster.profile.is_none());
    assert_eq!(
        measured.cluster.profile.as_deref(),
        Some("h100-sxm5-80gb-vidur")
    );
    assert_ne!(roofline.tpot_s.mean.unwrap(), measured.tpot_s.mean.unwrap());
    let e = run("profile = \"h200-sxm-141gb-measured\"").unwrap_err();
    assert!(e.contains("measured on H200-SXM-141GB"), "{e}");
}

/// A mixed fleet: `groups` is the body of its `[[serving.group]]` tables.
fn mixed(groups: &[(&str, u32)], cluster_extra: &str) -> Result<ServingReport, String> {
    mixed_routed(groups, cluster_extra, "least-loaded")
}

fn mixed_routed(
    groups: &[(&str, u32)],
    cluster_extra: &str,
    router: &str,
) -> Result<ServingReport, String> {
    let body: String = groups
        .iter()
        .map(|(gpu, n)| format!("[[serving.group]]\ngpu = \"{gpu}\"\nreplicas = {n}\n"))
        .collect();
    let text = format!(
        r#"
kind = "serving"
[cluster]
{cluster_extra}
[model]
preset = "llama-3.1-8b"
[serving]
router = "{router}"
{body}
[workload]
requests = 600
arrival = "offline"
prompt_tokens = 1000
output_tokens = 200
"#
    );
    simulate("mixed.toml", text)
}

#[test]
fn a_mixed_fleet_serves_between_its_fastest_and_slowest_members() {
    let fast = mixed(&[("H100", 4)], "").unwrap();
    let both = mixed(&[("H100", 2), ("L40S", 2)], "").unwrap();
    let slow = mixed(&[("L40S", 4)], "").unwrap();
    let tput = |r: &ServingReport| r.throughput.output_tokens_per_s;
    assert!(tput(&slow) < tput(&both) && tput(&both) < tput(&fast));
    assert_eq!(both.requests_completed, 600);
    assert_eq!(both.cluster.gpu, "mixed");
    assert!(both.cluster.tp.is_none());
    let groups = &both.cluster.groups;
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[1]["gpu"], "L40S");
    // Least-loaded routing sends more of the work to the faster GPUs.
    let h100 = groups[0]["requests_completed"].as_u64().unwrap();
    let l40s = groups[1]["requests_completed"].as_u64().unwrap();
    assert_eq!(h100 + l40s, 600);
    assert!(h100 > l40s, "{h100} vs {l40s}");
    // Weighted routing deals requests in proportion to the groups' speeds; round-robin evenly,
    // so the slow half sets the pace.
    let weighted = mixed_routed(&[("H100", 2), ("L40S", 2)], "", "weighted").unwrap();
    let wg = &weighted.cluster.groups;
    let ratio = wg[0]["capacity_tokens_per_s"].as_f64().unwrap()
        / wg[1]["capacity_tokens_per_s"].as_f64().unwrap();
    let dealt = wg[0]["requests_completed"].as_f64().unwrap()
        / wg[1]["requests_completed"].as_f64().unwrap();
    assert!((dealt / ratio - 1.0).abs() < 0.05, "{dealt} vs {ratio}");
    let even = mixed_routed(&[("H100", 2), ("L40S", 2)], "", "round-robin").unwrap();
    assert_eq!(even.cluster.groups[0]["requests_completed"], 300);
    assert!(tput(&even) < tput(&weighted));
    // The L40S's 48 GB hold fewer KV blocks than the H100's 80 GB.
    assert!(
        groups[1]["kv_blocks_per_replica"].as_u64() < groups[0]["kv_blocks_per_replica"].as_u64()
    );
}

#[test]
fn mixed_fleet_errors_name_the_key() {
    let e = mixed(&[("H100", 1)], "gpu = \"H100\"").unwrap_err();
    assert!(e.contains("does not apply to a mixed fleet"), "{e}");
    let e = mixed(&[("H1000", 1)], "").unwrap_err();
    assert!(e.contains("unknown GPU \"H1000\""), "{e}");
    let e = mixed(&[("H100", 0)], "").unwrap_err();
    assert!(e.contains("must be at least 1"), "{e}");
}

/// Weights in host memory: Llama 3 70B on one H100 does not fit; with 70 GB of it offloaded it
/// fits, has room for KV cache, and every iteration pays for reading the offloaded bytes over
/// PCIe, so it is far slower than two GPUs holding the weights.
#[test]
fn offloaded_weights_free_memory_and_cost_pcie_time() {
    let plain = llama_70b("tp = 1\nreplicas = 1", "").unwrap();
    assert!(!plain.memory.fits);
    let off = llama_70b("tp = 1\nreplicas = 1\nweights_offload = \"70 GB\"", "").unwrap();
    assert!(off.memory.fits);
    assert_eq!(off.requests_completed, 200);
    assert_eq!(off.memory.weights_offload_bytes_per_gpu, 70e9);
    let tp2 = llama_70b("tp = 2\nreplicas = 1", "").unwrap();
    // 70 GB over a 64 GB/s Gen5 link at 80%: about 1.4 s an iteration.
    let tpot = |r: &ServingReport| r.tpot_s.p50.unwrap();
    assert!(tpot(&off) > 1.0, "{}", tpot(&off));
    assert!(tpot(&off) > 20.0 * tpot(&tp2));
    let e = llama_70b("tp = 1\nreplicas = 1\nweights_offload = \"200 GB\"", "").unwrap_err();
    assert!(e.contains("share of the weights"), "{e}");
}

#[test]
fn a_tensor_parallel_degree_that_does_not_split_the_heads_is_refused_at_its_key() {
    let read = |p: &str| std::fs::read_to_string(common::root().join(p)).unwrap();
    // One kind of replica: Llama 3 70B's 64 heads over tp = 3.
    let one =
        read("scenarios/serving/llama-3-70b-tp4-poisson-slo.toml").replace("tp = 4", "tp = 3");
    let e = common::refused("one.toml", &one, "tp = 3 ran").to_string();
    assert!(
        e.contains("tp = 3 does not divide") && e.contains("64 attention heads"),
        "{e}"
    );
    // The first group of a mixed fleet: the error points at that group's `tp`.
    let mixed = read("scenarios/serving/llama-3.1-8b-mixed-h100-a100-l40s.toml").replacen(
        "replicas = 2",
        "replicas = 2\ntp = 3",
        1,
    );
    let e = common::refused("mixed.toml", &mixed, "a group's tp = 3 ran").to_string();
    let line = mixed.lines().position(|l| l == "tp = 3").unwrap() + 1;
    assert!(e.contains(&format!("mixed.toml:{line}:6")), "{e}");
}

#[test]
fn replicas_past_the_cluster_are_refused_even_where_the_gpu_count_would_wrap() {
    let text = std::fs::read_to_string(
        common::root().join("scenarios/serving/llama-3-70b-tp4-poisson-slo.toml"),
    )
    .unwrap();
    // 2^31 replicas x tp 4 is 2^33 GPUs: 0 in 32 bits.
    let wide = text.replace("replicas = 4", "replicas = 2147483648");
    let e = common::refused("wide.toml", &wide, "2^31 replicas ran").to_string();
    assert!(e.contains("need 8589934592 GPUs"), "{e}");
}
