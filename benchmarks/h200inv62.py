"""Why an H200 step priced slower than the same H100 step (62nd session, h200inv62; a
diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/h200inv62.py              # the brief's run, top 12 ops
    PYTHONPATH=src python benchmarks/h200inv62.py --top 30 --framework nanotron
    PYTHONPATH=src python benchmarks/h200inv62.py --no-twin      # as main 9af3b086 priced

Simulates one run (gpt3-5b, 256 GPUs, tp 8, pp 4, seq 8192, FA2 with attention dropout: the run
``tests/test_sanity_sweep.py``'s seed 3 reached on meta-llama3 and nanotron) on the H100 SXM and
the H200 SXM, each from its bundled kernel database (``compute_db: auto``), and lists the compute
ops whose time differs most between the two: op, shape, the model that priced it on each GPU and
its time. Found (main 9af3b086): the H200's database times FlashAttention-2 (``flash2``, 32
records, benchmarks/h200_2026-11-27/, commit ba12bd57) and the H100's does not (commit 15fd54ee:
cuDNN attention only), so the H100 priced FA2 from the roofline and the H200 from records that
price it at 0.76x (forward) / 0.68x (backward) the roofline's rate at this shape: attention alone made the H200 step 4 % slower. Fixed in
``compute.chain.twin_database``: a kind of kernel a GPU's own database lacks is read from the
database of the GPU with the same SMs.
"""

from __future__ import annotations

import argparse
import warnings

from trainsim.catalog import run_config_from_dict
from trainsim.compute import chain
from trainsim.simulator import simulate

GPUS = ("h100-sxm-80gb", "h200-sxm-141gb")


def config(gpu: str, framework: str) -> dict:
    return {"model": "gpt3-5b", "parallel": {"tp": 8, "pp": 4},
            "training": {"global_batch_size": 256, "micro_batch_size": 1, "seq_length": 8192,
                         "dtype": "bf16", "framework": framework},
            "cluster": {"gpu": gpu, "num_gpus": 256, "gpus_per_node": 8}}


def priced(gpu: str, framework: str) -> tuple[float, float, dict]:
    """(step s, compute s, {op: (seconds, source)}) of the run on ``gpu``."""
    made: list[chain.ChainModel] = []
    init = chain.ChainModel.__init__

    def keep(self, *a, **k):
        init(self, *a, **k)
        made.append(self)

    chain.ChainModel.__init__ = keep
    try:
        r = simulate(run_config_from_dict(config(gpu, framework)))
    finally:
        chain.ChainModel.__init__ = init
    ops = {op: m.explain(op) for m in made for op in m._cache}
    return r.iteration_time_s, r.breakdown.get("compute_s", 0.0), ops


def shape(op) -> str:
    if hasattr(op, "m"):
        return f"m={op.m} n={op.n} k={op.k} {op.dtype}"
    if hasattr(op, "heads"):
        return (f"{op.impl} b={op.batch} h={op.heads}/{op.kv_heads} s={op.q_len} d={op.head_dim}"
                f"{' bwd' if op.backward else ''}{' dropout' if op.dropout else ''}")
    return f"{op.kernel} {op.bytes / 1e6:.0f} MB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", default="meta-llama3")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--no-twin", action="store_true",
                    help="each GPU from its own database alone (as main 9af3b086 priced)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.no_twin:
        chain.twin_database = lambda gpu, lookup_gpu: None
    (ta, ca, a), (tb, cb, b) = (priced(g, args.framework) for g in GPUS)
    print(f"{args.framework}: H100 step {ta:.4f} s (compute {ca:.4f}), "
          f"H200 step {tb:.4f} s (compute {cb:.4f})")
    rows = sorted(set(a) & set(b), key=lambda op: -abs(b[op][0] - a[op][0]))
    print(f"{'H200-H100 us':>12} {'H100 us':>9} {'H200 us':>9}  op / shape / H100 source | H200 source")
    for op in rows[:args.top]:
        (t1, s1), (t2, s2) = a[op], b[op]
        print(f"{(t2 - t1) * 1e6:+12.1f} {t1 * 1e6:9.1f} {t2 * 1e6:9.1f}  {op.name} [{shape(op)}] "
              f"{s1} | {s2}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
