//! `[[perturb]] nic_bandwidth` and `link`: a degraded NIC or link slows the groups whose routes
//! cross it, the rest wait for them where they meet, and bad entries are refused at their key.

use crate::common;

use clustersim::report::training::TrainingReport;
use common::number as num;
use common::section;
use serde_json::Value;

/// A training report's degraded links (`ranks.degraded_links`).
fn degraded(r: &TrainingReport) -> &Value {
    &section(&r.ranks, "ranks")["degraded_links"]
}

/// Four servers of eight H100 on a fat-tree of two leaves: Llama 3.1 8B over tp 8, pp 2, dp 2, with `extra`
/// lines at the end.
fn four_servers(extra: &str) -> String {
    format!(
        "kind = \"training\"\n[cluster]\ngpu = \"H100\"\nnodes = 4\ngpus_per_node = 8\n\
         [cluster.inter_node]\ntopology = \"fat-tree\"\nnic_bandwidth = \"400 Gb/s\"\nnics_per_node = 8\nleaf_downlinks = 16\n\
         [model]\npreset = \"llama-3.1-8b\"\nseq_len = 4096\n\
         [parallel]\ntp = 8\npp = 2\ndp = 2\nglobal_batch = 32\nmicro_batch = 1\n\
         [sim]\nnetwork = \"flow\"\n{extra}"
    )
}

#[test]
fn a_degraded_nic_slows_the_groups_that_cross_it_and_the_step_less_than_its_rate() {
    let healthy = common::training("d.toml", &four_servers(""), &[]);
    let at = |gbps: u32| {
        let extra = format!("[[perturb]]\nserver = 1\nnic_bandwidth = \"{gbps} Gb/s\"\n");
        common::training("d.toml", &four_servers(&extra), &[])
    };
    let (half, quarter) = (at(200), at(100));
    let t = |r: &TrainingReport| r.iteration_time_s;
    assert!(
        t(&half) > t(&healthy) * 1.001,
        "{} vs {}",
        t(&half),
        t(&healthy)
    );
    assert!(t(&quarter) > t(&half), "{} vs {}", t(&quarter), t(&half));
    // Only communication slows: the step never slows by the link's factor of 4.
    assert!(t(&quarter) < 4.0 * t(&healthy));
    assert_eq!(quarter.fidelity.ranks, "all");
    let d = degraded(&quarter);
    // Eight NICs, both directions of each cable.
    assert_eq!(d["links"].as_array().map(Vec::len), Some(16));
    assert_eq!(d["links"][0]["from"], "node1/nic0");
    assert_eq!(num(&d["links"][0], "gbps"), 100.0);
    assert!(num(d, "groups_slowed") >= 1.0);
    assert!(num(d, "slowest_ratio") > 1.0 && num(d, "slowest_ratio") <= 4.0 + 1e-9);
    // A link between switches, named as the report's links name it.
    let spine =
        four_servers("[[perturb]]\nlink = [\"leaf0\", \"spine0\"]\nbandwidth = \"50 Gb/s\"\n");
    let r = common::training("d.toml", &spine, &[]);
    assert!(t(&r) >= t(&healthy), "{} vs {}", t(&r), t(&healthy));
    assert_eq!(degraded(&r)["links"].as_array().map(Vec::len), Some(2));
}

#[test]
fn bad_link_perturbations_are_refused_at_their_key() {
    for (extra, message, line) in [
        (
            "[[perturb]]\nlink = [\"leaf0\", \"spine99\"]\nbandwidth = \"1 Gb/s\"\n",
            "no device \"spine99\"",
            23,
        ),
        (
            "[[perturb]]\nlink = [\"node0/nic0\", \"node1/nic0\"]\nbandwidth = \"1 Gb/s\"\n",
            "no link joins",
            23,
        ),
        (
            "[[perturb]]\nlink = [\"leaf0\", \"spine0\"]\n",
            "needs its `bandwidth`",
            23,
        ),
        (
            "[[perturb]]\nserver = 1\nnic_bandwidth = \"800 Gb/s\"\n",
            "above the link's own 400 Gb/s",
            24,
        ),
        (
            "[[perturb]]\nnic_bandwidth = \"100 Gb/s\"\n",
            "needs a `server`",
            23,
        ),
        (
            "[[perturb]]\nserver = 1\nnic_bandwidth = \"100 Gb/s\"\nslowdown = 1.2\n",
            "`slowdown` beside a degraded link",
            25,
        ),
        (
            "[[perturb]]\nbandwidth = \"100 Gb/s\"\n",
            "belongs to a degraded `link`",
            23,
        ),
    ] {
        let e = common::refused("d.toml", &four_servers(extra), message);
        let text = e.to_string();
        assert!(text.contains(message), "{text}\nwanted: {message}");
        assert!(
            text.contains(&format!("d.toml:{line}:")),
            "{text}\nwanted line {line}"
        );
    }
    let e = common::refused(
        "d.toml",
        &four_servers("[[perturb]]\nlink = [\"lef0\", \"spine0\"]\nbandwidth = \"1 Gb/s\"\n"),
        "typo",
    );
    assert!(e.to_string().contains("did you mean \"leaf0\""), "{e}");
}

