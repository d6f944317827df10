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
    distinct = float(np.sum(-np.expm1(-lam)))
    # partials beyond each id's first: exact under the Poisson law for ids drawn a few times,
    # ceil(n / 10) ~ n / 10 + 0.45 (its remainder spread evenly) for ids drawn often
    mid = lam[(lam > 0.5) & (lam <= POISSON_EXACT_MAX)]
    many = lam[lam > POISSON_EXACT_MAX]
    extra = float(np.sum(many - (NROWS_PER_THREAD + 1) / 2.0) / NROWS_PER_THREAD)
    if mid.size:
        n = np.arange(int(POISSON_EXACT_MAX * 4))
        log_fact = np.array([math.lgamma(k + 1.0) for k in n])
        pmf = np.exp(n[None, :] * np.log(mid)[:, None] - mid[:, None] - log_fact[None, :])
        beyond_first = np.maximum(0.0, np.ceil(n / NROWS_PER_THREAD) - 1.0)
        extra += float((pmf * beyond_first[None, :]).sum())
    return distinct, distinct + extra


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
    w = zipf_weights(vocab)
    distinct, partials = expected_segments(tokens, w)
    chunk = expected_segments(CHUNK_ROWS, w)[0]
    top = float(w[0])
    if tp > 1:
        masked = tokens * (1.0 - 1.0 / tp)
        distinct = distinct / tp + 1.0
        partials = partials / tp + math.ceil(masked / NROWS_PER_THREAD)
        chunk = chunk / tp + 1.0
        top = max(top, masked / tokens)
    return distinct, partials, top, chunk


