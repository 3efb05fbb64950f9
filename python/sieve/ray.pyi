from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

def read_corpus(corpus: Union[str, PathLike], fmt: str = ...) -> Any: ...
def build(corpus: Union[str, PathLike], out: Union[str, PathLike], shards: int,
          model: Union[str, PathLike, None] = ..., *, address: Optional[str] = ..., fmt: str = ...,
          vector_factory: str = ..., token_codec: str = ..., store_tokens: bool = ..., batch_size: int = ...,
          chunk_docs: int = ..., cpus_per_shard: int = ..., max_retries: int = ..., force: bool = ...,
          num_cpus: Optional[int] = ..., log: Optional[Callable[[str], None]] = ...) -> Dict[str, Any]: ...
def main(argv: Optional[Sequence[str]] = ...) -> int: ...
