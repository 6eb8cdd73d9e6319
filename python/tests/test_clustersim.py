"""The Python package against the CLI: the same reports, the same refusals, in Python terms."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import clustersim

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios/training/gpt3-1.3b-8xh100.toml"
SERVING = ROOT / "scenarios/serving/llama-3-70b-tp4-poisson-slo.toml"


def cli(*args):
    """`clustersim ARGS --json` as a dict, without the wall time only the CLI measures."""
    binary = os.environ.get("CLUSTERSIM_BIN", str(ROOT / "target/release/clustersim"))
    out = subprocess.run([binary, *args, "--json"], check=True, capture_output=True, text=True)
    report = json.loads(out.stdout)
    del report["sim"]["wall_s"]
    return report


def test_a_scenario_file_gives_the_clis_report():
    assert clustersim.run(str(SCENARIO)) == cli("run", str(SCENARIO))
    assert clustersim.run(SCENARIO) == clustersim.run(str(SCENARIO)), "a Path works too"


def test_overrides_are_the_clis_set():
    py = clustersim.run(SERVING, set={"workload.requests": 100, "serving.scheduler": "vllm"})
    assert py == cli("run", str(SERVING), "--set", "workload.requests=100",
                     "--set", 'serving.scheduler="vllm"')
    assert py["requests_completed"] == 100


def test_toml_text_and_a_dict_give_the_files_report():
    text = SCENARIO.read_text()
    by_file = clustersim.run(SCENARIO)
    by_text = clustersim.run(text)
    assert by_text["iteration_time_s"] == by_file["iteration_time_s"]
    table = {
        "name": "GPT-3 1.3B on 8 H100 (one server, data parallel)",
        "kind": "training",
        "cluster": {"gpu": "H100", "nodes": 1, "gpus_per_node": 8},
        "model": {"preset": "gpt3-1.3b"},
        "parallel": {"dp": 8, "micro_batch": 8, "global_batch": 256},
    }
    by_dict = clustersim.run(table)
    assert by_dict["kind"] == "training"
    assert by_dict["parallel"]["dp"] == 8


def test_a_refused_scenario_raises_with_its_place_and_help():
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.run("kind = \"training\"\n[cluster]\ngpu = \"H1000\"\nnodes = 1\n")
    err = e.value
    assert err.file == "<text>"
    assert (err.line, err.column) == (3, 7)
    assert "H100" in (err.help or "") or "H100" in str(err), str(err)
    with pytest.raises(clustersim.ScenarioError) as e:
        clustersim.run(SCENARIO, set={"parallel.tpp": 2})
    assert e.value.line is None, "an override has no line in the file"
    assert "did you mean `tp`?" in e.value.help
    assert isinstance(e.value, ValueError)


def test_the_catalogs():
    assert any(name.startswith("H100") for name in clustersim.gpus())
    assert "llama-3-70b" in clustersim.models()


def test_check_judges_the_expectations_as_the_cli_does(tmp_path):
    results = clustersim.check(ROOT / "scenarios/cluster")
    assert len(results) == 4
    assert all(e["passed"] for r in results for e in r["expectations"])
    failing = tmp_path / "failing.toml"
    head = SCENARIO.read_text().split("[expect]")[0]
    failing.write_text(head + '[expect]\n"iteration_time_s" = { max = 0.001 }\n')
    (result,) = clustersim.check(failing)
    (expectation,) = result["expectations"]
    assert expectation["path"] == "iteration_time_s"
    assert not expectation["passed"]
    assert expectation["actual"] > 0.001
    with pytest.raises(clustersim.ScenarioError):
        clustersim.check(tmp_path / "missing.toml")
