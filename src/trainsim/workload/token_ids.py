"""How often a micro-batch's token ids repeat: what the embedding backward's scatter sorts
and sums (``compute.embedding_bwd``): the ids that differ, the partial segments PyTorch's
sorted path splits equal ids into, and the largest share one id takes."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

NROWS_PER_THREAD = 10
"""Equal ids one partial segment of PyTorch's sorted embedding backward sums
(pytorch/pytorch@1c94016e aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu
``NROWS_PER_THREAD``)."""
CHUNK_ROWS = 32
"""Ids the small path's feature kernel takes at a time (Embedding.cu, a block's ``blockDim.y``
rows between two ``__syncthreads``)."""
POISSON_EXACT_MAX = 50.0
"""Mean draws of one id up to which ``expected_segments`` sums its Poisson law exactly."""


def expected_segments(tokens: float, weights: np.ndarray) -> tuple[float, float]:
    """(distinct ids, partial segments) expected of ``tokens`` ids drawn independently with
    probabilities ``weights``: an id drawn n times (n Poisson with mean tokens x its weight)
    is one segment of ceil(n / ``NROWS_PER_THREAD``) partials."""
    lam = tokens * np.asarray(weights, dtype=float)
    distinct = _distinct(lam)
    # partials beyond each id's first: exact under the Poisson law for ids drawn a few times,
    # ceil(n / 10) ~ n / 10 + 0.45 (its remainder spread evenly) for ids drawn often
    mid = lam[(lam > 0.5) & (lam <= POISSON_EXACT_MAX)]
    many = lam[lam > POISSON_EXACT_MAX]
    extra = float(np.sum(many - (NROWS_PER_THREAD + 1) / 2.0) / NROWS_PER_THREAD)
    if mid.size > MID_LISTED:
        extra += _binned_beyond_first(mid, np.ones_like(mid))
    elif mid.size:
        extra += float(_beyond_first(mid).sum())
    return distinct, distinct + extra


def _distinct(lam: np.ndarray) -> float:
    """Distinct ids expected of ids drawn with Poisson means ``lam``."""
    return float(np.sum(-np.expm1(-lam)))


_DRAWS = np.arange(int(POISSON_EXACT_MAX * 4))
_LOG_FACT = np.array([math.lgamma(k + 1.0) for k in _DRAWS])
_BEYOND_FIRST = np.maximum(0.0, np.ceil(_DRAWS / NROWS_PER_THREAD) - 1.0)


def _beyond_first(mid: np.ndarray) -> np.ndarray:
    """Per id of Poisson mean ``mid`` and per draw count n below 4 x ``POISSON_EXACT_MAX``:
    P(n) x the partials past its first, ceil(n / ``NROWS_PER_THREAD``) - 1. Worked in one
    array in place: each element the same operations on the same floats as the outer
    product's expression, n x log(mean) - mean - log(n!) exponentiated (a product of two
    floats is the same in either order), so its sum is the same to the bit."""
    out = np.multiply.outer(np.log(mid), _DRAWS.astype(float))
    np.subtract(out, mid[:, None], out=out)
    np.subtract(out, _LOG_FACT[None, :], out=out)
    np.exp(out, out=out)
    np.multiply(out, _BEYOND_FIRST[None, :], out=out)
    return out


MID_LISTED = 2**16
"""Ids drawn a few times (mean 0.5 to ``POISSON_EXACT_MAX``) whose Poisson terms
``expected_segments`` sums one id at a time: an ids x 200 table (100 MiB here). Past it
(``_binned_beyond_first``) ids of nearly equal mean share one term: robust48, 1e8 tokens over
3M ids (2M such ids) took 51-64 s and GBs."""


def _binned_beyond_first(lam: np.ndarray, ids: np.ndarray) -> float:
    """Expected partials beyond each id's first, summed over ids drawn ``lam`` times on
    average (``ids[i]`` ids of mean ``lam[i]``), the means grouped in bins of ``BIN_RATIO``
    each priced at its ids' mean draw: the term is smooth in the mean, so the error is second
    order in the bin's 0.1 % spread (``benchmarks/robust49_segments.py``: <= 1.5e-9 relative
    to the exact sum at 6.5e4 to 1e8 tokens)."""
    bins = np.floor(np.log(lam / lam.min()) / math.log(BIN_RATIO)).astype(np.int64)
    count = np.bincount(bins, weights=ids)
    at = count > 0
    mean = np.bincount(bins, weights=ids * lam)[at] / count[at]
    return float((count[at][:, None] * _beyond_first(mean)).sum())


TEXT_ZIPF_S = 1.1
"""Exponent of the Zipf law (frequency of the k-th most frequent token ~ k^-s) by which the
simulator draws a micro-batch's token ids to count their repeats (``text_segments``). A stand-in
for real text, whose word frequencies follow Zipf's law with s near 1 (Zipf 1949; reviewed by
Piantadosi 2014, Psychon. Bull. Rev. 21:1112): the draw the H200 measurement
used (``benchmarks/device_checks47.py`` ``ZIPF_S``), where the distinct ids it predicts match
those counted to 1.2 % on average, 6.1 % at most, over its 36 Zipf cases
(``tests/test_emb47_scatter.py`` holds them within 7 %). Independent draws miss real text's
burstiness (a document repeats its own words), so real text has somewhat fewer distinct ids:
the scatter's partial sums and rows are upper bounds; uniform ids (a profiler's
``torch.randint``) cost 20-45 % more there at 8k-32k tokens."""


@lru_cache(maxsize=64)
def zipf_weights(vocab: int, s: float = TEXT_ZIPF_S) -> np.ndarray:
    """Probabilities of the ``vocab`` ids under Zipf's law with exponent ``s``."""
    w = 1.0 / np.arange(1, vocab + 1, dtype=float) ** s
    return w / w.sum()


