"""A ``transformers`` logits processor: ``model.generate(..., logits_processor=[...])`` whose
every sequence matches a constraint.

    vocab = sieve.Vocabulary.from_huggingface(tokenizer, width=model.config.vocab_size)
    processor = sieve.hf.LogitsProcessor(sieve.Constraint.json_schema(schema), vocab)
    out = model.generate(**inputs, logits_processor=[processor], max_new_tokens=200)

Works for any batch size, sampling, greedy and beam search: each row's matcher is found by the
row's tokens up to the step before, so beams that are reordered, copied or dropped keep the right
one, and a step whose rows continue none of the last step's starts a new ``generate`` call.
"""

import torch
import transformers

from . import Matcher, MatchError, apply_token_bitmask_inplace, fill_next_token_bitmasks


class LogitsProcessor(transformers.LogitsProcessor):
    """Masks the scores of each row to the tokens that keep its output inside ``constraint``.

    A row that has taken an end-of-sequence token is left unmasked (``generate`` pads it). A
    step in which some rows continue the last step's and some do not raises ``MatchError``.
    """

    def __init__(self, constraint, vocabulary):
        self.constraint = constraint
        self.vocabulary = vocabulary
        self.reset()

    def reset(self):
        """Forgets the sequences followed so far."""
        self._prompt_length = 0
        self._matchers = {}

    def __call__(self, input_ids, scores):
        rows = [tuple(row) for row in input_ids.tolist()]
        if not any(row[:-1] in self._matchers for row in rows):
            self.reset()
            self._prompt_length = input_ids.shape[1]
        self._matchers = self._advance(dict.fromkeys(rows))
        unique = list(self._matchers)
        words = (max(scores.shape[-1], self.vocabulary.width) + 31) // 32
        bitmask = torch.zeros((len(unique), words), dtype=torch.int32)
        done = [self._matchers[tokens].is_terminated() for tokens in unique]
        bitmask[torch.tensor(done, dtype=torch.bool)] = -1
        live = [i for i, d in enumerate(done) if not d]
        errors = fill_next_token_bitmasks([self._matchers[unique[i]] for i in live], bitmask, live)
        for i, error in zip(live, errors):
            if error is not None:
                raise MatchError(f"sequence {list(unique[i])}: {error}")
        row_of = {tokens: i for i, tokens in enumerate(unique)}
        apply_token_bitmask_inplace(scores, bitmask, [row_of[tokens] for tokens in rows])
        return scores

    def _advance(self, sequences):
        """A matcher for each row (prompt and generated tokens): a new one at the prompt, else
        the row's matcher of the step before taking the last token (a fork of it where more
        than one row continues it)."""
        children = {}
        for tokens in sequences:
            children[tokens[:-1]] = children.get(tokens[:-1], 0) + 1
        advanced = {}
        for tokens in sequences:
            if len(tokens) == self._prompt_length:
                advanced[tokens] = Matcher(self.constraint, self.vocabulary)
                continue
            parent = self._matchers.get(tokens[:-1])
            if parent is None:
                raise MatchError("a row does not continue any row of the last step")
            matcher = parent.fork() if children[tokens[:-1]] > 1 else parent
            if not matcher.is_terminated() and not matcher.accept_token(tokens[-1]):
                raise MatchError(f"token {tokens[-1]} is not allowed after {list(tokens[:-1])}")
            advanced[tokens] = matcher
        return advanced
