"""Writes benchmarks/training_zeropp.csv: the ZeRO-3 baseline bars of the DeepSpeed ZeRO++ blog
(Wang et al. 2023, arXiv 2306.10209; microsoft/DeepSpeed PR #3784, 2023-06-23) on 384 V100 with
a stated inter-node network, 1 to 8 InfiniBand links of 100 Gb/s per 16-GPU node (a check
file; nothing here feeds trainsim).

    python benchmarks/zeropp_rows.py > benchmarks/training_zeropp.csv
    python benchmarks/zeropp_rows.py --check   # the sources below against the mirror

Sources, all microsoft/DeepSpeed @ 38327e07f6cd (the mirror's commit; the files as first
committed in PR #3784 / #3793 / #3783, 2023-06-23):

* blogs/zeropp/assets/images/eval1.png (blog figure 6: 4 IB links per node, micro-batch 1K and
  2K tokens per GPU), eval2.png (figure 7: 1 link), eval3.png (figure 8: 2K tokens, 200 and 800
  Gb/s per node): the blue "Baseline" (ZeRO-3) bars' labels, TFLOPs per GPU, whole numbers.
* blogs/zeropp/chinese/README.md (the blog's text; the English post is only linked from
  docs/_posts/2023-06-22-zeropp.md): 384 V100, links of 100 Gb/s, 4 links = 400 Gb/s.
* docs/_tutorials/zeropp.md: the same authors' 18B model (GPT-2 in Megatron-DeepSpeed: 40
  layers, hidden 6144, 32 heads, sequence 512, micro-batch 1, ZeRO-3, fp16, activation
  checkpointing) on 16-GPU V100-SXM3 nodes; its ZeRO-3 baseline log (7.65 TFLOPs at 9.9559 s for
  64 x 512 tokens on 64 GPUs) fixes the TFLOPs count: Megatron-DeepSpeed's 96 B s l h^2 (1 +
  s/6h + V/16lh) with V the padded vocabulary 50304 (benchmarks/training_deepspeed.csv row
  zeropp-tutorial-18b-zero3-64gpu).

Each row: iteration_s = that count for the global batch / (TFLOPs x 1e12 x 384). Not stated by
the blog, taken as below and said so in each note: the sequence length (the tutorial's 512;
micro-batch = tokens / 512), one micro-batch per step (the tutorial log's global batch = GPUs),
the model shape (the tutorial's 18B). LEFT_OUT lists what is not expressible.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "microsoft+DeepSpeed"
COMMIT = "38327e07f6cd"
HEADER = mirror_rows.v2_header()
IMAGES = {  # figure -> (path, git blob id at COMMIT: the image the bars were read from)
    6: ("blogs/zeropp/assets/images/eval1.png", "8312c1db6de1ecc9b78e2d74681976c6ef6b21b1"),
    7: ("blogs/zeropp/assets/images/eval2.png", "b6fd05f8cd9812c3345a00e9212da97e6576dfc1"),
    8: ("blogs/zeropp/assets/images/eval3.png", "4675e2041d84f00c7b9a5755e961d4e7b2673b00"),
}
LINK_GBPS = 100
GPUS, GPUS_PER_NODE = 384, 16
# (figure, panel, IB links per node, tokens per GPU, 18B ZeRO-3 baseline TFLOPs per GPU)
BARS_18B = [
    (7, "left", 1, 1024, 14), (7, "right", 1, 2048, 26),
    (8, "left", 2, 2048, 37),
    (6, "left", 4, 1024, 25), (6, "right", 4, 2048, 40),
    (8, "left", 8, 2048, 47),
]
# the tutorial's 18B (docs/_tutorials/zeropp.md launch command) and GPT-2's padded vocabulary
LAYERS, HIDDEN, HEADS, SEQ, VOCAB = 40, 6144, 32, 512, 50304
BLOG = "blogs/zeropp/chinese/README.md"
TUTORIAL = "docs/_tutorials/zeropp.md"
# strings --check expects in the two texts (what each number above rests on)
BLOG_FACTS = ["384 个 Nvidia V100", "4 个 Infiniband (IB)", "100 Gbps", "400Gbps",
              "200Gbps", "800Gbps", "1k tokens", "2k tokens"]
TUTORIAL_FACTS = [f"--num-layers {LAYERS}", f"--hidden-size {HIDDEN}", f"--seq-length {SEQ}",
                  f"--num-attention-heads {HEADS}", "--batch-size 1", "--zero-stage 3",
                  "--fp16", "--checkpoint-activations", "16x", "V100-SXM3"]
LEFT_OUT = {
    "49B, 91B, 138B baseline bars (figures 6-8)": "their shapes (layers, hidden, heads) are "
    "stated in the paper's configuration table, which no stored copy reachable here holds; "
    "the blog gives only the parameter count",
    "every ZeRO++ (orange) bar and the tutorial's ZeRO++ log": "qwZ (int8 weight all-gather), "
    "hpZ (secondary intra-node partition) and qgZ (int4 all-to-all gradient averaging) are "
    "not modelled (catalog/frameworks/deepspeed.yaml; config/parallel.py refuses "
    "dp_replicate > 1 for ZeRO-3)",
}


def megatron_ds_flops(batch: int, seq: int = SEQ) -> float:
    """Megatron-DeepSpeed's FLOPs per step, activation checkpointing counted."""
    h, n, v = HIDDEN, LAYERS, VOCAB
    return 96 * batch * seq * n * h * h * (1 + seq / (6 * h) + v / (16 * n * h))