VOCAB_LISTED = 2**21
"""Ids whose Zipf weights are listed one by one (16 MiB of floats; 8 x the largest vocabulary
of the catalog and the validation files, 262,144). Past it (``binned_zipf``) the ids are summed
in geometric bins: robust48, a 2**31-token vocabulary allocated 16 GiB a table and was killed
for memory, 2**26 took 22 s."""
BIN_RATIO = 1.001
"""Width of a bin past ``VOCAB_LISTED``, as the ratio of its last id to its first: the expected
draws of its ids differ by 0.11 % (s = 1.1), so one draw count stands for all (the Poisson
terms' error second order in that spread, ~1e-7)."""


@lru_cache(maxsize=8)
def binned_zipf(vocab: int, s: float = TEXT_ZIPF_S) -> tuple[np.ndarray, np.ndarray]:
    """(probability of one id, ids with it) under Zipf's law over ``vocab`` ids: the first
    ``VOCAB_LISTED`` ids one by one, the others in bins of ``BIN_RATIO`` whose ids each take
    the bin's mean weight, from the integral of k^-s over the bin (its ids k in [a, b) span
    [a - 1/2, b - 1/2]: the midpoint rule, exact to the second order in 1/a)."""
    head = 1.0 / np.arange(1, VOCAB_LISTED + 1, dtype=float) ** s
    steps = math.ceil(math.log(vocab / VOCAB_LISTED) / math.log(BIN_RATIO))
    edges = np.unique(np.round(VOCAB_LISTED * BIN_RATIO ** np.arange(steps + 1)))
    edges = np.unique(np.clip(np.append(edges + 1, [VOCAB_LISTED + 1, vocab + 1]),
                              VOCAB_LISTED + 1, vocab + 1))
    a, b = edges[:-1] - 0.5, edges[1:] - 0.5
    counts = edges[1:] - edges[:-1]
    tail = (a ** (1.0 - s) - b ** (1.0 - s)) / ((s - 1.0) * counts)
    weights = np.concatenate([head, tail])
    ids = np.concatenate([np.ones_like(head), counts])
    return weights / float(np.sum(weights * ids)), ids


