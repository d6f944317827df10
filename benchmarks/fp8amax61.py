"""Issue 17 ("framework mechanisms"): does the fp8 gain fall with GPU count because of the
delayed-scaling amax all-reduce? (61st session, fp8amax61; a diagnostic: nothing here feeds
trainsim.)

    PYTHONPATH=src:benchmarks python benchmarks/fp8amax61.py [--files dgxc dgxc2502 ...]

For every fp8 row that has a bf16 twin (``fp8pair60.twins``) and a second scale of the same
twin pair (same model, release, layout and micro-batches per data-parallel rank; more GPUs,
a larger global batch: weak scaling), the table gives

* the measured growth of the step from the small to the large scale, fp8 and bf16, and the
  fp8-only part of it: ``(F2 - F1) - (B2 - B1)`` seconds (the bf16 growth is what the data
  parallelism costs both dtypes; what is left is fp8's);
* the same from trainsim's predictions;
* the amax all-reduces one rank runs per step under Transformer Engine's delayed scaling
  (one per model-chunk pass, forward and backward: ``workload.fp8_delayed``), the ranks of
  the reduction group (tp x dp x cp, or tp x cp under ``fp8_amax_tp_only``), and trainsim's
  price of one at each scale (``Pricer.price`` of ``fp8_amax_reductions``);
* the per-reduction cost the measured fp8-only growth would need if the all-reduces carried
  all of it, beside the growth of trainsim's price of one.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import defaultdict

from fp8pair60 import DTYPE_CELLS, predict, twins

DEFAULT = ["dgxc", "dgxc2502", "dgxc2505", "dgxc_llama31_2505", "nemo_launcher", "nemo_perf",
           "bridge_archive", "mlperf5", "public", "heldout"]
SCALE_CELLS = ("num_gpus", "global_batch_size")
"""Cells that may differ between the two scales of a pair (besides ``fp8pair60.DTYPE_CELLS``)."""
MANY = 256
"""Amax all-reduces a step above which a pair enters the summary (fewer cannot add up to the
measurement's ~0.05-0.1 s step-to-step spread at any plausible cost)."""
DTYPE_OPTIONS = ("precision_aware_optimizer",)
"""Options a bf16 row may state that its fp8 twin does not (dgxc 25.05: NeMo's perf scripts
turn Megatron-core's precision-aware optimizer on for bf16 only,
``training_dgxc2505.csv``'s notes): ignored in pairing, as ``fp8pair60.DTYPE_CELLS``."""


def _key(row: dict[str, str], skip: tuple[str, ...]) -> tuple:
    opts = ";".join(o for o in row.get("options", "").split(";") if o not in DTYPE_OPTIONS)
    return tuple(sorted((k, opts if k == "options" else v) for k, v in row.items()
                        if k and k not in skip))


def twin_rows(names: list[str]) -> list[tuple[str, dict[str, str], dict[str, str]]]:
    """(file, bf16 row, fp8 row) for every dense pair differing only in ``DTYPE_CELLS`` (and
    ``DTYPE_OPTIONS``): ``fp8pair60.twins`` with the options cell normalised."""
    return twins(names, key=lambda r: _key(r, DTYPE_CELLS), partners=("bf16",))

def amax_plan(row: dict[str, str], chosen) -> tuple[int, int, float]:
    """(amax all-reduces per step on one rank, ranks of the group, trainsim's seconds for one
    forward reduction of the first chunk) for an fp8 row; (0, 0, 0.0) where none is priced."""
    from trainsim.catalog.frameworks import profile_supports
    from trainsim.pricing import Pricer
    from trainsim.validate.training import row_config
    from trainsim.workload.elementwise import fp8_amax_reductions
    cfg = row_config(row, chosen)
    t, p = cfg.training, cfg.parallel
    if t.dtype != "fp8" or t.fp8_recipe != "delayed" or \
            profile_supports(cfg, "fp8_amax_tp_async"):
        return 0, 0, 0.0
    tp_only = profile_supports(cfg, "fp8_amax_tp_only")
    group = "tp_cp" if tp_only else "tp_dp_cp"
    ranks = p.tp * p.cp * (1 if tp_only else cfg.dp)
    chunks = len(cfg.virtual_stage_layers()) // p.pp
    per_step = 2 * chunks * cfg.num_microbatches
    layers = len(cfg.virtual_stage_layers()[0])
    fwd, _ = fp8_amax_reductions(layers, group)
    priced = Pricer(cfg).price(fwd)
    comm = sum(s for cat, s, _ in priced.segments if "comm" in cat) or priced.duration_s
    return per_step, ranks, comm


def scale_pairs(names: list[str]):
    """((bf16 small, fp8 small), (bf16 large, fp8 large), file) for twin pairs at two scales."""
    groups: dict[tuple, list] = defaultdict(list)
    for name, b, f in twin_rows(names):
        groups[(name, _key(f, DTYPE_CELLS + SCALE_CELLS))].append((b, f))
    out = []
    for (name, _), pairs in groups.items():
        pairs.sort(key=lambda bf: int(bf[1]["num_gpus"]))
        for i, small in enumerate(pairs):
            g1, b1 = int(small[1]["num_gpus"]), int(small[1]["global_batch_size"])
            # the next larger scale with the same batch per GPU (weak scaling)
            large = next((p for p in pairs[i + 1:] if int(p[1]["num_gpus"]) > g1 and
                          int(p[1]["global_batch_size"]) * g1 == b1 * int(p[1]["num_gpus"])),
                         None)
            if large is not None:
                out.append((small, large, name))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", default=DEFAULT)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print("| file | fp8 row (small -> large) | release | GPUs | fp8 growth s | bf16 growth s "
          "| fp8-only meas. s | fp8-only pred. s | amax AR / step | group ranks "
          "| priced AR us | needed per AR us |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|---|---:|")
    many: list[tuple[float, float, float]] = []  # pairs with >= MANY reductions a step
    for (bs, fs), (bl, fl), name in scale_pairs(args.files):
        r = {k: predict(v) for k, v in (("bs", bs), ("fs", fs), ("bl", bl), ("fl", fl))}
        if any(x.predicted is None for x in r.values()):
            print(f"| {name} | {fs['id']} | not simulated |")
            continue
        mf, mb = r["fl"].measured - r["fs"].measured, r["bl"].measured - r["bs"].measured
        pf, pb = r["fl"].predicted - r["fs"].predicted, r["bl"].predicted - r["bs"].predicted
        _, k1, c1 = amax_plan(fs, r["fs"].chosen)
        n2, k2, c2 = amax_plan(fl, r["fl"].chosen)
        need = f"{1e6 * (mf - mb) / n2:.0f}" if n2 else "-"
        print(f"| {name} | {fs['id']} -> {fl['num_gpus']} | {fs['framework']} "
              f"{fs['framework_version']} | {fs['num_gpus']} -> {fl['num_gpus']} | {mf:+.3f} "
              f"| {mb:+.3f} | {mf - mb:+.3f} | {pf - pb:+.3f} | {n2} | {k1} -> {k2} "
              f"| {1e6 * c1:.0f} -> {1e6 * c2:.0f} | {need} |")
        if n2 >= MANY:
            many.append((mf - mb, pf - pb, (mf - mb) / n2))
    if many:
        need = sorted(x[2] for x in many)[len(many) // 2]
        print(f"\n{len(many)} pairs with >= {MANY} amax all-reduces a step: fp8-only growth "
              f"measured mean {sum(x[0] for x in many) / len(many):+.3f} s (min "
              f"{min(x[0] for x in many):+.3f}, max {max(x[0] for x in many):+.3f}), predicted "
              f"mean {sum(x[1] for x in many) / len(many):+.3f} s; median needed per "
              f"all-reduce {1e6 * need:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
