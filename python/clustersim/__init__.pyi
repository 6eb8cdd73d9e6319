import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__all__ = ["run", "check", "sweep", "plan", "collective", "validate", "load_trace", "gpus",
           "models", "ScenarioError"]

_Scenario = Union[str, os.PathLike[str], Mapping[str, Any]]
_Sets = Union[Mapping[str, Any], Sequence[str], None]

class ScenarioError(ValueError):
    file: str
    line: Optional[int]
    column: Optional[int]
    help: Optional[str]
    def __init__(self, message: str, file: str, line: Optional[int], column: Optional[int],
                 help: Optional[str]) -> None: ...

def run(scenario: _Scenario, set: _Sets = ...) -> Dict[str, Any]: ...
def check(*paths: Union[str, os.PathLike[str]]) -> List[Dict[str, Any]]: ...
def sweep(scenario: _Scenario,
          vary: Mapping[str, Union[Sequence[Any], str]],
          metrics: Optional[Sequence[str]] = ...,
          set: _Sets = ...,
          as_frame: Optional[bool] = ...) -> Any:
    """A pandas DataFrame when pandas is installed (or as_frame=True), else a list of dicts."""
    ...
def plan(scenario: _Scenario,
         objective: Optional[str] = ...,
         top: int = ...,
         simulate: Optional[int] = ...,
         slo_attainment: Optional[float] = ...,
         max_latency_s: Union[float, str, None] = ...,
         memory_headroom: Union[float, str, None] = ...,
         set: _Sets = ...) -> Dict[str, Any]: ...
def collective(gpu: str, nodes: int, gpus_per_node: int, op: str,
               size: Union[int, str, None] = ..., *,
               minbytes: Union[int, str, None] = ...,
               maxbytes: Union[int, str, None] = ...,
               stepfactor: int = ...,
               algo: str = ...,
               proto: Optional[str] = ...,
               ranks: Optional[int] = ...,
               tier: str = ...,
               intra_link: Optional[str] = ...,
               intra_bandwidth: Optional[str] = ...,
               topology: Optional[str] = ...,
               nic_bandwidth: Optional[str] = ...,
               nics_per_node: Optional[int] = ...,
               transport: Optional[str] = ...,
               oversubscription: float = ...,
               routing: Optional[str] = ...,
               compress_ratio: Optional[float] = ...,
               compressor: Optional[str] = ...,
               decompressor: Optional[str] = ...,
               recompress_each_hop: bool = ...,
               overlap_slice: Union[int, str, None] = ...) -> Dict[str, Any]: ...
def validate(path: Union[str, os.PathLike[str]]) -> Dict[str, Any]: ...
def load_trace(path: Union[str, os.PathLike[str]],
               requests: Optional[int] = ...,
               prompt_tokens: Union[int, Mapping[str, Any], None] = ...,
               output_tokens: Union[int, Mapping[str, Any], None] = ...,
               seed: int = ...,
               as_frame: Optional[bool] = ...) -> Any:
    """A pandas DataFrame when pandas is installed (or as_frame=True), else a list of dicts."""
    ...
def gpus() -> List[str]: ...
def models() -> List[str]: ...
