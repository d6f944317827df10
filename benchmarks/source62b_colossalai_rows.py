"""Writes benchmarks/training_colossalai.csv: hpcaitech/ColossalAI's README "Colossal-AI Benchmark"
table (added in e5fdefa6c, 2025-09-26, "update B200 info/img/benchmark"; unchanged at 4f9953be3):
Llama-like 7B and 70B models on 8 / 16 H200 or B200 GPUs, sequence 4096, each row a throughput in
samples/s beside its parallelism and "Batch Size per DP". Colossal-AI has no trainsim profile: the
rows name it (``colossalai``) and are predicted by the no-profile path. See training_colossalai.md.

    python benchmarks/source62b_colossalai_rows.py > benchmarks/training_colossalai.csv
    python benchmarks/source62b_colossalai_rows.py --check   # README lines, model sizes, FLOP rule

The table's TFLOPS/GPU column is what examples/language/performance_evaluator.py prints as "TFLOPS
per GPU by Megatron" (24 x f x b x s x L x h^2 x (1 + s/6h + V/16Lh), f = 3 + grad_checkpoint) for
the 7b / 70b configs of examples/language/llama/benchmark.py: every row's figure comes back from its
throughput to 0.1 % with f = 4 only, so the rows ran with gradient checkpointing (``recompute``
``full``: ``model.gradient_checkpointing_enable()``, benchmark.py -g), and the sizes are those
configs' (Llama-2 7B: transformers' LlamaConfig defaults; 70B: 8192 / 80 layers / 64 heads / 8 KV
heads / 28672). Where the row has no pipeline, benchmark.py's loop runs each rank's whole batch in
one forward (L295 ``prepare_dataloader(dataset, batch_size=args.batch_size, ...)``, L382
``outputs = model(**batch)`` once a step): the micro-batch is the "Batch Size per DP" cell. With a
pipeline the micro-batch is ``--mbs`` (L92, default 1), which the README does not state: left
empty. Two of the four rows are not taken (see ``NOT_TAKEN``).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header()
CAI_DIR, CAI = "hpcaitech+ColossalAI", "hpcaitech/ColossalAI"
COMMIT = "e5fdefa6c"
"""The commit that added the table (``git log -S'17.13 samp/s' -- README.md``)."""
SIZES = {"7B": ("llama2-7b", 4096, 32, 32, 32, 11008, 32000),
         "70B": ("llama2-70b", 8192, 80, 64, 8, 28672, 32000)}
"""Model -> (catalog name, hidden, layers, heads, KV heads, FFN, vocabulary): benchmark.py
MODEL_CONFIGS "7b" (``LlamaConfig(max_position_embeddings=4096)``: transformers' defaults, Llama-2
7B's sizes) and "70b" (hidden 8192, FFN 28672, 80 layers, 64 heads, 8 KV heads, default vocabulary
32000)."""
GPUS = {"H200": "h200-sxm-141gb", "B200": "b200-sxm-180gb"}
MIB_PER_GIB = 1024


@dataclasses.dataclass(frozen=True)
class Row:
    line: int
    """The table line in README.md at ``COMMIT`` (1-based)."""
    cells: tuple[str, ...]
    """The line's cells as written: GPU, GPUs, size, parallelism, batch per DP, seqlen,
    throughput, TFLOPS/GPU, peak memory (MiB)."""
    gpu: str
    """The GPU the row ran on (the cell, or the prose where the cell contradicts it)."""
    dp: int
    tp: int
    pp: int
    zero: int
    why_gpu: str = ""


ROWS = (
    Row(51, ("H200", "8", "7B", "zero2(dp8)", "36", "4096", "17.13 samp/s", "534.18",
             "119040.02"), "H200", dp=8, tp=1, pp=1, zero=2),
    Row(54, ("H200", "16", "70B", "zero1(dp2)+tp2+pp4", "128", "4096", "5.66 samp/s", "811.79",
             "100072.02"), "B200", dp=2, tp=2, pp=4, zero=1,
        why_gpu=("the cell says H200 but the paragraph under the table (L56) says of it 'For the "
                 "70B model on 16 cards, the B200 again demonstrated a clear advantage, with over "
                 "70% higher throughput' (5.66 / 3.27 = 1.73, the H200 row being 3.27): B200")),
)
NOT_TAKEN = {
    52: ("H200 16 x 70B 'zero2', 48 per DP, 3.27 samp/s, peak 150032.23 MiB: ZeRO-2 keeps every "
         "bf16 parameter on each GPU (2 x 69.0e9 B = 128 GiB) and the peak exceeds an H200's "
         "143771 MiB; no layout the cell names fits"),
    53: ("B200 8 x 7B 'zero1(dp2)+tp2+pp4': dp2 x tp2 x pp4 is 16 GPUs, not the row's 8; its "
         "throughput (25.83 samp/s, 1.5 x the H200 row as the paragraph says) has no layout"),
}


def rows() -> list[dict[str, object]]:
    out = []
    for row in ROWS:
        _, n, size, par, per_dp, seq, rate, tflops, mib = row.cells
        model, h, layers, heads, kv, ffn, vocab = SIZES[size]
        n, per_dp, seq = int(n), int(per_dp), int(seq)
        samples = float(rate.split()[0])
        gbs = per_dp * row.dp
        micro = per_dp if row.pp == 1 else ""
        r = {k: "" for k in HEADER}
        r.update(
            id=f"cai-{model}-{row.gpu.lower()}-{n}", model=model, hidden_size=h,
            num_layers=layers, num_attention_heads=heads, num_kv_heads=kv, ffn_hidden_size=ffn,
            vocab_size=vocab, seq_length=seq, activation="swiglu", gpu=GPUS[row.gpu],
            num_gpus=n, gpus_per_node=8, tp=row.tp, pp=row.pp, cp=1, ep=1, recompute="full",
            zero_stage=row.zero, global_batch_size=gbs, micro_batch_size=micro, dtype="bf16", framework="colossalai",
            framework_version="2025-09-26", memory_kind="allocated",
            measured_iteration_s=round(gbs / samples, 4),
            measured_peak_memory_gib=round(float(mib) / MIB_PER_GIB, 2),
            source=(f"{CAI} README.md @ {COMMIT} (2025-09-26) L{row.line}, 'Colossal-AI "
                    "Benchmark' table; model sizes from examples/language/llama/benchmark.py "
                    "MODEL_CONFIGS and the recompute from examples/language/"
                    "performance_evaluator.py at the same commit"),
            note=(f"published {samples} samples/s on {n} {row.gpu} ({par}, {per_dp} sequences "
                  f"per DP rank, sequence {seq}, {tflops} TFLOPS/GPU, peak {mib} MiB): "
                  f"{gbs} sequences a step / {samples} = {gbs / samples:.4f} s"
                  + (f"; GPU: {row.why_gpu}" if row.why_gpu else "")
                  + f"; {size} = benchmark.py '{size.lower()}' ({h} hidden, {layers} layers, "
                  f"{heads} heads, {kv} KV heads, FFN {ffn}, vocabulary {vocab}); recompute full: "
                  f"the TFLOPS cell is the evaluator's Megatron count with factor 4 (gradient "
                  f"checkpointing), not 3; bf16 (the plugins' precision='bf16'); memory: "
                  f"max_memory_allocated / 1024^2; "
                  + (f"micro-batch {per_dp}: benchmark.py runs a rank's batch in one forward "
                     "(L295, L382) where there is no pipeline; " if micro else
                     "micro-batch (benchmark.py --mbs, L92) not stated; ")
                  + "attention kernel, sequence parallelism and overlaps not stated: left to "
                  "trainsim"))
        out.append(r)
    return out


def _megatron_tflops(size: str, samples: float, n: int, factor: int) -> float:
    """performance_evaluator.py's 'TFLOPS per GPU by Megatron' for ``samples`` a second."""
    _, h, layers, _, _, _, vocab = SIZES[size]
    s = 4096
    per_seq = 24 * factor * s * layers * h**2 * (1 + s / (6 * h) + vocab / (16 * layers * h))
    return per_seq * samples / n / 1e12


