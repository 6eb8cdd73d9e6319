"""clustersim from Python: the same engine as the `clustersim` binary, no subprocess.

    import clustersim
    report = clustersim.run("scenarios/training/gpt3-1.3b-8xh100.toml",
                            set={"parallel.micro_batch": 4})
    report["iteration_time_s"]

`run` takes a scenario as a path, as TOML text, or as a dict of its tables, and returns the
report `clustersim run --json` prints, as a dict (without `sim.wall_s`, which only the CLI
measures). A scenario the simulator refuses raises `ScenarioError` with the file, line and
column of the mistake and the help text.

The other commands of the CLI, each giving what the command's JSON gives:

    rows = clustersim.sweep("scenarios/training/gpt3-1.3b-8xh100.toml",
                            vary={"parallel.micro_batch": [1, 2, 4, 8]})
    best = clustersim.plan("scenarios/training/llama-3-70b-64xh100.toml", top=3)
    clustersim.collective(gpu="H100", nodes=2, gpus_per_node=8, op="all-reduce",
                          size="1G", nic_bandwidth="400 Gb/s")
    clustersim.validate("validation/llm-foundry-a100.json")
    clustersim.load_trace("requests.csv")

`sweep` and `load_trace` return a pandas DataFrame when pandas is installed (a list of dicts
otherwise, or with `as_frame=False`); pandas is never required. A bad argument (what the CLI
refuses as a bad flag) raises ValueError with the CLI's message.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import os
import tempfile
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native

__all__ = ["run", "check", "sweep", "plan", "collective", "validate", "load_trace", "gpus",
           "models", "ScenarioError"]


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


def _toml_text(value: Any, bare_strings: bool = False) -> str:
    """A Python value as the TOML text `--set` and `--vary` take: booleans, numbers, lists and
    dicts as TOML writes them; a string quoted, or with `bare_strings` left as it is where the
    loader reads it back as that same string (`none`, `1f1b`, `200 Gb/s`), so that a sweep's
    column shows it as typed. Anything else is written as its `str()`, quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, (Mapping, list, tuple)):
        return _native.toml_value_of_json(json.dumps(value))
    text = value if isinstance(value, str) else str(value)
    plain = (bare_strings and text and text == text.strip()
             and not any(c in text for c in ",\"'[]{}\\\n#")
             and not _native.reads_as_toml(text))
    return text if plain else json.dumps(text)


def _sets(set: Union[Mapping[str, Any], Sequence[str], None]) -> List[str]:
    """`KEY=VALUE` overrides from a dict, each value written as TOML writes it (strings
    quoted), or a list of `KEY=VALUE` texts as `--set` takes them (a plan's `set`)."""
    if not set:
        return []
    if isinstance(set, Mapping):
        return [f"{key}={_toml_text(value)}" for key, value in set.items()]
    if isinstance(set, str) or not all(isinstance(o, str) for o in set):
        raise ValueError("set: give a dict of keys and values, e.g. {\"parallel.tp\": 4}, or "
                         "a list of \"KEY=VALUE\" options, e.g. [\"parallel.tp=4\"]")
    return list(set)


def _vary(vary: Mapping[str, Any]) -> List[str]:
    """`KEY=V1,V2,...` axes from a dict of value lists; a string is the CLI's `V1,V2,...` text
    as it is."""
    if not isinstance(vary, Mapping) or not vary:
        raise ValueError("vary: give at least one key and its values, e.g. "
                         "vary={\"parallel.tp\": [1, 2, 4]} (the CLI's --vary is required)")
    out = []
    for key, values in vary.items():
        if isinstance(values, str):
            out.append(f"{key}={values}")
            continue
        if isinstance(values, (Mapping, bytes)) or not hasattr(values, "__iter__"):
            raise ValueError(f"vary[{key!r}]: give a list of values, e.g. [1, 2, 4], "
                             f"or the CLI's text \"1,2,4\"")
        out.append(f"{key}=" + ",".join(_toml_text(v, bare_strings=True) for v in values))
    return out