def _binned_segments(tokens: float, weights: np.ndarray, ids: np.ndarray
                     ) -> tuple[float, float]:
    """``expected_segments`` of ids drawn with ``weights``, ``ids[i]`` of them weighing
    ``weights[i]`` (``binned_zipf``)."""
    lam = tokens * weights
    distinct = float(np.sum(ids * -np.expm1(-lam)))
    mid_at = (lam > 0.5) & (lam <= POISSON_EXACT_MAX)
    many = lam > POISSON_EXACT_MAX
    extra = float(np.sum(ids[many] * (lam[many] - (NROWS_PER_THREAD + 1) / 2.0))
                  / NROWS_PER_THREAD)
    mid = lam[mid_at]
    if mid.size > MID_LISTED:
        extra += _binned_beyond_first(mid, ids[mid_at])
    elif mid.size:
        extra += float((ids[mid_at][:, None] * _beyond_first(mid)).sum())
    return distinct, distinct + extra


def uniform_binned(tokens: float, rows: int) -> tuple[float, float]:
    """``expected_segments`` of ids drawn uniformly over ``rows``, the rows one bin of equal
    weight (no table of ``rows`` floats)."""
    return _binned_segments(tokens, np.array([1.0 / rows]), np.array([float(rows)]))


@lru_cache(maxsize=256)
def text_segments(tokens: int, vocab: int, tp: int = 1) -> tuple[float, float, float, float]:
    """(distinct rows, partial segments, top share, distinct among 32 ids in a row: a chunk of
    the small path, ``compute.embedding_bwd.feature_kernel_clocks``) of the ids a rank's
    embedding backward
    scatters for ``tokens`` ids of text over ``vocab`` (``TEXT_ZIPF_S``;
    ``compute.embedding_bwd.expected_segments``). Under tensor parallelism every rank scatters
    every token: Megatron-core's ``VocabParallelEmbedding.forward`` (NVIDIA/Megatron-LM
    megatron/core/tensor_parallel/layers.py, its ``F.embedding(masked_input, self.weight)``
    branch, the default outside ``deterministic_mode``) maps the ids outside the rank's vocab /
    tp rows to row 0 (``masked_input[input_mask] = 0``) before the lookup, so its backward sorts all
    ``tokens``, 1 - 1/tp of them one segment of row 0, while the slice holds 1/tp of the
    distinct ids (the frequent ids spread over the slices). Measured on an H200 (``emb_tp``,
    benchmarks/h200_2026-11-28_s47/run2): the scatter shrinks 8-25 % from TP 1 to 8, the
    fill 1/tp."""
    distinct, partials = _text_segments(tokens, vocab)
    top, chunk = _text_chunk(vocab)
    if tp > 1:
        masked = tokens * (1.0 - 1.0 / tp)
        distinct = distinct / tp + 1.0
        partials = partials / tp + math.ceil(masked / NROWS_PER_THREAD)
        chunk = chunk / tp + 1.0
        top = max(top, masked / tokens)
    return distinct, partials, top, chunk


@lru_cache(maxsize=256)
def _text_segments(tokens: int, vocab: int) -> tuple[float, float]:
    """``expected_segments`` of ``tokens`` ids of text over ``vocab``: the whole vocabulary's,
    worked once for every TP degree (``text_segments`` divides it among the ranks)."""
    if vocab > VOCAB_LISTED:
        return _binned_segments(tokens, *binned_zipf(vocab))
    return expected_segments(tokens, zipf_weights(vocab))


@lru_cache(maxsize=64)
def _text_chunk(vocab: int) -> tuple[float, float]:
    """(the most frequent id's share, distinct ids among ``CHUNK_ROWS`` in a row) of text over
    ``vocab``: a vocabulary's, whatever the micro-batch (only the distinct count is read, not
    the partial segments)."""
    if vocab > VOCAB_LISTED:
        w, ids = binned_zipf(vocab)
        return float(w[0]), _binned_segments(CHUNK_ROWS, w, ids)[0]
    w = zipf_weights(vocab)
    return float(w[0]), _distinct(CHUNK_ROWS * np.asarray(w, dtype=float))
