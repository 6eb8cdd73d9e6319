"""A 64-point sweep from Python (`clustersim.sweep`) against `clustersim sweep` on the same grid,
3 runs each, alternating; both use every core (rayon). Run from the repository root after
`pip install ./python` and `cargo build --release`:

    python python/benchmarks/sweep_vs_cli.py [SCENARIO]

Prints one line per run and the medians; checks that both gave the same rows."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import clustersim

SCENARIO = sys.argv[1] if len(sys.argv) > 1 else "scenarios/training/llama-3-70b-64xh100.toml"
BINARY = os.environ.get("CLUSTERSIM_BIN", "target/release/clustersim")
VARY = {
    "parallel.micro_batch": [1, 2, 4, 8],
    "parallel.recompute": ["none", "selective", "full", "op"],
    "cluster.inter_node.nic_bandwidth": ["100 Gb/s", "200 Gb/s", "400 Gb/s", "800 Gb/s"],
}
FLAGS = [f for key, values in VARY.items()
         for f in ("--vary", f"{key}=" + ",".join(map(str, values)))]

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "rows.jsonl")
    command = [BINARY, "sweep", SCENARIO, *FLAGS, "--out", out]
    print("CLI:   ", " ".join(repr(a) if " " in a else a for a in command))
    print(f"Python: clustersim.sweep({SCENARIO!r}, vary={VARY!r}, as_frame=False)")
    cli_s, py_s = [], []
    for run in range(3):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        cli_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        rows = clustersim.sweep(SCENARIO, vary=VARY, as_frame=False)
        py_s.append(time.perf_counter() - start)
        print(f"run {run + 1}: CLI {cli_s[-1]:.3f} s, Python {py_s[-1]:.3f} s")
    with open(out) as f:
        assert rows == [json.loads(line) for line in f], "the same rows"
    assert len(rows) == 64 and all(r["status"] == "ok" for r in rows)
    print(f"median: CLI {statistics.median(cli_s):.3f} s, Python {statistics.median(py_s):.3f} s "
          f"({len(rows)} points, {os.cpu_count()} cores)")