def rows() -> list[dict]:
    out = []
    for fig, panel, links, tokens, tf in BARS_18B:
        mb = tokens // SEQ
        gbs = mb * GPUS
        step = megatron_ds_flops(gbs) / (tf * 1e12 * GPUS)
        path, _ = IMAGES[fig]
        r = {k: "" for k in HEADER}
        r.update(
            id=f"zeropp-blog-18b-zero3-384gpu-ib{links}-{tokens // 1024}ktok",
            source=f"microsoft/DeepSpeed {path} @ {COMMIT} (ZeRO++ blog figure {fig}, {panel} "
                   f"panel, 'Baseline' bar; text {BLOG}; PR #3784 2023-06-23; Wang et al. 2023 "
                   f"arXiv 2306.10209)",
            model="gpt3-175b", hidden_size=HIDDEN, num_layers=LAYERS, num_attention_heads=HEADS,
            ffn_hidden_size=4 * HIDDEN, vocab_size=VOCAB, seq_length=SEQ, activation="gelu",
            gpu="v100-sxm-32gb", num_gpus=GPUS, gpus_per_node=GPUS_PER_NODE,
            nic_gbps_per_gpu=f"{links * LINK_GBPS / GPUS_PER_NODE:g}", tp=1, pp=1, cp=1, ep=1,
            sequence_parallel=0, recompute="full", zero_stage=3, global_batch_size=gbs,
            micro_batch_size=mb, dtype="fp16", framework="deepspeed", framework_version="2023-06",
            attention="unfused", measured_iteration_s=f"{step:.4f}")
        r["note"] = (
            f"published {tf} TFLOPs per GPU (bar label, whole TFLOPs: +-0.5 is "
            f"+-{50 / tf:.1f} % of the step), ZeRO-3 baseline, 18B, {GPUS} V100, {links} IB "
            f"link(s) of {LINK_GBPS} Gb/s per {GPUS_PER_NODE}-GPU node = "
            f"{links * LINK_GBPS / GPUS_PER_NODE:g} Gb/s per GPU, micro-batch {tokens} tokens "
            f"per GPU; iteration time = 96 x B x s x l x h^2 x (1 + s/6h + V/16lh) / (TFLOPs x "
            f"GPUs) = 96 x {gbs} x {SEQ} x {LAYERS} x {HIDDEN}^2 x (1 + {SEQ}/{6 * HIDDEN} + "
            f"{VOCAB}/{16 * LAYERS * HIDDEN}) / ({tf}e12 x {GPUS}) (Megatron-DeepSpeed's count, "
            f"as the tutorial's baseline log confirms: 7.65 TFLOPs at 9.9559 s); not stated by "
            f"the blog, taken from {TUTORIAL} (same authors, same 18B GPT-2, 16x V100-SXM3 "
            f"nodes): shape {LAYERS} layers / hidden {HIDDEN} / {HEADS} heads, sequence {SEQ} "
            f"(micro-batch {mb} = {tokens} / {SEQ}), TP 1, PP 1, fp16, activation "
            f"checkpointing; one micro-batch per step (global batch {gbs} = {GPUS} x {mb}, as "
            f"in the tutorial's log); DeepSpeed of the paper's time (arXiv v1 2023-06-16)")
        out.append(r)
    return out


def check() -> list[str]:
    """Differences between what the rows rest on and the mirror (empty: none)."""
    bad = []
    git = str(mirror_rows.mirror(REPO_DIR))
    for fig, (path, blob) in IMAGES.items():
        got = mirror_rows.subprocess.run(
            ["git", "--git-dir", git, "rev-parse", f"{COMMIT}:{path}"],
            capture_output=True, text=True, check=True).stdout.strip()
        if got != blob:
            bad.append(f"figure {fig}: {path} is blob {got}, read from {blob}")
    blog = mirror_rows.show(REPO_DIR, COMMIT, BLOG)
    bad += [f"{BLOG}: no '{s}'" for s in BLOG_FACTS if s not in blog]
    tut = mirror_rows.show(REPO_DIR, COMMIT, TUTORIAL)
    bad += [f"{TUTORIAL}: no '{s}'" for s in TUTORIAL_FACTS if s not in tut]
    # the tutorial's baseline log, as benchmarks/training_deepspeed.csv holds it, fixes the count
    tf = megatron_ds_flops(64) / (9.9559 * 64 * 1e12)
    if abs(tf - 7.65) > 0.005:
        bad.append(f"the count gives {tf:.3f} TFLOPs for the tutorial log, logged 7.65")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "figures, blog text and tutorial as in the mirror")
