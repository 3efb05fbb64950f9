from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

def generate(sentences: Union[str, Iterable[str]], kinds: Union[str, Sequence[str], None] = ..., seed: int = ...,
             wordnet: Optional[str] = ...) -> List[Dict[str, Any]]: ...
