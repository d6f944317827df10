"""Search speed, exact (issue 21 item 4): the shard shapes' op lists for the passes' bounds are
built once for both TP-overlap settings (``Bounds._ops_of``), which no op-list builder reads:
equal lists, and the same floats as each setting's own lists priced with its own pricer."""

from __future__ import annotations

import dataclasses
import itertools

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError
from trainsim.pricing import shared
from trainsim.search.lower_bounds import Bounds, pass_ops
from trainsim.search.space import Base


def _cfg(preset: str, framework: str | None, *, tp: int, sp: bool, recompute: str,
         cp: int = 1, ep: int = 1, overlap: bool = False):
    parallel = {"tp": tp, "pp": 2, "cp": cp, "sequence_parallel": sp, "recompute": recompute,
                "tp_comm_overlap": overlap}
    if ep > 1:
        parallel["ep"] = ep
    training = {"global_batch_size": 64, "micro_batch_size": 1, "seq_length": 4096}
    if framework:
        training["framework"] = framework
    return run_config_from_dict({"model": {"preset": preset}, "parallel": parallel,
                                 "training": training,
                                 "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64}})


def _hex(passes) -> list[str]:
    layer, head, emb = passes
    return [*(f"{moe}:{t.hex()}" for moe, t in sorted(layer.items())), head.hex(), emb.hex()]


def test_pass_ops_do_not_read_the_tp_overlap_and_price_as_their_own():
    """Over dense and MoE models, frameworks, TP, SP, CP and recompute modes: the op lists of
    a config and of the same config with ``tp_comm_overlap`` flipped are equal, ``_ops_of``
    hands both the same lists, and pricing them with each config's own pricer gives the bits
    that config's own lists give (so the shared entry is each setting's own). Configs that
    differ in another field the builders read (SP) get lists of their own, which differ (so
    a key that dropped it would fail here)."""
    compared = differ = 0
    for preset, fw, tp, sp, rc, cp in itertools.product(
            ("llama3-8b", "mixtral-8x7b"), (None, "megatron-core"), (2,), (True, False),
            ("none", "selective", "full"), (1, 2)):
        if cp == 2 and (rc != "selective" or preset != "llama3-8b"):
            continue  # CP: one sample per SP setting and framework
        try:
            on, off = (_cfg(preset, fw, tp=tp, sp=sp, recompute=rc, cp=cp, overlap=ov,
                            ep=2 if preset == "mixtral-8x7b" else 1) for ov in (True, False))
        except ConfigError:  # MoE with TP needs SP; TP overlap needs SP
            continue
        # (the loader's own config of each setting, and ``off`` with the switch alone flipped,
        # as a search's two pricing classes' leads of one memory group share its sections)
        flipped = dataclasses.replace(off, parallel=dataclasses.replace(off.parallel,
                                                                        tp_comm_overlap=True))
        with shared(("test_pass_ops", preset, fw, tp, sp, rc, cp)):
            b = Bounds(Base.of(off))
            shared_ops = b._ops_of(off)
            assert b._ops_of(flipped) is shared_ops
            assert pass_ops(on) == pass_ops(off) == pass_ops(flipped) == shared_ops
            for cfg in (on, flipped, off):
                for compute_only in (False, True) if cfg is off else (False,):
                    own = Bounds._priced_passes(cfg, compute_only, False)
                    kept = Bounds._priced_passes(cfg, compute_only, False, shared_ops)
                    assert _hex(kept) == _hex(own), (preset, fw, tp, sp, rc, cp, cfg is off)
            try:
                other = dataclasses.replace(off, parallel=dataclasses.replace(
                    off.parallel, sequence_parallel=not sp))
            except ConfigError:  # MoE with TP needs SP
                other = None
            if other is not None and b._ops_of(other) is not shared_ops and pass_ops(other) != shared_ops:
                differ += 1
        compared += 1
    assert compared >= 22 and differ >= 16
