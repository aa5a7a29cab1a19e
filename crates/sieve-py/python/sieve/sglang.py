"""sieve as an SGLang grammar backend (written against SGLang 0.5.23).

The package's ``sglang.srt.plugins`` entry point registers the backend in every SGLang process,
so that a server picks it by name::

    python -m sglang.launch_server --model-path HuggingFaceTB/SmolLM2-135M-Instruct --grammar-backend sieve

Requests map onto sieve constraints: ``json_schema`` (strict: a keyword sieve cannot enforce
fails the request; ``$$ANY$$`` is any JSON value), ``regex``, ``ebnf`` (GBNF) and
``structural_tag`` (the ``structures``/``triggers`` shape). ``--constrained-json-disable-any-whitespace``
applies. A constraint that does not compile fails its request with the compiler's message.
"""

import json
from typing import List

import torch
from sglang.srt.constrained.base_grammar_backend import BaseGrammarBackend, BaseGrammarObject, GrammarRow, InvalidGrammarObject

from . import CompileError, ConstraintCache, Matcher, Vocabulary, apply_token_bitmask_inplace, fill_next_token_bitmasks
from ._torch import allocate_token_bitmask


class SieveGrammar(BaseGrammarObject):
    """One request's position in its constraint."""

    def __init__(self, constraint, vocabulary):
        super().__init__()
        self.constraint = constraint
        self.vocabulary = vocabulary
        self.matcher = Matcher(constraint, vocabulary)

    def accept_token(self, token: int) -> None:
        """Takes ``token``; raises ``ValueError`` when it is not allowed (tokens after an
        end-of-sequence token are ignored)."""
        if self.matcher.is_terminated():
            return
        if not self.matcher.accept_token(token):
            raise ValueError(f"token {token} is not allowed here")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor:
        return allocate_vocab_mask(vocab_size, batch_size, device)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def fill_vocab_mask_batched(entries: List[GrammarRow], vocab_mask: torch.Tensor) -> None:
        """Fills the rows of sieve grammars on threads, the GIL released."""
        ours = [e for e in entries if isinstance(e.grammar, SieveGrammar)]
        errors = fill_next_token_bitmasks([e.grammar.matcher for e in ours], vocab_mask, [e.row for e in ours])
        for entry, error in zip(ours, errors):
            if error is not None:
                raise ValueError(f"row {entry.row}: {error}")
        others = [e for e in entries if not isinstance(e.grammar, SieveGrammar)]
        if others:
            BaseGrammarObject.fill_vocab_mask_batched(others, vocab_mask)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device) -> torch.Tensor:
        return move_vocab_mask(vocab_mask, device)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        apply_vocab_mask(logits, vocab_mask)

    def copy(self) -> "SieveGrammar":
        """A new grammar at the start of the same constraint."""
        return SieveGrammar(self.constraint, self.vocabulary)

    def try_jump_forward(self, tokenizer):
        """None: SGLang (0.5.23) does not jump forward through its grammar objects."""
        return None


def allocate_vocab_mask(vocab_size: int, batch_size: int, device) -> torch.Tensor:
    """An int32 bitmask of ``batch_size`` rows, every token allowed (rows left unfilled stay free)."""
    return allocate_token_bitmask(batch_size, vocab_size)


def move_vocab_mask(vocab_mask: torch.Tensor, device) -> torch.Tensor:
    return vocab_mask.to(device, non_blocking=True)


def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
    apply_token_bitmask_inplace(logits, vocab_mask)


class SieveGrammarBackend(BaseGrammarBackend):
    """Compiles each request's constraint (once per distinct source) for the server's tokenizer,
    with bitmask rows as wide as the model's logits."""

    # SGLang's reasoning wrapper reads these from the backend.
    allocate_vocab_mask = staticmethod(allocate_vocab_mask)
    move_vocab_mask = staticmethod(move_vocab_mask)
    apply_vocab_mask = staticmethod(apply_vocab_mask)

    def __init__(self, tokenizer, vocab_size: int, eos_token_ids=None, any_whitespace: bool = True):
        super().__init__()
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError("sieve needs a fast Hugging Face tokenizer (one with a backend_tokenizer)")
        eos = sorted(eos_token_ids) if eos_token_ids else None
        if eos is None and tokenizer.eos_token_id is not None:
            eos = [tokenizer.eos_token_id]
        self.vocabulary = Vocabulary.from_tokenizer_json(backend.to_str(), eos_ids=eos, width=max(vocab_size, len(tokenizer)))
        self.whitespace = None if any_whitespace else "compact"
        self.constraints = ConstraintCache(capacity=1024)

    def _grammar(self, compile_constraint) -> BaseGrammarObject:
        try:
            return SieveGrammar(compile_constraint(), self.vocabulary)
        except (CompileError, ValueError) as e:
            return InvalidGrammarObject(str(e))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        if key_string == "$$ANY$$":
            return self._grammar(lambda: self.constraints.json_schema("true", whitespace=self.whitespace))
        return self._grammar(lambda: self.constraints.json_schema(key_string, whitespace=self.whitespace))

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._grammar(lambda: self.constraints.regex(key_string))

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._grammar(lambda: self.constraints.grammar(key_string))

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._grammar(lambda: self.constraints.structural_tag(json.loads(key_string)))


def create(server_args, tokenizer, vocab_size, eos_token_ids):
    """SGLang's factory for the backend named ``sieve``."""
    disable_any_whitespace = getattr(server_args, "constrained_json_disable_any_whitespace", False)
    return SieveGrammarBackend(tokenizer, vocab_size, eos_token_ids, any_whitespace=not disable_any_whitespace)


def register():
    """SGLang's ``sglang.srt.plugins`` entry point: the grammar backend ``sieve``."""
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend
    from sglang.srt.server_args import add_grammar_backend_choices

    register_grammar_backend("sieve", create)
    add_grammar_backend_choices(["sieve"])
