"""sieve: exact structured-output masks for language models.

The engine is compiled from Rust (``sieve._sieve``, the same code as the ``sieve-core`` crate):
a :class:`Vocabulary` from a tokenizer, a :class:`Constraint` compiled once per JSON Schema,
regex, grammar, choice list or structural tag, and a :class:`Matcher` per sequence that writes
its row of an int32 token bitmask of shape ``[batch, ceil(width / 32)]`` in place.

Integrations, each imported on its own: :mod:`sieve.hf` (a ``transformers`` logits
processor), :mod:`sieve.vllm` (a vLLM structured-output backend) and :mod:`sieve.sglang` (an
SGLang grammar backend).
"""

from ._sieve import (
    CompileError,
    Constraint,
    ConstraintCache,
    MatchError,
    Matcher,
    Vocabulary,
    fill_next_token_bitmasks,
)
from ._sieve import apply_token_bitmask_inplace as _apply_on_cpu

__all__ = [
    "CompileError",
    "Constraint",
    "ConstraintCache",
    "MatchError",
    "Matcher",
    "Vocabulary",
    "apply_token_bitmask_inplace",
    "fill_next_token_bitmasks",
]


def apply_token_bitmask_inplace(logits, bitmask, indices=None):
    """Sets the logits of tokens the bitmask does not allow to minus infinity, in place.

    Row ``indices[i]`` (or ``i``) of ``bitmask`` masks row ``i`` of ``logits`` (shape
    ``[batch, vocab]`` or ``[vocab]``); columns past the bitmask's bits are never allowed.
    NumPy float32 arrays and contiguous float32 torch tensors in CPU memory are masked by the
    engine, the GIL released; other torch tensors (on a GPU, or in float16/bfloat16) by torch's
    own kernels on their device.
    """
    if _needs_torch_kernel(logits):
        from ._torch import apply_token_bitmask_inplace as on_device

        on_device(logits, bitmask, indices)
    else:
        _apply_on_cpu(logits, bitmask, indices)


def _needs_torch_kernel(logits):
    if not type(logits).__module__.startswith("torch"):
        return False
    import torch

    return logits.device.type != "cpu" or logits.dtype != torch.float32 or not logits.is_contiguous()
