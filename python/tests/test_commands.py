"""sweep, plan, collective, validate and load_trace against the CLI: the same rows and reports,
the same refusals. CI installs only pytest, so every test here runs without pandas except the
one that checks the DataFrame (skipped without it)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import clustersim

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios/training/gpt3-1.3b-8xh100.toml"
SERVING = ROOT / "scenarios/serving/llama-3-70b-tp4-poisson-slo.toml"
BINARY = os.environ.get("CLUSTERSIM_BIN", str(ROOT / "target/release/clustersim"))

# A 4 x 4 grid that runs in a fraction of a second.
VARY = {"parallel.micro_batch": [1, 2, 4, 8], "parallel.recompute": ["none", "selective", "full", "op"]}
VARY_FLAGS = ["--vary", "parallel.micro_batch=1,2,4,8", "--vary", "parallel.recompute=none,selective,full,op"]

SERVING_TEXT = """
name = "Llama 3.1 8B on H100, a replayed trace"
kind = "serving"

[cluster]
gpu = "H100"
nodes = 1
gpus_per_node = 8

[model]
preset = "llama-3.1-8b"

[serving]
replicas = 1
tp = 1

[workload]
arrival = "trace"
trace = "requests.csv"
"""

TRACE = "arrival_s,prompt_tokens,output_tokens\n" + "".join(
    f"{0.1 * i:.1f},{100 + 10 * i},{20 + i}\n" for i in range(20))


def cli(*args, check=True):
    """The CLI's completed process (stdout and stderr as text)."""
    return subprocess.run([BINARY, *map(str, args)], check=check, capture_output=True, text=True)


def cli_json(*args):
    """`clustersim ARGS --json` as a dict, without `sim` (its wall time)."""
    out = json.loads(cli(*args, "--json").stdout)
    del out["sim"]
    return out


def cli_rows(tmp_path, scenario, *flags):
    """`clustersim sweep SCENARIO FLAGS --out rows.jsonl`, its rows as dicts in file order."""
    out = tmp_path / "cli-rows.jsonl"
    cli("sweep", scenario, *flags, "--out", out)
    return [json.loads(line) for line in out.read_text().splitlines()]


# -- sweep -------------------------------------------------------------------------------------


def test_a_sweep_gives_the_clis_rows(tmp_path):
    rows = clustersim.sweep(SCENARIO, vary=VARY, as_frame=False)
    expected = cli_rows(tmp_path, SCENARIO, *VARY_FLAGS)
    assert len(rows) == 16
    assert rows == expected
    assert [list(r) for r in rows] == [list(r) for r in expected], "keys in column order"
    assert rows[5]["parallel.micro_batch"] == 2 and rows[5]["parallel.recompute"] == "selective"
    assert all(r["status"] == "ok" for r in rows)


def test_set_metrics_and_quoted_values_are_the_clis_flags(tmp_path):
    rows = clustersim.sweep(str(SCENARIO), vary={"cluster.gpu": ["H100", "H200"],
                                                 "parallel.micro_batch": "2,4"},
                            metrics=["mfu", "memory.fits"], set={"parallel.recompute": "full"},
                            as_frame=False)
    expected = cli_rows(tmp_path, SCENARIO, "--vary", "cluster.gpu=H100,H200",
                        "--vary", "parallel.micro_batch=2,4", "--metric", "mfu",
                        "--metric", "memory.fits", "--set", 'parallel.recompute="full"')
    assert rows == expected
    assert list(rows[0]) == ["point", "points", "cluster.gpu", "parallel.micro_batch", "status",
                             "error", "mfu", "memory.fits"]
    # A string TOML would read as another type stays a quoted string, as on the command line.
    rows = clustersim.sweep(SCENARIO, vary={"parallel.recompute": ["true", "none"]}, as_frame=False)
    assert rows[0]["parallel.recompute"] == '"true"'
    assert rows[0]["status"] == "error" and rows[1]["status"] == "ok"


