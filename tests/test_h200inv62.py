"""A kind of kernel one GPU's bundled database lacks is read from the database of the GPU with the
same SMs (62nd session, h200inv62: ``compute.chain.twin_database``), so the H100 and the H200 no
longer price one kernel from two models."""

from __future__ import annotations

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import run_config_from_dict
from trainsim.compute import compute_model_for
from trainsim.simulator import simulate
from trainsim.workload.ops import Attention

FA2 = Attention("attn_core.bwd", 1, 4, 4, 8192, 8192, 128, True, None, backward=True,
                impl="sdpa", dropout=True)
"""PyTorch SDPA's flash backend, which the H200's records time (keyed ``sdpa`` since the 63rd
session: ``database.SDPA_RECORD_IMPL``)."""


def _chain(gpu: str):
    return compute_model_for(catalog_gpu(gpu), "auto", catalog_gpu)


def test_the_h100_reads_fa2_from_the_h200_records():
    """Only the H200's database times SDPA's FA2; the H100 (same SMs) prices it from those records, at
    least as slow as the H200 (its HBM is slower), not from the roofline."""
    h100, h200 = _chain("h100-sxm-80gb"), _chain("h200-sxm-141gb")
    t1, source = h100.explain(FA2)
    t2, _ = h200.explain(FA2)
    assert source.startswith("database") and "scaled from h200-sxm-141gb" in source, source
    assert t2 <= t1 < 1.05 * t2
    assert h100.roofline.time(FA2) < 0.8 * t1  # the roofline alone was the old price


def test_the_own_database_answers_first_and_other_gpus_get_no_twin():
    """The twin is read only for kinds the GPU's own records lack; a GPU with no database of its
    own (A100, GH200) keeps the roofline (``compute_model_for`` scales no database to it)."""
    h100 = _chain("h100-sxm-80gb")
    cudnn = Attention("a", 1, 4, 1, 8192, 8192, 128, True, None, backward=True, impl="cudnn")
    assert "scaled" not in h100.explain(cudnn)[1]
    assert h100.twin is not None and h100.twin.db.gpu == "h200-sxm-141gb"
    assert _chain("h200-sxm-141gb").twin.db.gpu == "h100-sxm-80gb"
    assert _chain("a100-sxm-80gb").twin is None


def test_the_h200_step_is_no_slower_than_the_h100_step():
    """The brief's run (the sanity sweep's seed-3 gpu_dominance finding): 1.285 s on the H200
    against 1.233 s on the H100 on main 9af3b086."""
    def step(gpu: str) -> float:
        return simulate(run_config_from_dict({
            "model": "gpt3-5b", "parallel": {"tp": 8, "pp": 4},
            "training": {"global_batch_size": 256, "micro_batch_size": 1, "seq_length": 8192,
                         "dtype": "bf16", "framework": "meta-llama3"},
            "cluster": {"gpu": gpu, "num_gpus": 256, "gpus_per_node": 8}})).iteration_time_s

    assert step("h200-sxm-141gb") < step("h100-sxm-80gb")
