"""Acceptance on published runs (slow): the search finds configurations at least as fast as
the published ones, which rank in its top 10; and it searches a 70B model on 1,024 GPUs fast.

    pytest -m slow tests/test_search_published.py
"""

from __future__ import annotations

import pytest

from trainsim.search import search
from trainsim.search.cli import build_base, parse_reference

pytestmark = pytest.mark.slow

CASES = {
    # Korthikanti et al. 2022 Tables 3 and 5: TP 8 x PP 8 (interleaved, 3 chunks), SP + selective
    "gpt-175b": ("gpt-175b", "a100-sxm-80gb", 64, 64, 2048, 200.0,
                 "tp=8,pp=8,vpp=3,sp=1,recompute=selective,mb=1"),
    # ibid.: TP 8 x PP 35 (3 chunks), SP + selective recompute
    "gpt-530b": ("gpt-530b", "a100-sxm-80gb", 280, 280, 2048, 200.0,
                 "tp=8,pp=35,vpp=3,sp=1,recompute=selective,mb=1"),
    # NeMo 24.07 performance summary: TP 4 x PP 4 (vpp 5) x CP 2, distributed optimizer and
    # NeMo's default communication overlaps; here in bf16
    "llama3-70b": ("llama3-70b", "h100-sxm-80gb", 64, 128, 8192, 400.0,
                   ("tp=4,pp=4,cp=2,vpp=5,sp=1,distopt=1,tp_comm_overlap=1,overlap_grad_reduce=1,"
                    "overlap_param_gather=1,overlap_p2p_comm=1")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_search_beats_and_ranks_the_published_configuration(name, executor):
    model, gpu, gpus, batch, seq, nic, ref = CASES[name]
    base = build_base(model, gpu, gpus, batch, seq, 8, nic, "bf16")
    r = search(base, [gpus], top_k=10, executor=executor,
               reference=parse_reference(ref, base, gpus))
    assert r.best is not None and r.reference is not None
    assert r.best.iteration_time_s <= r.reference.evaluation.iteration_time_s
    assert r.reference.evaluation.fits
    assert r.reference.exact and r.reference.rank <= 10
    assert r.reference.group_rank is not None and r.reference.group_rank <= 10


def test_search_over_10k_candidates_of_a_70b_model_on_1024_gpus_is_fast(executor):
    base = build_base("llama3-70b", "h100-sxm-80gb", 1024, 1024, 4096, 8, 400.0, "bf16")
    r = search(base, [1024], executor=executor, cache=None)
    assert r.stats.enumerated >= 10_000
    assert r.stats.elapsed_s < 60