def test_without_pandas_a_sweep_is_a_list_of_dicts(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now fails
    rows = clustersim.sweep(SCENARIO, vary={"parallel.micro_batch": [1, 2]})
    assert isinstance(rows, list) and isinstance(rows[0], dict)
    assert [r["point"] for r in rows] == [0, 1]
    with pytest.raises(ImportError):
        clustersim.sweep(SCENARIO, vary={"parallel.micro_batch": [1, 2]}, as_frame=True)


def test_with_pandas_a_sweep_is_a_dataframe_in_column_order():
    pandas = pytest.importorskip("pandas")
    frame = clustersim.sweep(SCENARIO, vary=VARY)
    rows = clustersim.sweep(SCENARIO, vary=VARY, as_frame=False)
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == list(rows[0])
    assert frame.to_dict("records") == rows
    assert frame["mfu"].idxmax() == max(range(16), key=lambda i: rows[i]["mfu"])


def test_text_and_dict_scenarios_sweep_as_their_file_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    by_file = clustersim.sweep(SCENARIO, vary={"parallel.micro_batch": [1, 2]}, as_frame=False)
    by_text = clustersim.sweep(SCENARIO.read_text(), vary={"parallel.micro_batch": [1, 2]},
                               as_frame=False)
    assert by_text == by_file
    table = {"kind": "training", "cluster": {"gpu": "H100", "nodes": 1, "gpus_per_node": 8},
             "model": {"preset": "gpt3-1.3b"}, "parallel": {"global_batch": 256}}
    by_dict = clustersim.sweep(table, vary={"parallel.micro_batch": [1, 2]}, as_frame=False)
    assert [r["status"] for r in by_dict] == ["ok", "ok"]
    assert list(tmp_path.iterdir()) == [], "the temporary scenario file is removed"


def test_relative_paths_in_a_text_sweep_are_read_from_the_current_directory(tmp_path,
                                                                             monkeypatch):
    (tmp_path / "requests.csv").write_text(TRACE)
    monkeypatch.chdir(tmp_path)
    report = clustersim.run(SERVING_TEXT)
    rows = clustersim.sweep(SERVING_TEXT, vary={"serving.max_batch_size": [8, 64]},
                            metrics=["requests_completed"], as_frame=False)
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    assert [r["requests_completed"] for r in rows] == [20, 20] == [report["requests_completed"]] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["requests.csv"]


def test_a_sweep_refuses_what_the_cli_refuses(tmp_path):
    # Every point refused alike: a misspelt key, with the CLI's note.
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.sweep(SCENARIO, vary={"parallel.tpp": [1, 2]})
    assert "every point of the sweep fails to load" in str(e.value)
    assert "did you mean `tp`?" in e.value.help
    assert str(e.value) in cli("sweep", SCENARIO, "--vary", "parallel.tpp=1,2", check=False).stderr
    # Bad flags: ValueError with the CLI's message.
    bad = [
        ({"vary": {"parallel.tp": [1, 1]}}, ["--vary", "parallel.tp=1,1"]),
        ({"vary": {"parallel.tp": []}}, ["--vary", "parallel.tp="]),
        ({"vary": {"parallel.tp": [1, 2]}, "set": {"parallel.tp": 2}},
         ["--vary", "parallel.tp=1,2", "--set", "parallel.tp=2"]),
        ({"vary": {"parallel.tp": [1, 2]}, "metrics": ["mfuu"]},
         ["--vary", "parallel.tp=1,2", "--metric", "mfuu"]),
    ]
    for kwargs, flags in bad:
        with pytest.raises(ValueError) as e:
            clustersim.sweep(SCENARIO, **kwargs)
        assert not isinstance(e.value, clustersim.ScenarioError)
        run = cli("sweep", SCENARIO, *flags, "--out", tmp_path / "x.jsonl", check=False)
        assert run.returncode == 2
        assert str(e.value) in run.stderr, (str(e.value), run.stderr)
    with pytest.raises(ValueError, match="at least one key"):
        clustersim.sweep(SCENARIO, vary={})
    # A text scenario's mistake is placed in "<text>", not in the temporary file.
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.sweep('kind = "training"\n[cluster\n', vary={"parallel.tp": [1, 2]})
    assert e.value.file == "<text>" and e.value.line == 2
    assert ".clustersim-" not in str(e.value)


def test_a_failing_point_is_an_error_row_not_an_exception():
    rows = clustersim.sweep(SCENARIO, vary={"parallel.tp": [1, 3]}, as_frame=False)
    assert [r["status"] for r in rows] == ["ok", "error"]
    assert rows[1]["error"] and rows[1]["mfu"] is None


# -- plan --------------------------------------------------------------------------------------


def test_a_training_plan_is_the_clis():
    py = clustersim.plan(SCENARIO, top=3, simulate=4, objective="cheapest",
                         memory_headroom="4 GiB")
    assert py == cli_json("plan", SCENARIO, "--top", 3, "--simulate", 4, "--objective",
                          "cheapest", "--memory-headroom", "4 GiB")
    assert len(py["top"]) == 3
    assert py["memory_headroom_bytes"] == 4 * 2**30
    assert clustersim.plan(SCENARIO, top=3, simulate=4, objective="cheapest",
                           memory_headroom=4 * 2**30) == py


def test_a_serving_plan_for_an_slo_is_the_clis():
    py = clustersim.plan(SERVING, objective="fewest-gpus", slo_attainment=0.95, top=2,
                         set={"workload.requests": 100})
    assert py == cli_json("plan", SERVING, "--objective", "fewest-gpus", "--slo-attainment",
                          0.95, "--top", 2, "--set", "workload.requests=100")
    assert py["target"]["met"] and py["top"][0]["slo"]["attainment"] >= 0.95


def test_a_plan_refuses_what_the_cli_refuses():
    cases = [
        ({"objective": "fewest"}, ["--objective", "fewest"]),
        ({"top": 0}, ["--top", 0]),
        ({"simulate": 0}, ["--simulate", 0]),
    ]
    for kwargs, flags in cases:
        with pytest.raises(ValueError) as e:
            clustersim.plan(SCENARIO, **kwargs)
        run = cli("plan", SCENARIO, *flags, check=False)
        assert run.returncode == 2
        tail = str(e.value).split(": ", 1)[-1] if "objective" in kwargs else str(e.value)
        assert tail in run.stderr, (str(e.value), run.stderr)
    with pytest.raises(ValueError) as e:
        clustersim.plan(SERVING, simulate=3)
    assert str(e.value) in cli("plan", SERVING, "--simulate", 3, check=False).stderr
    with pytest.raises(ValueError, match="--max-latency"):
        clustersim.plan(SERVING, max_latency_s="soon")
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.plan(SCENARIO, objective="fewest-gpus")
    assert "cluster is fixed" in str(e.value) and e.value.help
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.plan(SCENARIO, set={"parallel.tpp": 2})
    assert "did you mean `tp`?" in e.value.help


# -- collective --------------------------------------------------------------------------------


def test_a_collective_is_the_clis():
    py = clustersim.collective("H100", 2, 8, "all-reduce", "1G", nic_bandwidth="400 Gb/s")
    assert py == cli_json("collective", "--gpu", "H100", "--nodes", 2, "--gpus-per-node", 8,
                          "--op", "all-reduce", "--size", "1G", "--nic-bandwidth", "400 Gb/s")
    sweep = clustersim.collective("A100-80GB", 4, 4, "all-gather", minbytes=1 << 20,
                                  maxbytes="64M", stepfactor=4, algo="ring", tier="analytical",
                                  nic_bandwidth="200 Gb/s", transport="roce",
                                  compress_ratio=4, compressor="200 GB/s",
                                  decompressor="400 GB/s", recompress_each_hop=True,
                                  overlap_slice="1M")
    assert sweep == cli_json("collective", "--gpu", "A100-80GB", "--nodes", 4,
                             "--gpus-per-node", 4, "--op", "all-gather", "-b", "1M", "-e", "64M",
                             "-f", 4, "--algo", "ring", "--tier", "analytical",
                             "--nic-bandwidth", "200 Gb/s", "--transport", "roce",
                             "--compress-ratio", 4, "--compressor", "200 GB/s",
                             "--decompressor", "400 GB/s", "--recompress-each-hop",
                             "--overlap-slice", "1M")
    assert [r["size_bytes"] for r in sweep["results"]] == [1 << 20, 1 << 22, 1 << 24, 1 << 26]


def test_a_collective_refuses_what_the_cli_refuses():
    base = ["--gpu", "H100", "--nodes", 2, "--gpus-per-node", 8, "--op", "all-reduce"]
    cases = [
        ({"size": "1G"}, ["--size", "1G"]),
        ({"size": "1X", "nic_bandwidth": "400 Gb/s"}, ["--size", "1X", "--nic-bandwidth", "400 Gb/s"]),
        ({"size": "1G", "nic_bandwidth": "400 Gb/s", "algo": "fast"},
         ["--size", "1G", "--nic-bandwidth", "400 Gb/s", "--algo", "fast"]),
        ({"nic_bandwidth": "400 Gb/s"}, ["--nic-bandwidth", "400 Gb/s"]),
    ]
    for kwargs, flags in cases:
        with pytest.raises(ValueError) as e:
            clustersim.collective("H100", 2, 8, "all-reduce", **kwargs)
        run = cli("collective", *base, *flags, check=False)
        assert run.returncode == 2
        assert str(e.value) in run.stderr, (str(e.value), run.stderr)


# -- validate ----------------------------------------------------------------------------------


def test_validate_is_the_clis_without_wall_times():
    path = "validation/llm-foundry-a100.json"
    py = clustersim.validate(ROOT / path)
    out = json.loads(cli("validate", ROOT / path, "--json").stdout)
    del out["wall_s"]
    for row in out["rows"]:
        del row["wall_s"]
    assert py == out
    assert py["summary"]["all"]["compared"] > 0


def test_validate_refuses_a_missing_or_broken_file(tmp_path):
    with pytest.raises(clustersim.ScenarioError, match="not found"):
        clustersim.validate(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"id": 1,\n')
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.validate(broken)
    assert e.value.line is not None and e.value.file == str(broken)


# -- load_trace --------------------------------------------------------------------------------


def test_a_trace_loads_as_the_simulator_replays_it(tmp_path, monkeypatch):
    (tmp_path / "requests.csv").write_text(TRACE)
    monkeypatch.chdir(tmp_path)
    rows = clustersim.load_trace("requests.csv", as_frame=False)
    assert len(rows) == 20
    assert rows[3] == {"id": 3, "arrival_s": pytest.approx(0.3), "prompt_tokens": 130,
                       "output_tokens": 23}
    assert clustersim.run(SERVING_TEXT)["requests_completed"] == len(rows)
    assert len(clustersim.load_trace("requests.csv", requests=5, as_frame=False)) == 5
    # Lengths the trace lacks come from the arguments, as from [workload].
    (tmp_path / "arrivals.csv").write_text("TIMESTAMP,ContextTokens\n0.0,10\n1.0,0\n")
    rows = clustersim.load_trace("arrivals.csv", output_tokens=7, as_frame=False)
    assert [(r["prompt_tokens"], r["output_tokens"]) for r in rows] == [(10, 7), (1, 7)]


def test_a_bad_trace_raises_with_its_file(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,many,3\n")
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.load_trace(bad)
    assert e.value.file == str(bad) and "not a token count" in str(e.value)
    with pytest.raises(clustersim.ScenarioError, match="cannot read"):
        clustersim.load_trace(bad.with_name("none.csv"))
