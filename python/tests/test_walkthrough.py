"""docs/PYTHON.md's capacity-planning walk-through, run as written: every `python` block of its
section, in order, in one namespace, from the repository root; then its answers checked."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def walkthrough_code():
    text = (ROOT / "docs/PYTHON.md").read_text()
    section = text.split("## Walk-through: capacity planning", 1)[1]
    section = re.split(r"^## ", section, flags=re.M)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S)
    assert len(blocks) == 2, "the training and the serving question"
    return "\n".join(blocks)


def test_the_walkthrough_runs_and_its_answers_hold(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    ns = {}
    exec(compile(walkthrough_code(), str(ROOT / "docs/PYTHON.md"), "exec"), ns)
    printed = capsys.readouterr().out

    # Training: the choice meets the deadline and is the cheapest of those that do; the grid
    # brackets the deadline (a size that misses it), so the question was a real one.
    options, choice, deadline = ns["options"], ns["choice"], ns["DEADLINE_DAYS"]
    assert choice["days"] <= deadline
    assert all(choice["usd"] <= o["usd"] for o in options if o["days"] <= deadline)
    assert any(o["days"] > deadline for o in options)
    # The dollars are the GPU-hours at the stated price (no energy price given).
    hours = choice["gpus"] * choice["days"] * 24
    assert abs(choice["usd"] - hours * ns["USD_PER_GPU_HOUR"]) < 1e-6 * choice["usd"]
    # More GPUs train faster.
    days = [o["days"] for o in sorted(options, key=lambda o: o["gpus"])]
    assert days == sorted(days, reverse=True)
    assert f"cheapest within {deadline} days: {choice['gpus']} GPUs" in printed

    # Serving: the plan's fleet meets the target; the sweep's answer is the first replica count
    # that meets it, and no smaller than the plan's (which searched every layout).
    sized, smallest, rows, replicas = ns["sized"], ns["smallest"], ns["rows"], ns["replicas"]
    assert sized["target"]["met"] and smallest["slo"]["attainment"] >= 0.95
    assert all(r["status"] == "ok" for r in rows)
    by_replicas = {r["serving.replicas"]: r["slo.attainment"] for r in rows}
    assert by_replicas[replicas] >= 0.95
    assert all(a < 0.95 for n, a in by_replicas.items() if n < replicas)
    assert 4 * replicas >= smallest["gpus"]
    assert f"TP4 replicas needed: {replicas}" in printed
