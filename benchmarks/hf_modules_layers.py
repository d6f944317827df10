"""The measured Hugging Face decoder layers priced two ways: as their own eager modules
(``training.modules: eager``, what a row's ``hf_modules`` option selects) and as the DeepSpeed
profile's reference model would run them (fused modules, apex's ``scalar_two_pass`` norm): the
measurement that says which kernel list a Hugging Face model under DeepSpeed runs.

    PYTHONPATH=src python benchmarks/hf_modules_layers.py [LAYERS.jsonl]

Default file: the package's bundled copy of validation/layers_h100_measured.jsonl (33 layers of
transformers 5.17 on one H100, forward + backward). Only the records run eagerly (``mode: eager``) are compared:
torch.compile fuses the modules whatever the model's source, so its records say nothing here.
For each record: measured forward + backward, the two predictions and their signed errors; then
the MAPE and mean signed error of each pricing by family. Nothing is fitted.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import defaultdict
from pathlib import Path

from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.layers import _grad_accumulation, layer_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.shard import shard_of

DEFAULT = BUNDLED_DIR / "layers_h100_measured.jsonl"
PRICINGS = {"eager": {"modules": "eager"},
            "deepspeed reference": {"modules": "fused", "norm": "scalar_two_pass"}}
"""Name -> TrainingConfig fields replaced in the record's config."""


def layer_seconds(rec: dict, fields: dict) -> float:
    """Forward + backward seconds of one layer record priced with ``fields`` replaced in its
    training config (``validate.layers.predict_layer``'s steps)."""
    cfg = layer_config(rec, "auto")
    cfg = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, **fields))
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=cfg.model.is_moe)
    pricer = Pricer(cfg)
    t_fwd = pricer.price_ops(fwd)[0].duration_s
    return t_fwd + pricer.price_ops(backward_of(fwd, sh) + _grad_accumulation(fwd))[0].duration_s


def compare(path: Path) -> dict[str, dict[str, list[float]]]:
    """family -> pricing -> signed errors (fractions) over the file's eager records."""
    errors: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    print(f"{'record':34s} {'meas ms':>8s} " + " ".join(f"{k:>20s}" for k in PRICINGS))
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("mode", "eager") != "eager":
            continue
        measured = rec["fwd_bwd_ms"] * 1e-3
        cells = []
        for name, fields in PRICINGS.items():
            t = layer_seconds(rec, fields)
            errors[rec["family"]][name].append(t / measured - 1)
            cells.append(f"{t * 1e3:8.3f} ({100 * (t / measured - 1):+6.1f} %)")
        label = f"{rec['label']}-s{rec['seq']}-b{rec.get('mbs', 1)}"
        print(f"{label:34s} {measured * 1e3:8.3f} " + " ".join(f"{c:>20s}" for c in cells))
    return errors


def main(path: Path) -> None:
    errors = compare(path)
    print("\nfamily (eager records)    " + " ".join(f"{k + ' MAPE / signed':>32s}"
                                                  for k in PRICINGS))
    every: dict[str, list[float]] = defaultdict(list)
    for family in sorted(errors):
        cells = []
        for name in PRICINGS:
            e = errors[family][name]
            every[name] += e
            cells.append(f"{100 * sum(map(abs, e)) / len(e):6.2f} % / {100 * sum(e) / len(e):+6.2f} %")
        print(f"{family:10s} n={len(errors[family][next(iter(PRICINGS))]):3d}           "
              + " ".join(f"{c:>32s}" for c in cells))
    cells = [f"{100 * sum(map(abs, e)) / len(e):6.2f} % / {100 * sum(e) / len(e):+6.2f} %"
             for e in every.values()]
    print(f"{'all':10s} n={len(every['eager']):3d}           " + " ".join(f"{c:>32s}" for c in cells))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
