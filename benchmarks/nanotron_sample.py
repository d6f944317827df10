"""Transcribe a seeded sample of the Ultra-Scale Playbook's nanotron benchmark runs into
``benchmarks/training_nanotron.csv`` (format v2; see training_nanotron.md).

The playbook's heatmap ``assets/data/benchmarks/benchmarks_interactive.html`` (a Plotly figure;
read here from the copy in github.com/vinjn/nanotron-ultrascale-playbook @ e3bcfc5c, a mirror of
the Hugging Face space nanotron/ultrascale-playbook) holds one hover text per run: nodes, MBS,
GradAcc, GBS, DP, PP, TP, ZeRO, MFU, tok/s/gpu, tok/s, GPU memory; its subplots x, x2, x3, x4
are the 1B, 3B, 8B and 80B models (the figure's annotations). Model shapes, sequence length,
vocabulary and the other settings come from huggingface/nanotron scripts/scaling_benchmarks.py
@ e24d2483 and its base config examples/config_tiny_llama_bench.yaml @ 67c5ebb6.

    python benchmarks/nanotron_sample.py PATH/TO/benchmarks_interactive.html > benchmarks/training_nanotron.csv
"""

from __future__ import annotations

import csv
import json
import random
import re
import sys
from collections import defaultdict

SEED = 2025
SEQ = 4096
VOCAB = 131072  # scaling_benchmarks.py VOCAB_SIZES = [131072]
#: scaling_benchmarks.py model_configs (layers, hidden, heads, ffn); kv heads = heads
#: (NUM_KEY_VALUE_HEADS = None); tie_word_embeddings when ffn < 10,000. The "80B" label is the
#: 70B shape without GQA and with a 131072 vocabulary (estimate_num_params: 79.97e9).
SHAPES = {"1B": (16, 2048, 32, 8192), "3B": (28, 3072, 32, 8192),
          "8B": (32, 4096, 32, 14336), "80B": (80, 8192, 64, 28672)}
#: the architecture the shape columns leave out: nanotron's LlamaConfig as the base config sets
#: it (hidden_act silu, RMSNorm, RoPE theta 10000 with rope_scaling null, no linear biases, no
#: dropout: config_tiny_llama_bench.yaml, config/models_config.py), which is Llama 2's; every
#: shape column (kv heads included) overrides the preset's
ARCH = "llama2-7b"
AXES = {"x": "1B", "x2": "3B", "x3": "8B", "x4": "80B"}
HTML = "assets/data/benchmarks/benchmarks_interactive.html"
SOURCE = ("Ultra-Scale Playbook (huggingface.co/spaces/nanotron/ultrascale-playbook) " + HTML +
          " @ github.com/vinjn/nanotron-ultrascale-playbook e3bcfc5c0b177d5f259a65465ddf0f880c71577f"
          " (hover texts); configs from huggingface/nanotron scripts/scaling_benchmarks.py @ "
          "e24d2483 and examples/config_tiny_llama_bench.yaml @ 67c5ebb6")
_HEADER_TEXT = (
    "id,source,model,hidden_size,num_layers,num_attention_heads,num_kv_heads,head_dim,"
    "ffn_hidden_size,vocab_size,seq_length,activation,num_experts,moe_top_k,"
    "moe_ffn_hidden_size,gpu,num_gpus,gpus_per_node,nic_gbps_per_gpu,tp,pp,cp,ep,vpp,"
    "sequence_parallel,recompute,zero_stage,distributed_optimizer,global_batch_size,"
    "micro_batch_size,local_batch_size,dtype,options,framework,framework_version,attention,"
    "grad_reduce_dtype,recompute_num_layers,recompute_modules,pipeline_layout,fp8_recipe,"
    "cp_comm_type,moe_dispatcher,moe_capacity_factor,memory_kind,measured_iteration_s,"
    "measured_peak_memory_gib,note,tied_embeddings,fabric,nvls")
HEADER = _HEADER_TEXT.split(",")
KEYS = ("Nodes", "MBS", "GradAcc", "GBS", "DP", "PP", "TP", "ZeRO", "MFU", "tok/s/gpu", "tok/s")


def runs(html: str) -> list[dict]:
    """Every distinct run of the figure: its model and hover-text fields."""
    start = html.index("[", html.index("Plotly.newPlot("))
    traces, _ = json.JSONDecoder().raw_decode(html[start:])
    seen, out = set(), []
    for t in traces:
        model = AXES.get(t.get("xaxis"))
        for text in (t.get("text") or []) if model else []:
            fields = {}
            for part in re.sub(r"<[^>]+>", "\n", str(text)).split("\n"):
                if ":" in part:
                    k, v = part.split(":", 1)
                    fields[k.strip()] = v.strip().replace(",", "").rstrip("%")
            if not all(k in fields for k in KEYS) or (model, text) in seen:
                continue
            seen.add((model, text))
            out.append({"model": model, **{k: fields[k] for k in KEYS}})
    return out


def usable(runs_: list[dict]) -> list[dict]:
    """Runs with a throughput, a batch that adds up (MBS x GradAcc x DP = GBS = 256 and
    DP x TP x PP = 8 x nodes), and one configuration measured once (5 configurations appear
    with two or three different throughputs: ambiguous, dropped)."""
    ok = [r for r in runs_ if r["tok/s"] != "nan"
          and int(r["MBS"]) * int(r["GradAcc"]) * int(r["DP"]) == int(r["GBS"]) == 256
          and int(r["DP"]) * int(r["TP"]) * int(r["PP"]) == 8 * int(r["Nodes"])]
    key = lambda r: tuple(r[k] for k in ("MBS", "GradAcc", "DP", "PP", "TP", "ZeRO")) + (r["model"],
                                                                                      r["Nodes"])
    count = defaultdict(set)
    for r in ok:
        count[key(r)].add(r["tok/s"])
    return [r for r in ok if len(count[key(r)]) == 1]