/// Four servers' data parallelism over two leaves of four spines (4:1): the gradient reduction
/// crosses the spines, with `failed` leaf0 cables among them.
fn reduction_over_spines(failed: &[u32]) -> TrainingReport {
    let extra: String = failed
        .iter()
        .map(|s| format!("[[perturb]]\nlink = [\"leaf0\", \"spine{s}\"]\nfailed = true\n"))
        .collect();
    common::training(
        "f.toml",
        &four_servers(&extra),
        &[
            "cluster.inter_node.oversubscription=4.0",
            "parallel.pp=1",
            "parallel.dp=4",
            "sim.ranks=\"all\"",
        ],
    )
}

#[test]
fn a_failed_spine_cable_moves_its_flows_and_the_step_slows_with_each_lost_uplink() {
    let t = |r: &TrainingReport| r.iteration_time_s;
    let healthy = reduction_over_spines(&[]);
    let one = reduction_over_spines(&[0]);
    let three = reduction_over_spines(&[0, 1, 2]);
    assert!(
        t(&one) > t(&healthy) * 1.01,
        "{} vs {}",
        t(&one),
        t(&healthy)
    );
    assert!(t(&three) > t(&one) * 1.05, "{} vs {}", t(&three), t(&one));
    // Only the reduction slows: the compute is the healthy run's.
    assert_eq!(three.breakdown_s.compute, healthy.breakdown_s.compute);
    // Losing three of four uplinks cannot cost more than the cross-leaf traffic at a quarter
    // of its capacity: the collective at most four times as long.
    let d = degraded(&three);
    let worst = num(d, "slowest_ratio");
    assert!(worst > 1.0 && worst <= 4.0 + 1e-9, "{worst}");
    assert!(num(d, "groups_slowed") > 0.0);
    let links = d["links"].as_array().expect("links");
    assert_eq!(links.len(), 6, "three cables, both directions");
    assert!(
        links
            .iter()
            .all(|l| l["failed"] == true && l["gbps"] == 0.0)
    );
}

#[test]
fn failures_that_cut_a_leaf_off_or_take_a_nic_are_refused_at_their_key() {
    let all_four: String = (0..4)
        .map(|s| format!("[[perturb]]\nlink = [\"leaf0\", \"spine{s}\"]\nfailed = true\n"))
        .collect();
    let over = |extra: &str| {
        four_servers(extra).replace(
            "leaf_downlinks = 16\n",
            "leaf_downlinks = 16\noversubscription = 4.0\n",
        )
    };
    for (extra, message, line) in [
        (all_four.as_str(), "leaf0 would have no uplink left", 33),
        (
            "[[perturb]]\nlink = [\"node0/nic0\", \"leaf0\"]\nfailed = true\n",
            "stops NCCL's communicator",
            24,
        ),
        (
            "[[perturb]]\nlink = [\"leaf0\", \"spine0\"]\nfailed = false\n",
            "`failed = false` is every link's state",
            25,
        ),
        (
            "[[perturb]]\nfailed = true\n",
            "needs the `link` that failed",
            24,
        ),
        (
            "[[perturb]]\nlink = [\"leaf0\", \"spine0\"]\nfailed = true\nbandwidth = \"1 Gb/s\"\n",
            "carries nothing",
            26,
        ),
    ] {
        let e = common::refused("f.toml", &over(extra), message);
        let text = e.to_string();
        assert!(text.contains(message), "{text}\nwanted: {message}");
        assert!(
            text.contains(&format!("f.toml:{line}:")),
            "{text}\nwanted line {line}"
        );
    }
}
