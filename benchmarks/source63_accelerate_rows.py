"""Writes benchmarks/training_accelerate.csv: Hugging Face accelerate's own published tokens/s per
device for its FSDP2 example (examples/fsdp2/README.md, added in d2e6b0313, 2025-06-10, #3585
"[FSDP2] Refactor + FP8"; the same sentence at HEAD in examples/torch_native_parallelism/README.md):
Llama 3.1 8B on 8 H100 SXM, sequence 8192, "~8000 tokens per second using bf16" and "~10000 tokens
per second, per device" with torchao Float8Linear. accelerate has no trainsim profile: the rows name
it (``accelerate``) and are predicted by the no-profile path (catalog/fallback.py names accelerate
among its examples).

    python benchmarks/source63_accelerate_rows.py > benchmarks/training_accelerate.csv
    python benchmarks/source63_accelerate_rows.py --check   # README sentence, script settings

What fsdp2_fp8.py @ d2e6b0313 runs (line numbers there): the Hermes-3-Llama-3.1-8B config (the
Llama 3.1 8B shape; MODEL_ID L35) built with ``torch_dtype=torch.bfloat16`` (L172-175), a DataLoader
of ``batch_size=1`` packed sequences of ``--sequence-length`` 8192 tokens (L41, L193) on each rank,
one forward / backward / ``optimizer.step()`` a batch (no accumulation, no activation checkpointing),
FSDP2 ``fully_shard`` on each LlamaDecoderLayer and the root (L139-145), the mixed-precision policy
``param_dtype = reduce_dtype = bf16`` (``set_mixed_precision``, src/accelerate/utils/dataclasses.py
L1961-1995: ``dtype_args = {"param_dtype": dtype, "reduce_dtype": dtype}``), inductor with regional
compilation (each decoder layer compiled, L147-150), ``torch.optim.AdamW``; with fp8, torchao
Float8Linear (AORecipeKwargs; ``Float8LinearConfig`` defaults: dynamic tensorwise scaling) with
``enable_fsdp_float8_all_gather`` and ``force_recompute_fp8_weight_in_bwd`` (L152-155). Its "TPS per
device" (L225-229) is this rank's ``input_ids.shape[1]`` summed over the steps after 10 warm-up
steps, over wall time: a step is 8192 / TPS seconds. The figures are rounded in the text ("~"); the
curves they come from are images (fp8_tps.png) this script cannot read.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header()
ACC_DIR, ACC = "huggingface+accelerate", "huggingface/accelerate"
COMMIT = "d2e6b0313d696be62fe69d19f15bf3098effbad2"
"""The commit that added the sentence (``git log -S'10000 tokens per second' -- examples``)."""
README, SCRIPT = "examples/fsdp2/README.md", "examples/fsdp2/fsdp2_fp8.py"
HEAD_README = "examples/torch_native_parallelism/README.md"
SENTENCE = ("reaching ~10000 tokens per second, per device on 8x H100 GPUs, compared to ~8000 tokens "
            "per second using `bf16`")
SEQ = 8192
GPUS = 8
TPS = {"bf16": 8000.0, "fp8": 10000.0}
"""tokens / s per device, as the sentence writes them."""


def rows() -> list[dict[str, object]]:
    out = []
    for dtype, tps in TPS.items():
        r = {k: "" for k in HEADER}
        r.update(
            id=f"accel2506-llama31-8b-h100-{GPUS}-{dtype}", model="llama3.1-8b", seq_length=SEQ,
            activation="swiglu", gpu="h100-sxm-80gb", num_gpus=GPUS, gpus_per_node=8, tp=1, pp=1,
            cp=1, ep=1, sequence_parallel=0, recompute="none", zero_stage=3,
            distributed_optimizer=0, global_batch_size=GPUS, micro_batch_size=1, dtype=dtype,
            options="compile", framework="accelerate", framework_version="2025-06-10",
            attention="sdpa", grad_reduce_dtype="bf16",
            fp8_recipe="current" if dtype == "fp8" else "",
            measured_iteration_s=round(SEQ / tps, 4),
            source=(f"{ACC} {README} @ {COMMIT} (2025-06-10, #3585 '[FSDP2] Refactor + FP8') L14, "
                    "'FSDP2 + ao Float8Linear' (the same sentence in "
                    f"{HEAD_README} L53 at HEAD); the run's settings from {SCRIPT} at the same "
                    "commit"),
            note=(f"published '~{tps:.0f} tokens per second' per device with {dtype} (rounded in "
                  "the text; the curve is an image, fp8_tps.png) on '8x H100 SXM GPUs, with 8192 "
                  f"sequence length and 1000 steps' (L32): {SEQ} tokens a rank a step / {tps:.0f} "
                  f"= {SEQ / tps:.4f} s ('TPS per device' = this rank's input_ids.shape[1] summed "
                  "after 10 warm-up steps over wall time, fsdp2_fp8.py L225-229); fsdp2_fp8.py: "
                  "Hermes-3-Llama-3.1-8B config (Llama 3.1 8B), built in bf16 (L172-175), "
                  "batch_size 1 of packed 8192-token sequences a rank (L193), FSDP2 fully_shard "
                  "per LlamaDecoderLayer and the root (L139-145), param_dtype = reduce_dtype = "
                  "bf16 (set_mixed_precision: src/accelerate/utils/dataclasses.py L1961-1995), "
                  "inductor regional compilation of each decoder layer (L147-150), torch AdamW, "
                  "no activation checkpointing, no accumulation; attention not set: transformers' "
                  "default sdpa"
                  + ("; torchao Float8Linear (Float8LinearConfig defaults: dynamic tensorwise "
                     "scaling) with enable_fsdp_float8_all_gather and "
                     "force_recompute_fp8_weight_in_bwd (L152-155)" if dtype == "fp8" else "")
                  + "; whether the launch config's mixed_precision upcast the bf16 parameters to "
                  "fp32 (src/accelerate/utils/fsdp_utils.py L688-697) and the torch / "
                  "transformers versions are not stated; accelerate 1.8.0.dev0 (setup.py)"))
        out.append(r)
    return out


def check() -> list[str]:
    """The sentence at ``COMMIT`` and at HEAD, the hardware line, and the script's settings the
    rows read (sequence default, batch 1, bf16 build, the fp8 config, the TPS count)."""
    bad = []
    readme = mirror_rows.show(ACC_DIR, COMMIT, README).splitlines()
    if SENTENCE not in readme[13]:
        bad.append(f"{README} @ {COMMIT} L14: not {SENTENCE!r}")
    if "generated on 8x H100 SXM GPUs, with 8192 sequence length" not in readme[31]:
        bad.append(f"{README} @ {COMMIT} L32: no '8x H100 SXM GPUs, with 8192 sequence length'")
    head = mirror_rows.show(ACC_DIR, "HEAD", HEAD_README)
    if SENTENCE not in head:
        bad.append(f"{HEAD_README} @ HEAD: no {SENTENCE!r}")
    script = mirror_rows.show(ACC_DIR, COMMIT, SCRIPT)
    flat = " ".join(script.split())
    want = ['"--sequence-length", type=int, default=8192', "DataLoader(dataset, batch_size=1,",
            "torch_dtype=torch.bfloat16", 'transformer_cls_names_to_wrap=["LlamaDecoderLayer"]',
            "fsdp2_plugin.set_mixed_precision(args.precision)", "use_regional_compilation=True",
            "enable_fsdp_float8_all_gather=True", "force_recompute_fp8_weight_in_bwd=True",
            'num_tokens += batch["input_ids"].shape[1]', "tps = num_tokens / total_time",
            'MODEL_ID = "NousResearch/Hermes-3-Llama-3.1-8B"', "optimizer.step()"]
    bad += [f"{SCRIPT} @ {COMMIT}: no {w!r}" for w in want if w not in flat]
    for w in ("gradient_checkpointing", "gradient_accumulation", "activation_checkpointing"):
        if w in script:
            bad.append(f"{SCRIPT} @ {COMMIT}: {w!r} appears (the rows say none)")
    dc = " ".join(mirror_rows.show(ACC_DIR, COMMIT, "src/accelerate/utils/dataclasses.py").split())
    if 'dtype_args = {"param_dtype": dtype, "reduce_dtype": dtype}' not in dc:
        bad.append(f"dataclasses.py @ {COMMIT}: reduce_dtype is not the precision's dtype")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "README sentence and script settings as in the mirror")
