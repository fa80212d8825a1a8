# Type hints of the tova module (its compiled part is tova._tova).
from typing import Iterator, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

class Image:
    """An image encoded by an Engine's mmproj (Engine.encode_image)."""
    name: str
    width: int
    height: int
    n_tokens: int
    n_embd: int
    id: int
    encode_seconds: float

class Engine:
    """A loaded GGUF model, its tokenizer and the thread pool that runs it."""
    def __init__(
        self,
        path: Optional[str] = None,
        threads: int = 0,
        f32_activations: bool = False,
        mmap: bool = False,
        draft_model: Optional[str] = None,
        mmproj: Optional[str] = None,
    ) -> None: ...
    @property
    def has_mmproj(self) -> bool: ...
    def encode_image(self, image: Union[str, bytes, "Image"]) -> "Image": ...
    @property
    def path(self) -> str: ...
    @property
    def n_vocab(self) -> int: ...
    @property
    def n_ctx_train(self) -> int: ...
    @property
    def n_threads(self) -> int: ...
    @property
    def architecture(self) -> str: ...
    @property
    def load_seconds(self) -> float: ...
    @property
    def weight_bytes(self) -> int: ...
    @property
    def mtp_bytes(self) -> int: ...
    @property
    def n_mtp_blocks(self) -> int: ...
    def tokenize(self, text: str, add_bos: bool = True, parse_special: bool = False) -> list[int]: ...
    def detokenize(self, tokens: Sequence[int]) -> str: ...
    def is_eog(self, token: int) -> bool: ...
    def chat_prompt(
        self,
        messages: Sequence[dict],
        chat_template: str = "",
        tools: Optional[Sequence[dict]] = None,
        add_generation_prompt: bool = True,
    ) -> list[int]: ...
    def session(
        self,
        policy: str = "full",
        budget: int = 0,
        prefill: str = "exact",
        positions: str = "absolute",
        kv_type: str = "f32",
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        seed: Optional[int] = None,
        n_batch: int = 512,
        spec_type: str = "",
        spec_draft_n_max: int = 16,
        spec_draft_n_min: int = 0,
        spec_draft_p_min: float = 0.75,
        spec_ngram_size_n: int = 12,
        spec_ngram_size_m: int = 48,
        spec_ngram_mod_n_match: int = 24,
        keep_images: bool = False,
        max_kept_images: int = 8,
    ) -> Session: ...
    def load_session(
        self,
        path: str,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        seed: Optional[int] = None,
    ) -> Session: ...

class Session:
    """One conversation's state: a bounded multi-state, its sampler and history."""
    def feed(self, tokens: Sequence[int]) -> None: ...
    def logits(self) -> npt.NDArray[np.float32]: ...
    def sample(self) -> int: ...
    def decode(self) -> int: ...
    def generate(
        self,
        prompt: Union[str, Sequence[int], None] = None,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        ignore_eos: bool = False,
        max_context: int = 0,
        grammar: Optional[str] = None,
        json_schema: Union[dict, str, None] = None,
        images: Optional[Sequence[Union[str, bytes, "Image"]]] = None,
    ) -> Generator: ...
    def chat(
        self,
        messages: Sequence[dict],
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        ignore_eos: bool = False,
        max_context: int = 0,
        chat_template: str = "",
        tools: Optional[Sequence[dict]] = None,
        grammar: Optional[str] = None,
        json_schema: Union[dict, str, None] = None,
    ) -> Generator: ...
    @property
    def history(self) -> list[int]: ...
    @property
    def n_seen(self) -> int: ...
    @property
    def n_vocab(self) -> int: ...
    @property
    def cache(self) -> str: ...
    def stats(self) -> dict: ...
    def save(self, path: str) -> int: ...
    def clone(self) -> Session: ...
    def reset(self) -> None: ...

class Generator(Iterator[str]):
    """The text pieces of Session.generate()."""
    def __iter__(self) -> Generator: ...
    def __next__(self) -> str: ...
    def cancel(self) -> str: ...
    @property
    def finish_reason(self) -> Optional[str]: ...
    @property
    def unfed(self) -> int: ...
    def stats(self) -> dict: ...

class StateCache:
    """Conversation states kept for reuse (LRU, byte budget, optional spill directory)."""
    def __init__(
        self,
        engine: Engine,
        max_bytes: int = 1 << 30,
        max_states: int = 64,
        spill_dir: Optional[str] = None,
        spill_max_bytes: int = 4 << 30,
    ) -> None: ...
    def put(self, session: Session, id: str = "") -> None: ...
    def session(
        self,
        prompt: Union[str, Sequence[int]],
        policy: str = "full",
        budget: int = 0,
        prefill: str = "exact",
        positions: str = "absolute",
        kv_type: str = "f32",
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        seed: Optional[int] = None,
        keep_images: bool = False,
        max_kept_images: int = 8,
    ) -> tuple[Session, int]: ...
    def flush(self) -> None: ...
    def stats(self) -> dict: ...

def policies() -> list[str]: ...
def ppl(
    engine: Engine,
    text: Optional[str] = None,
    tokens: Optional[Sequence[int]] = None,
    policies: Sequence[str] = ("full",),
    budgets: Sequence[int] = (),
    ctx: int = 0,
    chunks: int = 0,
    kv_type: str = "f32",
    positions: Union[str, Sequence[str]] = "absolute",
    n_batch: int = 32,
    batched: bool = True,
    share_prefix: bool = True,
    stream: bool = False,
    window: int = 1024,
    max_full_ctx: int = 0,
) -> dict: ...
def eval(
    engine: Engine,
    tasks: Union[str, Sequence[str]],
    lengths: Sequence[int] = (),
    depths: Sequence[int] = (0, 25, 50, 75, 100),
    samples: int = 10,
    seed: int = 42,
    policies: Sequence[str] = ("full",),
    budgets: Sequence[int] = (),
    prefill: str = "exact",
    positions: str = "absolute",
    kv_type: str = "f32",
    chat: bool = False,
    chat_template: str = "",
    max_new: int = 0,
    template: Optional[str] = None,
    haystack: Optional[str] = None,
    n_batch: int = 32,
    batched: bool = True,
    share_prefix: bool = True,
) -> dict: ...
def parse_tool_calls(
    text: Union[str, bytes],
    format: str,
    tools: Optional[Sequence[dict]] = None,
) -> dict: ...
