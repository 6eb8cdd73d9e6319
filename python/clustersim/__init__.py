"""clustersim from Python: the same engine as the `clustersim` binary, no subprocess.

    import clustersim
    report = clustersim.run("scenarios/training/gpt3-1.3b-8xh100.toml",
                            set={"parallel.micro_batch": 4})
    report["iteration_time_s"]

`run` takes a scenario as a path, as TOML text, or as a dict of its tables, and returns the
report `clustersim run --json` prints, as a dict (without `sim.wall_s`, which only the CLI
measures). A scenario the simulator refuses raises `ScenarioError` with the file, line and
column of the mistake and the help text.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _native

__all__ = ["run", "check", "gpus", "models", "ScenarioError"]


class ScenarioError(ValueError):
    """A scenario the simulator refuses: where the mistake is, and what would be valid.

    Attributes: `file` (the scenario's path or name), `line` and `column` (1-based; None when
    the mistake is not at a place in the file, e.g. in a `set` override), `help` (or None).
    `str(error)` is the whole message as the CLI prints it.
    """

    def __init__(self, message: str, file: str, line: Optional[int], column: Optional[int],
                 help: Optional[str]) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column
        self.help = help


def _sets(set: Optional[Mapping[str, Any]]) -> List[str]:
    """`KEY=VALUE` overrides from a dict, each value written as TOML writes it."""
    if not set:
        return []
    out = []
    for key, value in set.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = repr(value)
        else:
            text = json.dumps(str(value))
        out.append(f"{key}={text}")
    return out


def _is_text(scenario: str) -> bool:
    """TOML text has a line break or an `=`; a path has neither."""
    return "\n" in scenario or "=" in scenario


def run(scenario: Union[str, "os.PathLike[str]", Mapping[str, Any]],
        set: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Simulates `scenario` (a path, TOML text, or a dict of its tables) with the overrides in
    `set` (dotted keys, e.g. {"parallel.tp": 4}); returns the report as a dict.

    Relative paths inside TOML text or a dict are read from the current directory.
    Raises ScenarioError when the scenario is refused.
    """
    sets = _sets(set)
    try:
        if isinstance(scenario, Mapping):
            text = _native.toml_of_json(json.dumps(scenario))
            report = _native.run_text(text, "<dict>", sets)
        elif isinstance(scenario, str) and _is_text(scenario):
            report = _native.run_text(scenario, "<text>", sets)
        else:
            report = _native.run_path(os.fspath(scenario), sets)
    except _native.NativeScenarioError as e:
        raise ScenarioError(*e.args) from None
    return json.loads(report)


def check(*paths: Union[str, "os.PathLike[str]"]) -> List[Dict[str, Any]]:
    """Runs every scenario file under `paths` (folders are searched for `*.toml`) and judges its
    `[expect]` assertions, as `clustersim check` does: one dict per file, `{"file",
    "expectations": [{"path", "actual", "passed", "text"}]}`. Raises ScenarioError on a file the
    simulator refuses.
    """
    try:
        return json.loads(_native.check([os.fspath(p) for p in paths]))
    except _native.NativeScenarioError as e:
        raise ScenarioError(*e.args) from None


def gpus() -> List[str]:
    """The names of the GPU catalog (`clustersim list gpus`)."""
    return list(_native.gpus())


def models() -> List[str]:
    """The names of the model presets (`clustersim list models`)."""
    return list(_native.models())
