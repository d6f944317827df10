"""speed49: ``workload.token_ids.text_segments`` works the Poisson terms once per (tokens,
vocabulary) for every TP degree, the chunk's distinct ids once per vocabulary, and the
partial-segment terms in one array in place. Every figure must stay the same to the bit as
the expression it replaced (written out again here), or validate's answers could move."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from trainsim.workload import token_ids


def _reference_segments(tokens: float, weights: np.ndarray) -> tuple[float, float]:
    """``expected_segments`` as it was written before speed49 (7304b51e)."""
    lam = tokens * np.asarray(weights, dtype=float)
    distinct = float(np.sum(-np.expm1(-lam)))
    mid = lam[(lam > 0.5) & (lam <= token_ids.POISSON_EXACT_MAX)]
    many = lam[lam > token_ids.POISSON_EXACT_MAX]
    extra = float(np.sum(many - (token_ids.NROWS_PER_THREAD + 1) / 2.0)
                  / token_ids.NROWS_PER_THREAD)
    if mid.size:
        n = np.arange(int(token_ids.POISSON_EXACT_MAX * 4))
        log_fact = np.array([math.lgamma(k + 1.0) for k in n])
        pmf = np.exp(n[None, :] * np.log(mid)[:, None] - mid[:, None] - log_fact[None, :])
        beyond_first = np.maximum(0.0, np.ceil(n / token_ids.NROWS_PER_THREAD) - 1.0)
        extra += float((pmf * beyond_first[None, :]).sum())
    return distinct, distinct + extra


def _reference_text(tokens: int, vocab: int, tp: int) -> tuple[float, float, float, float]:
    """``text_segments`` as it was written before speed49, for vocabularies listed id by id."""
    w = token_ids.zipf_weights(vocab)
    distinct, partials = _reference_segments(tokens, w)
    chunk = _reference_segments(token_ids.CHUNK_ROWS, w)[0]
    top = float(w[0])
    if tp > 1:
        masked = tokens * (1.0 - 1.0 / tp)
        distinct = distinct / tp + 1.0
        partials = partials / tp + math.ceil(masked / token_ids.NROWS_PER_THREAD)
        chunk = chunk / tp + 1.0
        top = max(top, masked / tokens)
    return distinct, partials, top, chunk


# the public file's (tokens, vocabulary) pairs and edges around the small path and the bins
_TOKENS = (1, 32, 33, 3072, 3073, 8192, 65536)
_VOCABS = (1, 2, 7, 32, 1000, 32000, 50257, 50368, 51200, 128256, 151936, 250680, 262144)


@pytest.mark.parametrize("vocab", _VOCABS)
def test_text_segments_bit_identical(vocab: int) -> None:
    rng = random.Random(vocab)
    for tokens in _TOKENS:
        tps = (1, *rng.sample((2, 3, 4, 8, 16), 2))
        for tp in tps:  # several TP degrees share one cached whole-vocabulary figure
            assert token_ids.text_segments(tokens, vocab, tp) == \
                _reference_text(tokens, vocab, tp), (tokens, vocab, tp)


def test_expected_segments_bit_identical_on_any_weights() -> None:
    """The in-place terms on weights that are not Zipf's: uniform ids and random draws."""
    rng = np.random.default_rng(49)
    cases = [np.full(rows, 1.0 / rows) for rows in (1, 10, 1000, 50_000)]
    cases += [w / w.sum() for w in (rng.random(n) ** 3 for n in (5, 300, 20_000))]
    for weights in cases:
        for tokens in (1.0, 7.5, 100.0, 5000.0):
            got = token_ids.expected_segments(tokens, weights)
            assert got == _reference_segments(tokens, weights)
            assert got[1] >= got[0] > 0.0


def test_binned_vocabulary_unchanged() -> None:
    """Past ``VOCAB_LISTED`` the bins' own sums are read, as before: the chunk's distinct ids
    and the whole vocabulary's the same as the binned sums give directly."""
    vocab = token_ids.VOCAB_LISTED + 12_345
    w, ids = token_ids.binned_zipf(vocab)
    distinct, partials, top, chunk = token_ids.text_segments(8192, vocab, 1)
    assert (distinct, partials) == token_ids._binned_segments(8192, w, ids)
    assert chunk == token_ids._binned_segments(token_ids.CHUNK_ROWS, w, ids)[0]
    assert top == float(w[0])
