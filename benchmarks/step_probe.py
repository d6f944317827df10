"""Whole training steps of Hugging Face Llama models on one GPU: time and memory as a user sees them.

    PYTHONPATH=src python3 benchmarks/step_probe.py --out $OUT --budget-s 240   # the run tool
    PYTHONPATH=src python benchmarks/step_probe.py --quick --device cpu --out /tmp/sp  # code paths

The loop is validation/README.md's ``pytorch`` framework: a ``LlamaForCausalLM`` built from the
catalog model's shape (random weights, nothing downloaded), fp32 parameters, gradients and AdamW
state (torch's default implementation), bf16 only inside ``torch.autocast``, the model's own
modules with ``attn_implementation`` sdpa or eager, ``labels = input_ids`` (transformers' loss),
``optimizer.zero_grad(set_to_none=True)``; full recompute is ``gradient_checkpointing_enable``
(non-reentrant). No gradient accumulation: one micro-batch per step.

Per case: ``WARM`` steps, then ``STEPS`` timed steps, each with CUDA events after the forward,
the backward and the optimizer step; the median step and phases. Memory after the warm-up
steps (so the optimizer state exists): the peak of ``max_memory_allocated`` and
``max_memory_reserved`` over the timed steps, and the device's used memory
(``cudaMemGetInfo``: total - free, this process alone on the GPU: reserved plus the CUDA
context and library workspaces), read at the end of the timed steps. A case that runs out of
memory is recorded as such. Writes ``steps.csv`` (the training format of validation/README.md,
``memory_kind`` allocated; reserved and device in the note), ``steps_reserved.csv`` (the same
rows with ``memory_kind`` reserved) and ``step_probe.json``. Stdlib, torch and transformers;
the model shapes come from trainsim's catalog (``PYTHONPATH=src``).
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import statistics
import sys
import time
from pathlib import Path

COLUMNS = ["id", "source", "model", "seq_length", "gpu", "num_gpus", "gpus_per_node",
           "tp", "pp", "cp", "ep", "sequence_parallel", "recompute", "zero_stage",
           "distributed_optimizer", "global_batch_size", "micro_batch_size", "dtype", "options",
           "framework", "framework_version", "attention", "grad_reduce_dtype", "memory_kind",
           "measured_iteration_s", "measured_peak_memory_gib", "note"]
# (catalog model, seq, micro-batch, recompute, attention): the eager cases keep their s x s
# scores, so they run shorter or smaller than the sdpa ones to stay inside 141 GB
CASES = [
    ("llama3.2-1b", 4096, 1, "none", "sdpa"),
    ("llama3.2-1b", 4096, 2, "none", "sdpa"),
    ("llama3.2-1b", 4096, 4, "none", "sdpa"),
    ("llama3.2-1b", 4096, 4, "full", "sdpa"),
    ("llama3.2-1b", 8192, 1, "none", "sdpa"),
    ("llama3.2-3b", 4096, 1, "none", "sdpa"),
    ("llama3.2-3b", 4096, 2, "none", "sdpa"),
    ("llama3.2-3b", 4096, 2, "full", "sdpa"),
    ("llama3.2-3b", 4096, 4, "full", "sdpa"),
    ("llama3.2-1b", 4096, 1, "none", "eager"),
    ("llama3.2-1b", 2048, 2, "none", "eager"),
    ("llama3.2-3b", 2048, 1, "none", "eager"),
]
CASES_B = CASES + [  # set B (run with --clip): other shapes and vocabularies, torch.compile
    ("qwen2.5-0.5b", 4096, 4, "none", "sdpa"),
    ("qwen2.5-1.5b", 4096, 2, "none", "sdpa"),
    ("qwen2.5-3b", 4096, 1, "none", "sdpa"),
    ("llama3.2-1b", 4096, 2, "none", "sdpa", "compile"),
    ("qwen2.5-1.5b", 4096, 2, "none", "sdpa", "compile"),
]
QUICK_CASES = [("llama3.2-1b", 64, 1, "none", "sdpa"), ("llama3.2-1b", 64, 2, "full", "eager"),
               ("qwen2.5-0.5b", 64, 1, "none", "sdpa")]
WARM, STEPS = 3, 5
GIB = 2**30
CATALOG_GPU = (("H200", "h200-sxm-141gb"), ("H100", "h100-sxm-80gb"), ("B200", "b200-sxm-180gb"),
               ("A100-SXM4-80GB", "a100-sxm-80gb"))


def hf_config(name: str, quick: bool):
    """transformers' config of a catalog model (two layers of a quarter width with --quick):
    Qwen2's where the model has a QKV bias, else Llama's."""
    from transformers import LlamaConfig, Qwen2Config

    from trainsim.catalog import model as catalog_model

    m = catalog_model(name)
    shrink = 4 if quick else 1
    heads, kv = m.num_attention_heads // shrink, max(1, m.num_kv_heads // shrink)
    hidden = m.hidden_size // shrink
    qwen = bool(m.add_qkv_bias)
    return (Qwen2Config if qwen else LlamaConfig)(
        hidden_size=hidden, num_hidden_layers=2 if quick else m.num_layers,
        num_attention_heads=heads, num_key_value_heads=kv,
        **({} if qwen else {"head_dim": hidden // heads}),
        intermediate_size=m.ffn_hidden_size // shrink,
        vocab_size=m.vocab_size // (64 if quick else 1),
        max_position_embeddings=max(8192, m.max_position_embeddings or 0),
        tie_word_embeddings=bool(m.tied_embeddings), rms_norm_eps=1e-5, use_cache=False,
        attention_dropout=0.0)


def run_case(case: tuple, device: str, quick: bool, clip: bool) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    name, seq, mbs, recompute, attn = case[:5]
    compiled = "compile" in case[5:]
    cfg = hf_config(name, quick)
    cfg._attn_implementation = attn
    res: dict = {"model": name, "seq": seq, "mbs": mbs, "recompute": recompute, "attention": attn,
                 "compile": compiled, "clip": clip}
    model = opt = None  # frees the GPU memory before the next case
    try:
        with torch.device(device):  # built on the GPU: no CPU initialisation of 3B weights
            model = AutoModelForCausalLM.from_config(cfg)
        model.train()
        if recompute == "full":
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
        res["params"] = sum(p.numel() for p in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        params = list(model.parameters())
        fwd = torch.compile(model) if compiled else model
        ids = torch.randint(0, cfg.vocab_size, (mbs, seq), device=device)
        cuda = device == "cuda"
        ac = torch.autocast(device_type=device, dtype=torch.bfloat16)

        def step(marks: list | None) -> None:
            with ac:
                loss = fwd(input_ids=ids, labels=ids).loss
            if marks is not None:
                marks[1].record()
            loss.backward()
            if marks is not None:
                marks[2].record()
            if clip:  # what a Trainer does by default (max_grad_norm 1.0), before the step
                torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(1 if quick else WARM):
            step(None)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        times: list[tuple[float, float, float]] = []
        for _ in range(2 if quick else STEPS):
            if cuda:
                marks = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                marks[0].record()
                step(marks)
                marks[3].record()
                torch.cuda.synchronize()
                times.append(tuple(marks[i].elapsed_time(marks[i + 1]) / 1e3 for i in range(3)))
            else:
                t0 = time.perf_counter()
                step(None)
                times.append((time.perf_counter() - t0, 0.0, 0.0))
        totals = [sum(t) for t in times]
        res["step_s"] = statistics.median(totals)
        res["steps_s"] = totals
        res["forward_s"] = statistics.median(t[0] for t in times)
        res["backward_s"] = statistics.median(t[1] for t in times)
        res["optimizer_s"] = statistics.median(t[2] for t in times)
        if cuda:
            free, total = torch.cuda.mem_get_info()
            res["allocated_gib"] = torch.cuda.max_memory_allocated() / GIB
            res["reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
            res["device_gib"] = (total - free) / GIB
    except torch.cuda.OutOfMemoryError as exc:  # a case that does not fit is data too
        res["oom"] = str(exc).splitlines()[0][:200]
    except Exception as exc:  # noqa: BLE001 (one case's failure must not lose the others)
        res["error"] = repr(exc)[:300]
    finally:
        model = opt = fwd = params = None  # frees the GPU memory before the next case
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    return res


def _release(text: str) -> tuple[int, ...]:
    """(major, minor) of a version string such as ``2.11.0+cu130``."""
    parts = [int("".join(c for c in p if c.isdigit()) or 0) for p in text.split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts)))


def gqa_in_sdpa(env: dict) -> bool:
    """Whether this run's SDPA got GQA's K and V heads without copies: transformers from
    v4.54.0 passes ``enable_gqa=True`` (and skips ``repeat_kv``) on torch 2.5+ when no
    attention mask is given (huggingface/transformers@00c238bd
    src/transformers/integrations/sdpa_attention.py ``use_gqa_in_sdpa``), as in these steps:
    unpadded sequences, a causal mask left to ``is_causal``."""
    return _release(env["transformers"]) >= (4, 54) and _release(env["torch"]) >= (2, 5)


def csv_rows(results: list[dict], env: dict, kind: str) -> list[dict[str, str]]:
    rows = []
    for r in results:
        if "step_s" not in r or "allocated_gib" not in r:
            continue
        peak = r[f"{kind}_gib"]
        tags = ("-compile" if r.get("compile") else "") + ("-clip" if r.get("clip") else "")
        rows.append({
            "id": f"{env['prefix']}-{r['model']}-s{r['seq']}-mb{r['mbs']}-{r['recompute']}-"
                  f"{r['attention']}{tags}",
            "source": f"measured on {env['device']}, torch {env['torch']}, transformers "
                      f"{env['transformers']}, benchmarks/step_probe.py, {env['date']}",
            "model": r["model"], "seq_length": r["seq"], "gpu": env["gpu"], "num_gpus": 1,
            "gpus_per_node": 1, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "sequence_parallel": 0,
            "recompute": r["recompute"], "zero_stage": 0, "distributed_optimizer": 0,
            "global_batch_size": r["mbs"], "micro_batch_size": r["mbs"], "dtype": "bf16",
            # the loop's settings as row options: torch.compile, no_grad_clip where the run
            # stepped without clip_grad_norm_ (set A; set B runs with --clip), and enable_gqa
            # where transformers handed GQA's K/V heads to SDPA as they are (gqa_in_sdpa)
            "options": ";".join(o for o, on in (("compile", r.get("compile")),
                                                ("no_grad_clip", not r.get("clip")),
                                                ("enable_gqa", r["attention"] == "sdpa"
                                                 and gqa_in_sdpa(env))) if on),
            "framework": "pytorch", "framework_version": env["torch_release"],
            "attention": "unfused" if r["attention"] == "eager" else "sdpa",
            "grad_reduce_dtype": "fp32", "memory_kind": kind,
            "measured_iteration_s": f"{r['step_s']:.5f}",
            "measured_peak_memory_gib": f"{peak:.3f}",
            "note": (f"one GPU, no data parallelism; transformers CausalLM (random weights, "
                     f"attn_implementation={r['attention']}"
                     f"{', torch.compile of the model' if r.get('compile') else ''}), fp32 "
                     f"params/grads/AdamW (torch default), torch.autocast bf16, labels = "
                     f"input_ids, "
                     f"{'clip_grad_norm_(1.0)' if r.get('clip') else 'no gradient clipping'}"
                     f"; median of {STEPS} "
                     f"steps after {WARM}: forward {r['forward_s'] * 1e3:.1f} ms, backward "
                     f"{r['backward_s'] * 1e3:.1f} ms, optimizer {r['optimizer_s'] * 1e3:.1f} "
                     f"ms; peak allocated {r['allocated_gib']:.3f} GiB, reserved "
                     f"{r['reserved_gib']:.3f} GiB, device used {r['device_gib']:.3f} GiB")})
    return rows


def write(out: Path, results: list[dict], env: dict, elapsed: float) -> None:
    for kind, fname in (("allocated", "steps.csv"), ("reserved", "steps_reserved.csv")):
        with (out / fname).open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(csv_rows(results, env, kind))
    (out / "step_probe.json").write_text(
        json.dumps({"env": env, "results": results, "elapsed_s": round(elapsed, 1)}, indent=1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("step_probe_out"))
    p.add_argument("--budget-s", type=float, default=240.0)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--quick", action="store_true", help="tiny shapes: code paths, not data")
    p.add_argument("--set", choices=["A", "B"], default="A",
                   help="A: the 12 Llama cases; B: those and 5 more (Qwen2.5, torch.compile)")
    p.add_argument("--clip", action="store_true", help="clip_grad_norm_(1.0) before each step")
    a = p.parse_args(argv)
    import torch
    import transformers

    a.out.mkdir(parents=True, exist_ok=True)
    cuda = a.device == "cuda"
    name = torch.cuda.get_device_name() if cuda else "cpu"
    gpu = next((g for key, g in CATALOG_GPU if key in name.upper()), name)
    env = {"device": name, "gpu": gpu, "torch": torch.__version__,
           "torch_release": ".".join(torch.__version__.split("+")[0].split(".")[:2]),
           "transformers": transformers.__version__, "date": time.strftime("%Y-%m-%d"),
           "prefix": "h200step" if "H200" in name.upper() else "step", "argv": sys.argv}
    t0 = time.time()
    results: list[dict] = []
    for case in QUICK_CASES if a.quick else (CASES_B if a.set == "B" else CASES):
        if time.time() - t0 > a.budget_s:
            results.append({"case": list(case), "skipped": "budget"})
            print(json.dumps(results[-1]), flush=True)
            continue
        t = time.time()
        r = run_case(case, a.device, a.quick, a.clip)
        r["wall_s"] = round(time.time() - t, 1)
        results.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "steps_s"}), flush=True)
        write(a.out, results, env, time.time() - t0)  # after each case: a killed run keeps them
    write(a.out, results, env, time.time() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