def check() -> list[str]:
    """Each taken and left line of the README table at ``COMMIT`` and at the mirror's HEAD, the
    paragraph naming the B200, the two MODEL_CONFIGS, the evaluator's formula, and each row's
    TFLOPS cell against that formula with gradient checkpointing (and not without)."""
    bad = []
    for commit in (COMMIT, "HEAD"):
        readme = mirror_rows.show(CAI_DIR, commit, "README.md").splitlines()
        start = next((i for i, t in enumerate(readme) if "### Colossal-AI Benchmark" in t), None)
        if start is None:
            bad.append(f"README.md @ {commit}: no 'Colossal-AI Benchmark' table")
            continue
        table = [mirror_rows.md_cells(t) for t in readme[start:start + 12] if "samp/s" in t]
        for row in ROWS:
            if list(row.cells) not in table:
                bad.append(f"README.md @ {commit}: no line {row.cells}")
        if len(table) != len(ROWS) + len(NOT_TAKEN):
            bad.append(f"README.md @ {commit}: {len(table)} table lines")
        if commit == COMMIT:
            bad += [f"README.md @ {COMMIT} L{r.line} is not {r.cells}" for r in ROWS
                    if mirror_rows.md_cells(readme[r.line - 1]) != list(r.cells)]
            if "For the 70B model on 16 cards, the B200 again" not in readme[55]:
                bad.append(f"README.md @ {COMMIT} L56: no 'the 70B model on 16 cards, the B200'")
    bench = mirror_rows.show(CAI_DIR, COMMIT, "examples/language/llama/benchmark.py")
    flat = " ".join(bench.split())
    want = ['"7b": LlamaConfig(max_position_embeddings=4096)',
            ('"70b": LlamaConfig( hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, '
             'num_attention_heads=64, max_position_embeddings=4096, num_key_value_heads=8, )'),
            'precision="bf16"', "model.gradient_checkpointing_enable()",
            "prepare_dataloader(dataset, batch_size=args.batch_size,",
            "if isinstance(plugin, HybridParallelPlugin) and args.pp > 1:",
            "outputs = model(**batch)", '"--mbs", type=int, default=1']
    bad += [f"benchmark.py @ {COMMIT}: no {w!r}" for w in want if w not in flat]
    ev = mirror_rows.show(CAI_DIR, COMMIT, "examples/language/performance_evaluator.py")
    if not re.search(r"checkpoint_activations_factor = 3 \+ int\(self\.enable_grad_checkpoint\)", ev) \
            or "seq_len / (6.0 * self.hidden_size)" not in ev:
        bad.append(f"performance_evaluator.py @ {COMMIT}: not the Megatron count read here")
    for row in ROWS:
        _, n, size, _, _, _, rate, tflops, _ = row.cells
        with_ckpt = _megatron_tflops(size, float(rate.split()[0]), int(n), 4)
        without = _megatron_tflops(size, float(rate.split()[0]), int(n), 3)
        if abs(with_ckpt / float(tflops) - 1) > 0.002 or abs(without / float(tflops) - 1) < 0.1:
            bad.append(f"L{row.line}: {tflops} TFLOPS is not the checkpointed count {with_ckpt:.2f}")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "README table, model sizes and FLOP rule as in the mirror")
