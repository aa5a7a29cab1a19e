"""sieve as vLLM's structured-output backend (vLLM v1; written against vLLM 0.33).

vLLM picks its backend by a fixed list of names and has no registry for others, so sieve takes
the place of the built-in ones: :func:`install` makes vLLM's structured-output manager build a
:class:`SieveBackend` wherever it would build xgrammar's or llguidance's. In a vLLM server
the engine runs in processes of its own; the package's ``vllm.general_plugins`` entry point runs
:func:`install` in each of them when the environment says ``SIEVE_VLLM=1``::

    SIEVE_VLLM=1 vllm serve HuggingFaceTB/SmolLM2-135M-Instruct

Every request kind maps onto a sieve constraint: ``json`` (JSON Schema, strict: a keyword sieve
cannot enforce fails the request), ``json_object``, ``regex``, ``grammar`` (GBNF; a Lark grammar
fails the request), ``choice`` and ``structural_tag`` (the ``structures``/``triggers`` shape).
The engine's ``disable_any_whitespace`` and ``disable_additional_properties`` apply. A
request's stop tokens are its end-of-sequence tokens: allowed only where the output is complete.
vLLM's front end still checks each request with the engine its settings name before the engine
sees it (with ``auto``: xgrammar, then llguidance for what xgrammar refuses).
"""

import json
import os
import threading
from dataclasses import dataclass

from vllm.v1.structured_output.backend_types import StructuredOutputBackend, StructuredOutputGrammar, StructuredOutputOptions

from . import ConstraintCache, Matcher, Vocabulary
from ._torch import allocate_token_bitmask


@dataclass
class SieveGrammar(StructuredOutputGrammar):
    """One request's position in its constraint."""

    matcher: Matcher

    def accept_tokens(self, request_id, tokens):
        """Takes ``tokens`` (those after an end-of-sequence token are ignored); False when one is
        not allowed."""
        for token in tokens:
            if self.matcher.is_terminated():
                break
            if not self.matcher.accept_token(token):
                return False
        return True

    def validate_tokens(self, tokens):
        """The longest allowed prefix of the draft ``tokens`` (nothing is taken)."""
        if self.matcher.is_terminated():
            return []
        return tokens[: self.matcher.validate_tokens(tokens)]

    def rollback(self, num_tokens):
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask, batch_index):
        self.matcher.fill_next_token_bitmask(bitmask, batch_index)

    def is_terminated(self):
        return self.matcher.is_terminated()

    def reset(self):
        self.matcher.reset()


@dataclass
class SieveBackend(StructuredOutputBackend):
    """Compiles each request's constraint (once per distinct source: a shared cache) for the
    engine's tokenizer, with bitmask rows as wide as the model's logits."""

    def __post_init__(self):
        if not self.is_tokenizer_supported(self.tokenizer):
            raise ValueError("sieve needs a fast Hugging Face tokenizer (one with a backend_tokenizer)")
        config = self.vllm_config.structured_outputs_config
        self._schema_options = {
            "whitespace": "compact" if config.disable_any_whitespace else None,
            "additional_properties": not config.disable_additional_properties,
        }
        self._tokenizer_json = self.tokenizer.backend_tokenizer.to_str()
        self._width = max(self.vocab_size, len(self.tokenizer))
        self._cache = ConstraintCache(capacity=1024)
        self._vocabularies = {}
        self._lock = threading.Lock()

    @staticmethod
    def is_tokenizer_supported(tokenizer):
        """Whether sieve can read ``tokenizer`` (a fast Hugging Face one)."""
        return hasattr(tokenizer, "backend_tokenizer")

    def compile_grammar(self, request_type, grammar_spec, stop_token_ids=None):
        """A grammar for one request; raises ``sieve.CompileError`` (the request fails) when
        its constraint does not compile."""
        return SieveGrammar(Matcher(self._constraint(request_type, grammar_spec), self._vocabulary(stop_token_ids)))

    def _constraint(self, request_type, spec):
        cache = self._cache
        if request_type == StructuredOutputOptions.JSON:
            return cache.json_schema(spec, **self._schema_options)
        if request_type == StructuredOutputOptions.JSON_OBJECT:
            return cache.json_schema('{"type": "object"}', **self._schema_options)
        if request_type == StructuredOutputOptions.REGEX:
            return cache.regex(spec)
        if request_type == StructuredOutputOptions.GRAMMAR:
            return cache.grammar(spec)
        if request_type == StructuredOutputOptions.CHOICE:
            return cache.choices(json.loads(spec))
        if request_type == StructuredOutputOptions.STRUCTURAL_TAG:
            return cache.structural_tag(json.loads(spec))
        raise ValueError(f"sieve has no constraint for requests of type {request_type}")

    def _vocabulary(self, stop_token_ids):
        """The vocabulary whose end-of-sequence tokens are ``stop_token_ids`` (the tokenizer's
        own when None), made once per distinct set."""
        key = frozenset(stop_token_ids) if stop_token_ids else None
        with self._lock:
            vocab = self._vocabularies.get(key)
            if vocab is None:
                eos = sorted(key) if key else None
                if eos is None and self.tokenizer.eos_token_id is not None:
                    eos = [self.tokenizer.eos_token_id]
                vocab = Vocabulary.from_tokenizer_json(self._tokenizer_json, eos_ids=eos, width=self._width)
                self._vocabularies[key] = vocab
            return vocab

    def allocate_token_bitmask(self, max_num_seqs):
        return allocate_token_bitmask(max_num_seqs, self.vocab_size)

    def destroy(self):
        pass


def install():
    """Makes vLLM's structured-output manager, and its beam search, build a
    :class:`SieveBackend` where they would build xgrammar's or llguidance's, in this process."""
    import vllm.v1.structured_output as manager
    import vllm.v1.structured_output.backend_guidance as guidance
    import vllm.v1.structured_output.backend_xgrammar as xgrammar

    manager.XgrammarBackend = xgrammar.XgrammarBackend = SieveBackend
    manager.GuidanceBackend = guidance.GuidanceBackend = SieveBackend


def register():
    """vLLM's ``vllm.general_plugins`` entry point: :func:`install` when ``SIEVE_VLLM=1``."""
    if os.environ.get("SIEVE_VLLM") == "1":
        install()
