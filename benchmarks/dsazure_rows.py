"""Writes benchmarks/training_dsazure.csv: the unlabelled bars of the DeepSpeed-on-Azure post's
Figures 5 and 6 (DeepSpeed 0.6.2, ZeRO-3 without model parallelism, 175B and 530B GPT on 128 to
1,024 A100-80GB with 200 Gb/s HDR InfiniBand per GPU), read by their pixel heights (a check
file; nothing here feeds trainsim).

    python benchmarks/dsazure_rows.py > benchmarks/training_dsazure.csv
    python benchmarks/dsazure_rows.py --check   # re-measure the bars in the mirror's images

Sources, microsoft/DeepSpeed @ 38327e07f6cd: docs/_posts/2022-07-26-deepspeed-azure.md (the text:
software stack Table 1, model shapes Table 2, the TFLOPs formula, the labelled peaks 204.49 and
170.42 / 171.37 TFLOPs), docs/assets/images/175b-trend.png (Figure 5: 175B, (a) sequence 512 on
128 / 256 / 512 GPUs, micro-batch 1-32, (b) sequence 1024 on 128-1,024 GPUs, micro-batch 1-16)
and 530b-trend.png (Figure 6: 530B, sequence 1,024, 512 and 1,024 GPUs, micro-batch 1-8). The
recipe and every other column are those of the three rows of benchmarks/training_deepspeed.csv
that carry the labelled bars (``dsazure-*``: Megatron-DeepSpeed examples/azure/run-175b.sh @
62bc4562, TP 1, PP 1, ZeRO-3, fp16, full activation checkpointing, global batch = GPUs x
micro-batch); those three bars are not repeated here.

How a bar was read (``measure``): its top is the first row of its colour in its middle column;
Figure 6's scale is the baseline and its two labelled bars (3.49 px per TFLOP), Figure 5's the
0-250 gridlines (0.808 px per TFLOP; its labelled 204.49 bar reads 204.2). One pixel is 0.29
TFLOPs in Figure 6 and 1.24 in Figure 5: +-0.2 to +-0.5 % and +-0.6 to +-3.2 % of the step.
iteration_s = 96 B s l h^2 (1 + s/6h + V/16lh) / (TFLOPs x 1e12 x GPUs), V = 50304 (the blog's
formula, as the ``dsazure-*`` rows).
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

REPO_DIR = "microsoft+DeepSpeed"
COMMIT = "38327e07f6cd"
HEADER = mirror_rows.v2_header()
CHECKS = Path(__file__).resolve().parent / "training_deepspeed.csv"
IMAGES = {  # figure -> (path, git blob id at COMMIT)
    5: ("docs/assets/images/175b-trend.png", "6a500d53fb61d0e2b384e14294bbd2575aace848"),
    6: ("docs/assets/images/530b-trend.png", "dc29b8aad02d94ad43f5b830e7afc1bd331c2cca"),
}
# bar colours of the micro-batch legend (Office palette): blue 1, orange 2, gray 4, yellow 8,
# light blue 16, green 32
COLOURS = {1: (68, 114, 196), 2: (237, 125, 49), 4: (165, 165, 165), 8: (255, 192, 0),
           16: (91, 155, 213), 32: (112, 173, 71)}
# (figure, model, sequence, GPUs, micro-batch, TFLOPs per GPU read from the bar)
BARS = [
    (5, "175b", 512, 128, 1, 54.5), (5, "175b", 512, 128, 2, 95.3), (5, "175b", 512, 128, 4, 130.0),
    (5, "175b", 512, 128, 8, 170.8), (5, "175b", 512, 128, 16, 185.6),
    (5, "175b", 512, 256, 1, 44.6), (5, "175b", 512, 256, 2, 81.7), (5, "175b", 512, 256, 4, 117.6),
    (5, "175b", 512, 256, 8, 163.4), (5, "175b", 512, 256, 16, 180.7),
    (5, "175b", 512, 512, 1, 38.4), (5, "175b", 512, 512, 2, 71.8), (5, "175b", 512, 512, 4, 110.1),
    (5, "175b", 512, 512, 8, 155.9), (5, "175b", 512, 512, 16, 179.5),
    (5, "175b", 512, 512, 32, 200.5),
    (5, "175b", 1024, 128, 1, 95.3), (5, "175b", 1024, 128, 2, 128.7),
    (5, "175b", 1024, 128, 4, 169.6), (5, "175b", 1024, 128, 8, 181.9),
    (5, "175b", 1024, 128, 16, 194.3),
    (5, "175b", 1024, 256, 1, 81.7), (5, "175b", 1024, 256, 2, 117.6),
    (5, "175b", 1024, 256, 4, 163.4), (5, "175b", 1024, 256, 8, 178.2),
    (5, "175b", 1024, 256, 16, 203.0),
    (5, "175b", 1024, 512, 1, 71.8), (5, "175b", 1024, 512, 2, 108.9),
    (5, "175b", 1024, 512, 4, 154.7), (5, "175b", 1024, 512, 8, 177.0),
    (5, "175b", 1024, 512, 16, 196.8),
    (5, "175b", 1024, 1024, 1, 49.5), (5, "175b", 1024, 1024, 2, 81.7),
    (5, "175b", 1024, 1024, 4, 134.9), (5, "175b", 1024, 1024, 8, 165.8),
    (5, "175b", 1024, 1024, 16, 191.8),
    (6, "530b", 1024, 512, 1, 64.2), (6, "530b", 1024, 512, 2, 119.5),
    (6, "530b", 1024, 512, 4, 159.6),
    (6, "530b", 1024, 1024, 1, 65.0), (6, "530b", 1024, 1024, 2, 104.0),
    (6, "530b", 1024, 1024, 4, 144.7),
]
# the labelled bars, already rows of training_deepspeed.csv (template, sequence, GPUs, micro-batch)
LABELLED = {("175b", 512, 256, 32): ("dsazure-175b-s512-256gpu-mbs32", 204.49),
            ("530b", 1024, 512, 8): ("dsazure-530b-512gpu-mbs8", 170.42),
            ("530b", 1024, 1024, 8): ("dsazure-530b-1024gpu-mbs8", 171.37)}
TEMPLATE = {"175b": "dsazure-175b-s512-256gpu-mbs32", "530b": "dsazure-530b-512gpu-mbs8"}
# the 0 and 250 TFLOPs gridlines of Figure 5's panels (pixel rows) and the x where (b) starts
FIG5_GRID, FIG5_SPLIT = (306.5, 104.5), 870
FIG6_BASE = 784.5  # the bars' bottom row + 0.5


def flops(row: dict[str, str]) -> float:
    """FLOPs of one step by the blog's formula (Megatron-DeepSpeed's, checkpointing counted)."""
    b, s = float(row["global_batch_size"]), float(row["seq_length"])
    h, n, v = float(row["hidden_size"]), float(row["num_layers"]), float(row["vocab_size"])
    return 96 * b * s * n * h * h * (1 + s / (6 * h) + v / (16 * n * h))


def templates() -> dict[str, dict[str, str]]:
    with open(CHECKS, newline="") as fh:
        by_id = {r["id"]: r for r in csv.DictReader(fh)}
    return {m: by_id[i] for m, i in TEMPLATE.items()}


def rows() -> list[dict]:
    base = templates()
    out = []
    for fig, model, seq, gpus, mb, tf in BARS:
        r = {k: base[model].get(k, "") for k in HEADER}
        r.update(id=f"dsazure-fig{fig}-{model}-s{seq}-{gpus}gpu-mbs{mb}", num_gpus=str(gpus),
                 seq_length=str(seq), micro_batch_size=str(mb), global_batch_size=str(gpus * mb),
                 measured_peak_memory_gib="")
        r["source"] = (f"microsoft/DeepSpeed {IMAGES[fig][0]} @ {COMMIT} (DeepSpeed on Azure, "
                       f"docs/_posts/2022-07-26-deepspeed-azure.md Figure {fig}; DeepSpeed 0.6.2, "
                       "PyTorch 1.10.2, NCCL 2.12.10, NDm A100 v4, 200 Gb/s HDR per GPU)")
        px = 1.24 if fig == 5 else 0.29
        r["measured_iteration_s"] = f"{flops(r) / (tf * 1e12 * gpus):.4f}"
        r["note"] = (f"bar height read from the image: {tf} TFLOPs per GPU (one pixel = {px} "
                     f"TFLOPs, +-{100 * px / tf:.1f} % of the step); {model.upper()}, sequence "
                     f"{seq}, micro-batch {mb}, global batch = GPUs x micro-batch; recipe and "
                     f"columns as {TEMPLATE[model]} (training_deepspeed.csv); step by the blog's "
                     "formula 96 B s l h^2 (1 + s/6h + V/16lh), V 50304")
        out.append(r)
    return out


def _image(fig: int):
    from PIL import Image  # only --check reads the images

    path, blob = IMAGES[fig]
    git = str(mirror_rows.mirror(REPO_DIR))
    got = subprocess.run(["git", "--git-dir", git, "rev-parse", f"{COMMIT}:{path}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    data = subprocess.run(["git", "--git-dir", git, "show", f"{COMMIT}:{path}"],
                          capture_output=True, check=True).stdout
    return got == blob, Image.open(io.BytesIO(data)).convert("RGB")


def measure(fig: int) -> list[tuple[int, int, int, float]]:
    """(panel x order, x, micro-batch, TFLOPs) of every bar of figure ``fig``, left to right."""
    _, im = _image(fig)
    w = im.size[0]
    px = im.load()
    top = 100  # below Figure 6's legend
    bottom = int(FIG5_GRID[0]) if fig == 5 else int(FIG6_BASE)
    bars = []
    for mb, colour in COLOURS.items():
        hits = [x for x in range(w) if sum(
            sum(abs(a - b) for a, b in zip(px[x, y], colour)) < 45
            for y in range(top, bottom + 1)) > 15]
        runs: list[list[int]] = []
        for x in hits:
            if runs and x == runs[-1][-1] + 1:
                runs[-1].append(x)
            else:
                runs.append([x])
        for run in (r for r in runs if len(r) > 8):
            xc = run[len(run) // 2]
            ys = [y for y in range(top, bottom + 1)
                  if sum(abs(a - b) for a, b in zip(px[xc, y], colour)) < 45]
            if fig == 5:
                tf = (FIG5_GRID[0] - min(ys) + 0.5) * 250 / (FIG5_GRID[0] - FIG5_GRID[1])
            else:
                tf = (FIG6_BASE - min(ys) + 0.5) / fig6_px_per_tflop(im)
            bars.append((xc, mb, round(tf, 1)))
    return sorted(bars)


def fig6_px_per_tflop(im) -> float:
    """Figure 6's scale: the two labelled (micro-batch 8) bars' heights over their labels."""
    px = im.load()
    colour = COLOURS[8]
    heights = []
    for xc in (756, 1442):  # the middles of the two yellow bars
        ys = [y for y in range(int(FIG6_BASE) + 1)
              if sum(abs(a - b) for a, b in zip(px[xc, y], colour)) < 45]
        heights.append(FIG6_BASE - min(ys) + 0.5)
    return (heights[0] + heights[1]) / (170.42 + 171.37)


def check() -> list[str]:
    bad = []
    for fig in IMAGES:
        same, _ = _image(fig)
        if not same:
            bad.append(f"figure {fig}: {IMAGES[fig][0]} is not blob {IMAGES[fig][1]}")
    read = {5: measure(5), 6: measure(6)}
    # assign each measured bar to its group (GPUs) left to right: a group restarts where the
    # micro-batch falls; Figure 5's panel (b) starts at FIG5_SPLIT
    got: dict[tuple, float] = {}
    for fig, bars in read.items():
        panels = [[b for b in bars if b[0] < FIG5_SPLIT], [b for b in bars if b[0] >= FIG5_SPLIT]] \
            if fig == 5 else [bars]
        for k, panel in enumerate(panels):
            seq = (512, 1024)[k] if fig == 5 else 1024
            groups = [128, 256, 512] if (fig == 5 and k == 0) else \
                [128, 256, 512, 1024] if fig == 5 else [512, 1024]
            g, prev = -1, None
            for _, mb, tf in panel:
                if prev is None or mb <= prev:
                    g += 1
                prev = mb
                got[(fig, seq, groups[g], mb)] = tf
    for fig, model, seq, gpus, mb, tf in BARS:
        if abs(got.get((fig, seq, gpus, mb), -1.0) - tf) > 0.15:
            bad.append(f"figure {fig} {model} s{seq} {gpus} GPUs mb{mb}: table {tf}, "
                       f"image {got.get((fig, seq, gpus, mb))}")
    for (model, seq, gpus, mb), (_, label) in LABELLED.items():
        fig = 5 if model == "175b" else 6
        tf = got.get((fig, seq, gpus, mb))
        if tf is None or abs(tf - label) > (1.24 if fig == 5 else 0.29):
            bad.append(f"labelled bar {model} s{seq} {gpus} mb{mb}: label {label}, image {tf}")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "bars, images and labels as in the mirror")
