"""Fifteenth input sweep (27th session, fuzz15): round 14's leads, each checked against an
oracle from outside the code under test.

- ``domain``: every catalog GPU with ``gpus_per_node`` at its node presets' size, twice that,
  577 and 1,000: above 576 (NVLink 5's NVLink Switch, the largest scale-up fabric specified)
  refused in one line; above the largest system built with that GPU (the catalog's node
  presets, DGX-2's 16 V100 and HGX A100 16-GPU) a warning naming it; else silent.
- ``digits``: integers spelt with underscores (``1_000``, ``12_345``, ``1_0``, ``2_``,
  ``1__000``, ``10_00``) through ``--set``, YAML, a JSON string, a training CSV cell, a kernel
  CSV cell, ``--interval``, ``--tokens``, search's ``--tp`` list and the CLI's integer option
  type: groups of three read as the number, anything else refused, the same everywhere.
- ``heads``: a Llama config.json whose ``architectures`` is each class transformers' text task
  mappings (``modeling_auto.MODEL_FOR_{SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION,
  QUESTION_ANSWERING, MULTIPLE_CHOICE, MASKED_LM}_MAPPING_NAMES``) name with the task's suffix
  (``...ForSequenceClassification``, ``...ForMaskedLM``): refused; each class of
  ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``: read (skipped where transformers is absent).
- ``kernels``: each bundled kernel row with a shape cell filled that no bundled row of its kind
  fills (``groups`` or ``causal`` on a GEMM, ``m`` on attention ...): refused naming the cell.

    python benchmarks/fuzz_sweep15.py [--only domain,digits,heads,kernels]

Prints each failure class with its first inputs and the counts; exit 1 on any failure.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import Case, chosen_cases, only_of, report_timed, surface_class, sweep_parser
from fuzz_sweep6 import run_cases

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "src" / "trainsim" / "data" / "validation"
TMP = Path(tempfile.mkdtemp(prefix="fuzz15-"))
SURFACES = ("domain", "digits", "heads", "kernels")
BUILT = {"v100-sxm-16gb": 16, "v100-sxm-32gb": 16, "a100-sxm-40gb": 16, "a100-sxm-80gb": 16}
"""Systems built larger than any catalog node of the GPU (DGX-2; HGX A100 16-GPU)."""
TINY = {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4, "vocab_size": 1024}


def _refused(thunk: Callable[[], object], words: str) -> str | None:
    from trainsim.errors import TrainsimError
    try:
        thunk()
    except TrainsimError as exc:
        return None if words in str(exc) else f"refused without {words!r}: {str(exc)[:80]}"
    return "accepted"


def domain_cases() -> Iterator[Case]:
    import trainsim
    from trainsim import catalog

    built = dict(BUILT)
    for name in ("dgx-1-v100", "dgx-2", "dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72",
                 "gb300-nvl72", "hgx-a800", "hgx-b300", "hgx-h200", "hgx-h800", "mi250x-node",
                 "mi300x-platform"):
        n = catalog.node(name)
        built[n["gpu"]] = max(built.get(n["gpu"], 0), n["gpus_per_node"])
    for gpu in sorted(catalog.gpu_aliases()):
        size = built.get(gpu)
        for per in sorted({size or 8, 2 * (size or 8), 577, 1000}):
            def run(gpu=gpu, per=per, size=size) -> str | None:
                cfg = {"model": TINY, "training": {"global_batch_size": per, "seq_length": 512,
                                                   "dtype": "fp16"},
                       "cluster": {"gpu": gpu, "num_gpus": per, "gpus_per_node": per,
                                   "compute_db": None}}
                if per > 576:
                    return _refused(lambda: trainsim.run_config_from_dict(cfg), "576")
                with warnings.catch_warnings(record=True) as said:
                    warnings.simplefilter("always")
                    trainsim.run_config_from_dict(cfg)
                warned = any("largest NVLink domain" in str(w.message) for w in said)
                if size is not None and (per > size) != warned:
                    return "no warning past the domain built" if per > size else "warned"
                return None
            yield f"domain {gpu} x{per}", run


SPELT = {"1_000": 1000, "12_344": 12344, "1_0": None, "2_": None, "1__000": None, "10_00": None}


def digits_cases() -> Iterator[Case]:
    import click

    import trainsim
    from trainsim.catalog import apply_overrides
    from trainsim.cli_guard import POSITIVE_INT
    from trainsim.config.safe_load import parse
    from trainsim.reliability.cli import parse_duration, parse_tokens
    from trainsim.search.cli_inputs import parse_ints
    from trainsim.validate.common import count_cell

    base = {"model": TINY, "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "compute_db": None}}

    readers = {
        "set": lambda t: trainsim.run_config_from_dict(apply_overrides(
            base, [f"training.global_batch_size={t}"])).training.global_batch_size,
        "yaml": lambda t: parse(f"x: {t}", "c.yaml", "yaml")["x"],
        "json-string": lambda t: trainsim.run_config_from_dict(
            {**base, "training": {"global_batch_size": t}}).training.global_batch_size,
        "csv-cell": lambda t: count_cell({"tp": t}, "tp"),
        "interval": parse_duration, "tokens": parse_tokens,
        "search-list": lambda t: parse_ints(t, "tp")[0],
        "int-option": lambda t: POSITIVE_INT.convert(t, None, None)}
    for how, read in readers.items():
        for text, want in SPELT.items():
            def run(read=read, text=text, want=want, how=how) -> str | None:
                try:
                    got = read(text)
                except (ValueError, click.BadParameter) as exc:  # ConfigError is a ValueError
                    return None if want is None else f"refused: {str(exc)[:70]}"
                if want is None:
                    return f"read as {got!r}"
                return None if float(got) == want else f"read as {got!r}, not {want}"
            yield f"digits {how} {text}", run


def heads_cases() -> Iterator[Case]:
    try:
        from transformers.models.auto import modeling_auto as auto
    except ImportError:
        return
    from trainsim import catalog

    llama = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4,
             "num_attention_heads": 8, "vocab_size": 32000, "intermediate_size": 1376}
    tasks = ("SEQUENCE_CLASSIFICATION", "TOKEN_CLASSIFICATION", "QUESTION_ANSWERING",
             "MULTIPLE_CHOICE", "MASKED_LM", "CAUSAL_LM")
    for task in tasks:
        names = getattr(auto, f"MODEL_FOR_{task}_MAPPING_NAMES")
        suffix = "For" + task.title().replace("_", "").replace("Lm", "LM")
        classes = {c for v in names.values() for c in ([v] if isinstance(v, str) else v)}
        # the masked-LM mapping also names BART/MBart/MVP's ForConditionalGeneration and XLM's
        # WithLMHeadModel: encoder-decoder and encoder types, refused by their model_type
        for cls in sorted(c for c in classes if suffix in c or task == "CAUSAL_LM"):
            def run(cls=cls, causal=task == "CAUSAL_LM") -> str | None:
                path = TMP / f"{cls}.json"
                path.write_text(json.dumps({**llama, "architectures": [cls]}))
                if causal:
                    catalog.model_from_hf_config(path)
                    return None
                return _refused(lambda: catalog.model_from_hf_config(path), "architectures")
            yield f"heads {task.lower()} {cls}", run


def kernels_cases() -> Iterator[Case]:
    from trainsim.validate import predict_kernel_row, read_rows

    rows = read_rows(VALIDATION / "kernels_published.csv")[1]
    filled: dict[str, set[str]] = {}
    shape = ("m", "n", "k", "groups", "batch", "seq_len", "heads", "kv_heads", "head_dim",
             "causal", "tokens", "hidden", "ffn", "experts", "top_k", "bytes")
    for r in rows:
        filled.setdefault(r["kind"], set()).update(c for c in shape if (r.get(c) or "").strip())
    for kind, own in sorted(filled.items()):
        row = next(r for r in rows if r["kind"] == kind)
        for col in (c for c in shape if c not in own):
            def run(row=row, col=col) -> str | None:
                res = predict_kernel_row({**row, col: "1"}, compute_db=None)
                return None if res.error and f"column '{col}'" in res.error else \
                    f"priced ({res.predicted:.4g})" if res.error is None else res.error[:70]
            yield f"kernels {kind} {col}", run


def cases(only: set[str]) -> Iterator[Case]:
    makers = {"domain": domain_cases, "digits": digits_cases, "heads": heads_cases,
              "kernels": kernels_cases}
    yield from chosen_cases(makers, only)


def main(argv: list[str] | None = None) -> int:
    args = sweep_parser(__doc__, SURFACES).parse_args(argv)
    start = time.perf_counter()
    failures, counts = run_cases(cases(only_of(args)), surface_class)
    return report_timed(failures, counts, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