def _source(scenario: Any) -> Tuple[str, bool, str]:
    """(path or TOML text, whether it is text, its name in errors) of a scenario given as a
    path, TOML text or a dict of its tables."""
    if isinstance(scenario, Mapping):
        return _native.toml_of_json(json.dumps(scenario)), True, "<dict>"
    if isinstance(scenario, str) and _is_text(scenario):
        return scenario, True, "<text>"
    return os.fspath(scenario), False, os.fspath(scenario)


@contextlib.contextmanager
def _scenario_file(scenario: Any) -> Iterator[Tuple[str, Optional[str]]]:
    """The scenario as a file for the commands that read one (a sweep loads its file at every
    point): a path as it is, TOML text or a dict written to a temporary file in the current
    directory (so that relative paths inside it resolve from there, as with `run(text)`; in
    the system's temporary folder when the current directory is read-only), removed after.
    Yields the path and, for a temporary file, the name errors should show instead of it."""
    text, is_text, name = _source(scenario)
    if not is_text:
        yield text, None
        return
    try:
        fd, path = tempfile.mkstemp(prefix=".clustersim-", suffix=".toml", dir=os.getcwd())
    except OSError:
        fd, path = tempfile.mkstemp(prefix="clustersim-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        yield path, name
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _renamed(text: str, path: str, name: Optional[str]) -> str:
    return text.replace(path, name) if name else text


def _scenario_error(e: BaseException, path: str = "", name: Optional[str] = None) -> ScenarioError:
    """`ScenarioError` from the native exception, a temporary file's path shown as `name`."""
    message, file, line, column, help = e.args
    return ScenarioError(_renamed(message, path, name), _renamed(file, path, name), line, column,
                         help)


def _frame(columns: List[str], rows: List[Dict[str, Any]], as_frame: Optional[bool]) -> Any:
    """The rows as a pandas DataFrame (columns in this order) when `as_frame` is True, or None
    and pandas imports; else the list of dicts as it is."""
    if as_frame is False:
        return rows
    try:
        import pandas
    except ImportError:
        if as_frame:
            raise
        return rows
    return pandas.DataFrame(rows, columns=columns)


def _is_text(scenario: str) -> bool:
    """TOML text has a line break or an `=`; a path has neither."""
    return "\n" in scenario or "=" in scenario


def run(scenario: Union[str, "os.PathLike[str]", Mapping[str, Any]],
        set: Union[Mapping[str, Any], Sequence[str], None] = None) -> Dict[str, Any]:
    """Simulates `scenario` (a path, TOML text, or a dict of its tables) with the overrides in
    `set` (dotted keys, e.g. {"parallel.tp": 4}, or `--set` texts such as a plan's
    ["parallel.tp=4", ...]); returns the report as a dict.

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


def sweep(scenario: Union[str, "os.PathLike[str]", Mapping[str, Any]],
          vary: Mapping[str, Any],
          metrics: Optional[List[str]] = None,
          set: Union[Mapping[str, Any], Sequence[str], None] = None,
          as_frame: Optional[bool] = None) -> Any:
    """Runs `scenario` over the grid of `vary` and returns one row per point, as
    `clustersim sweep SCENARIO --vary ... --out rows.jsonl` writes them.

    `vary` maps a dotted key to its values, e.g. {"parallel.tp": [1, 2, 4]} (the grid is the
    product, the first key varying slowest; a string value is the CLI's `V1,V2,...` text as it
    is). `metrics` lists report paths to keep instead of the kind's defaults (`--metric`);
    `set` overrides keys at every point (`--set`). The points run in parallel on every core,
    without the GIL.

    Columns, in order: `point`, `points`, one per varied key (the value as written: a number or
    boolean, or a string), `status` ("ok" or "error"), `error` (why a point failed, on one
    line; "" when ok), then the metrics (None where a report lacks one). Returns a pandas
    DataFrame with these columns when pandas is installed (or `as_frame=True`), else (or with
    `as_frame=False`) a list of dicts whose keys are in column order.

    A point that fails is an "error" row, not an exception. Raises ScenarioError when the
    scenario (with `set`) is refused, or every point is refused alike (a misspelt key);
    ValueError for a bad `vary` or `metrics`, and for a metric no row has (the CLI exits 2).
    TOML text and dicts are written to a temporary file in the current directory for the run.
    """
    sets, axes = _sets(set), _vary(vary)
    metrics = list(metrics or [])
    with _scenario_file(scenario) as (path, name):
        try:
            columns, lines, absent = _native.sweep(path, sets, axes, metrics)
        except _native.NativeScenarioError as e:
            raise _scenario_error(e, path, name) from None
    rows = [json.loads(line) for line in lines.splitlines()]
    if name:
        for row in rows:
            for key, value in row.items():
                if isinstance(value, str):
                    row[key] = _renamed(value, path, name)
    if absent:
        raise ValueError("\n".join(absent))
    return _frame(columns, rows, as_frame)


def plan(scenario: Union[str, "os.PathLike[str]", Mapping[str, Any]],
         objective: Optional[str] = None,
         top: int = 5,
         simulate: Optional[int] = None,
         slo_attainment: Optional[float] = None,
         max_latency_s: Union[float, str, None] = None,
         memory_headroom: Union[float, str, None] = None,
         set: Union[Mapping[str, Any], Sequence[str], None] = None) -> Dict[str, Any]:
    """Searches the parallel layouts of `scenario` and returns the plan `clustersim plan
    --json` prints, as a dict, without `sim` (it holds only the CLI's wall time).

    `objective`: "fastest" (the default), "cheapest" (GPU-seconds per token or video) or
    "fewest-gpus" (serving: meets `slo_attainment`, default 0.9; diffusion: meets
    `max_latency_s`). `top`: configurations to report (`plan["top"]`, best first, each with
    the `set` options that reproduce it). `simulate`: training only, the best-ranked layouts
    simulated in full (16 when None); serving and diffusion plans simulate every candidate and
    refuse it. `max_latency_s`: seconds, or text with a unit ("60 s"). `memory_headroom`:
    training and diffusion, bytes kept free on every GPU, or text with a unit ("4 GiB").
    `set` overrides keys of the scenario first.

    Raises ScenarioError when the scenario is refused or cannot be planned, ValueError for a
    bad argument (with the CLI's message, which names the CLI's flag).
    """
    if isinstance(max_latency_s, str):
        max_latency_s = _native.duration_s(max_latency_s)
    if isinstance(memory_headroom, str):
        memory_headroom = _native.size_bytes(memory_headroom)
    args = {
        "objective": objective,
        "top": top,
        "simulate": simulate,
        "slo_attainment": slo_attainment,
        "max_latency_s": max_latency_s,
        "headroom_bytes": memory_headroom,
    }
    for key in ("top", "simulate"):
        if args[key] is not None and (isinstance(args[key], bool) or args[key] < 0):
            raise ValueError(f"{key} must be a whole number of at least 1")
    text, is_text, name = _source(scenario)
    try:
        return json.loads(_native.plan_json(text, is_text, name, _sets(set), json.dumps(args)))
    except _native.NativeScenarioError as e:
        raise ScenarioError(*e.args) from None


def collective(gpu: str, nodes: int, gpus_per_node: int, op: str,
               size: Union[int, str, None] = None, *,
               minbytes: Union[int, str, None] = None,
               maxbytes: Union[int, str, None] = None,
               stepfactor: int = 2,
               algo: str = "auto",
               proto: Optional[str] = None,
               ranks: Optional[int] = None,
               tier: str = "flow",
               intra_link: Optional[str] = None,
               intra_bandwidth: Optional[str] = None,
               topology: Optional[str] = None,
               nic_bandwidth: Optional[str] = None,
               nics_per_node: Optional[int] = None,
               transport: Optional[str] = None,
               oversubscription: float = 1.0,
               routing: Optional[str] = None,
               compress_ratio: Optional[float] = None,
               compressor: Optional[str] = None,
               decompressor: Optional[str] = None,
               recompress_each_hop: bool = False,
               overlap_slice: Union[int, str, None] = None) -> Dict[str, Any]:
    """Prices one collective, or a nccl-tests-style sweep of sizes, on a cluster described by
    the arguments, and returns what `clustersim collective ... --json` prints, as a dict,
    without `sim` (the CLI's wall time).

    The arguments are the CLI's flags (`--gpus-per-node` is `gpus_per_node`; `-b`, `-e`, `-f`
    are `minbytes`, `maxbytes`, `stepfactor`). Sizes are bytes, or text with K/M/G/T suffixes
    (powers of 1024, as nccl-tests reads them); give `size`, or `minbytes` and `maxbytes`.
    Bandwidths are text with a unit ("400 Gb/s"); a cluster of several nodes needs
    `nic_bandwidth`. The report's `time_s`, `algbw_GBps`, `busbw_GBps` and `algorithm` are the
    largest size's; `results` has one entry per size.

    Raises ValueError with the CLI's message for a bad argument.
    """
    def text(v: Any) -> Optional[str]:
        return None if v is None else str(v)

    args = {
        "gpu": gpu, "nodes": nodes, "gpus_per_node": gpus_per_node, "op": op,
        "size": text(size), "minbytes": text(minbytes), "maxbytes": text(maxbytes),
        "stepfactor": stepfactor, "algo": algo, "proto": proto, "ranks": ranks, "tier": tier,
        "intra_link": intra_link, "intra_bandwidth": text(intra_bandwidth),
        "topology": topology, "nic_bandwidth": text(nic_bandwidth),
        "nics_per_node": nics_per_node, "transport": transport,
        "oversubscription": oversubscription, "routing": routing,
        "compress_ratio": compress_ratio, "compressor": text(compressor),
        "decompressor": text(decompressor), "recompress_each_hop": recompress_each_hop,
        "overlap_slice": text(overlap_slice),
    }
    return json.loads(_native.collective_json(json.dumps(args)))


def validate(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Runs every published case of the file at `path` (a JSON list of cases, such as
    validation/llm-foundry-a100.json) and returns what `clustersim validate FILE --json`
    prints, as a dict: `file`, `summary` and `rows` (each with the measured and predicted value
    and the error), without the wall times (`wall_s`, the file's and each row's).

    Raises ScenarioError when the file is missing or is not a list of cases (with the line and
    column of a JSON syntax error).
    """
    try:
        return json.loads(_native.validate_file(os.fspath(path)))
    except _native.NativeScenarioError as e:
        raise ScenarioError(*e.args) from None


def load_trace(path: Union[str, "os.PathLike[str]"],
               requests: Optional[int] = None,
               prompt_tokens: Any = None,
               output_tokens: Any = None,
               seed: int = 1,
               as_frame: Optional[bool] = None) -> Any:
    """The requests a serving scenario with `arrival = "trace"` and `trace = path` replays:
    one row per request, {"id", "arrival_s", "prompt_tokens", "output_tokens"}, in order of
    arrival, arrival times in seconds from the first request.

    The file is a CSV with a header: Azure's LLM inference traces (TIMESTAMP, ContextTokens,
    GeneratedTokens) as published, or arrival_s, prompt_tokens, output_tokens. The other
    arguments are the scenario's `[workload]` keys: `requests` replays the first N rows;
    `prompt_tokens` and `output_tokens` (a count, or a dict such as {"dist": "lognormal",
    "mean": 1000, "sigma": 0.6}) give the lengths the trace lacks, drawn with `seed`
    (`sim.seed`, 1 by default, as in a scenario). Zero counts become 1, and rows out of time
    order are sorted, as the simulator does. `path` is read as given (relative to the current
    directory). Returns a DataFrame or a list of dicts, as `sweep` does.

    Raises ScenarioError (file: `path`) when the trace cannot be read or replayed.
    """
    workload = {k: v for k, v in (("requests", requests), ("prompt_tokens", prompt_tokens),
                                  ("output_tokens", output_tokens)) if v is not None}
    try:
        rows = json.loads(_native.load_trace(os.fspath(path), json.dumps(workload), seed))
    except _native.NativeScenarioError as e:
        raise ScenarioError(*e.args) from None
    return _frame(["id", "arrival_s", "prompt_tokens", "output_tokens"], rows, as_frame)


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