def layout(layers: int, hidden: int, heads: int, ffn: int, pp: int) -> str | None:
    """nanotron's stage placement (src/nanotron/models/base.py build_model @ e24d2483): blocks
    in order (embedding, the decoder layers, final norm, lm_head, cast, loss) with costs from
    LlamaModel.get_block_compute_costs (decoder layer 4*heads*d_head*h + 3*ffn*h, lm_head
    vocab*h, others 0); each block goes to the current rank, which moves on once the cumulative
    cost passes (rank+1)/pp of the total. As a Megatron-core layout string (E embedding,
    t layer, L loss); None for pp 1."""
    if pp == 1:
        return None
    layer = 4 * heads * (hidden // heads) * hidden + 3 * ffn * hidden
    blocks = ["E"] + ["t"] * layers + ["n", "h", "c", "L"]
    costs = {"t": layer, "h": VOCAB * hidden}
    total = layers * layer + VOCAB * hidden
    stages, rank, cum = [[] for _ in range(pp)], 0, 0
    for b in blocks:
        cum += costs.get(b, 0)
        stages[rank].append(b)
        if cum > total * ((rank + 1) / pp):
            rank += 1
    return "|".join("".join(x for x in s if x in "EtL") for s in stages)


def row(kind: str, r: dict) -> dict:
    layers, hidden, heads, ffn = SHAPES[r["model"]]
    nodes, tp, pp, dp = int(r["Nodes"]), int(r["TP"]), int(r["PP"]), int(r["DP"])
    zero, gbs = int(r["ZeRO"]), int(r["GBS"])
    tok_s = float(r["tok/s"])
    opts = "dp_overlap" if zero == 0 and dp > 1 else ""
    rid = (f"nt-{kind}-{r['model'].lower()}-n{nodes}-dp{dp}-tp{tp}-pp{pp}-mbs{r['MBS']}"
           f"-acc{r['GradAcc']}-z{zero}")
    return {
        "id": rid, "source": SOURCE, "model": ARCH, "hidden_size": hidden, "num_layers": layers,
        "num_attention_heads": heads, "num_kv_heads": heads, "head_dim": "",
        "ffn_hidden_size": ffn, "vocab_size": VOCAB, "seq_length": SEQ, "activation": "swiglu",
        "tied_embeddings": 1 if ffn < 10_000 else 0,
        "gpu": "h100-sxm-80gb", "num_gpus": 8 * nodes, "gpus_per_node": 8,
        # NVLS off: the runs' torch 2.1 env (run_multinode.sh @ 67c5ebb6: conda env 2-1-cu121)
        # ships NCCL 2.18.1, and aws-ofi-nccl (v1.7.2-aws on, src/platform-aws.c
        # configure_nvls_option) sets NCCL_NVLS_ENABLE=0 under NCCL 2.18.5 on AWS
        "nvls": 0,
        "nic_gbps_per_gpu": 400, "fabric": "efa", "tp": tp, "pp": pp, "cp": 1, "ep": 1, "vpp": 1,
        "sequence_parallel": 1 if tp > 1 else 0, "recompute": "none", "zero_stage": zero,
        "distributed_optimizer": 0, "global_batch_size": gbs, "micro_batch_size": r["MBS"],
        "dtype": "bf16", "options": opts, "framework": "nanotron", "framework_version": "2024-12",
        "attention": "flash2", "grad_reduce_dtype": "fp32",
        "pipeline_layout": layout(layers, hidden, heads, ffn, pp) or "",
        "measured_iteration_s": f"{gbs * SEQ / tok_s:.4f}",
        "note": (f"published {r['tok/s']} tok/s ({r['tok/s/gpu']} tok/s/gpu, MFU {r['MFU']} %); "
                 f"iteration time = GBS {gbs} x seq {SEQ} / tok/s (nanotron trainer.py "
                 "tokens_per_sec = global_batch_size x sequence_length / iteration time); "
                 f"GradAcc {r['GradAcc']}; pipeline_layout from nanotron build_model's cost "
                 "split; EFA between nodes (playbook), 400 Gb/s per GPU assumed (AWS p5)"),
    }


def sample(all_runs: list[dict]) -> list[tuple[str, dict]]:
    """Two runs per (model, nodes) cell: ``best``, the highest throughput (what the playbook's
    heatmap shows for the cell, "the top configurations for each model and cluster size"), and
    ``draw``, one of the cell's other usable runs drawn with random.Random(SEED) from the runs
    sorted by their hover fields (so the draw does not depend on the figure's order)."""
    rng = random.Random(SEED)
    cells = defaultdict(list)
    for r in sorted(usable(all_runs), key=lambda r: tuple(str(r[k]) for k in ("model",) + KEYS)):
        cells[(r["model"], int(r["Nodes"]))].append(r)
    out = []
    for cell in sorted(cells, key=lambda c: (float(c[0][:-1]), c[1])):
        runs_ = cells[cell]
        best = max(runs_, key=lambda r: float(r["tok/s"]))
        out.append(("best", best))
        rest = [r for r in runs_ if r is not best]
        if rest:
            out.append(("draw", rng.choice(rest)))
    return out


def main(path: str) -> None:
    with open(path) as f:
        picked = sample(runs(f.read()))
    w = csv.DictWriter(sys.stdout, fieldnames=HEADER, lineterminator="\n")
    w.writeheader()
    for kind, r in picked:
        w.writerow({k: row(kind, r).get(k, "") for k in HEADER})


if __name__ == "__main__":
    main(sys.argv[1])
