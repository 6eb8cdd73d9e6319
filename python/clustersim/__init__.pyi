import os
from typing import Any, Dict, List, Mapping, Optional, Union

class ScenarioError(ValueError):
    file: str
    line: Optional[int]
    column: Optional[int]
    help: Optional[str]

def run(scenario: Union[str, os.PathLike[str], Mapping[str, Any]],
        set: Optional[Mapping[str, Any]] = ...) -> Dict[str, Any]: ...
def check(*paths: Union[str, os.PathLike[str]]) -> List[Dict[str, Any]]: ...
def gpus() -> List[str]: ...
def models() -> List[str]: ...
