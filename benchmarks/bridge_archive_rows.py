"""Writes benchmarks/training_bridge_archive.csv: the Megatron-Bridge performance archive's
pre-training rows of three releases that no other file holds (a check file).

    python benchmarks/bridge_archive_rows.py > benchmarks/training_bridge_archive.csv
    python benchmarks/bridge_archive_rows.py --check   # the table below against the mirror
    python benchmarks/bridge_archive_rows.py --hybrid > benchmarks/training_nemotron3.csv

NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md @ 067f987df03b (last changed
4ab94dfa, 2026-08-11) gives tokens/s/GPU for each pre-training workload of each NeMo container
release.  The public and held-out files hold a sample of three of its sections (25.11: H100 and
two B200 rows; 26.04.01: H100, B200 and four GB200 rows; 26.06: seven GB200 / H100 rows).  Every
other pre-training row of those three sections is written here -- all GB300 and B300 rows, the
remaining GB200 / B200 / H100 rows, and the 25.11 table's parenthesized FP8-MX alternates -- with
the table's cells only, as the public file writes its rows of these sections (an unknown cell is
empty: the tool chooses what the framework leaves to its user).  The model shape cells are the
public file's own row of that model.

Iteration time = GBS x sequence length / (tokens/s/GPU x GPUs).  Rows the tool cannot express are
left out with the reason (``left_out()``): Kimi-K2 (Muon optimizer).  NVFP4 rows are priced with
the nvfp4 recipe since the 52nd session (``training.fp8_recipe=nvfp4``).  Nemotron 3
Nano's and Nemotron 3 Super's rows (hybrid Mamba-2 / attention / MoE, the presets
nemotron-3-nano-30b-a3b and nemotron-3-super-120b-a12b: latent MoE, two '*E' MTP depths) are
written by ``--hybrid`` to a file of their own (benchmarks/training_nemotron3.csv).  ``TABLE`` is typed from the archive (one line
per table row: its line number, section, system, then the table's cells; '-' where the section's
table has no such column; footnote marks dropped); ``--check`` re-reads every pre-training row of
the three sections from the mirror (``$TRAINSIM_MIRRORS``, default /work/.mirror) and fails on any
difference.  Nothing here is fitted.
"""

from __future__ import annotations

import ast
import csv
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bridge_recipe_cells
import mirror_rows

REPO_DIR = "NVIDIA-NeMo+Megatron-Bridge"
COMMIT = "067f987df03b8355b03192d88d70f1709fedf51a"
ARCHIVE = "docs/performance-summary-archive.md"
PUBLIC = Path(__file__).resolve().parents[1] / "src/trainsim/data/validation/training_public.csv"
HEADER = mirror_rows.v2_header(moe_ffn_hidden_size=["mtp_num_layers"], options=["cuda_graph_scope"],
                               recompute=["cpu_offloading_num_layers"],
                               fp8_recipe=["num_layers_at_end_in_bf16"])
HYBRID_HEADER = mirror_rows.v2_header(moe_ffn_hidden_size=["mtp_num_layers"], ep=["etp"],
                                      options=["cuda_graph_scope"],
                                      fp8_recipe=["num_layers_at_end_in_bf16", "fp8_param_gather"])
"""The ``--hybrid`` file's columns: ``HEADER``, ``etp``, ``cuda_graph_scope`` and
``fp8_param_gather``."""
ALL_SCOPES = "attn;mamba;moe_router;moe_preprocess"
HYBRID_GRAPHS = {"Nemotron_3_Nano": {"": ALL_SCOPES, "DGX-H100 FP8": "mamba",
                                     "DGX-H100 BF16": "attn;mamba"},
                 "Nemotron_3_Super": {"": ALL_SCOPES, "DGX-B200 MXFP8": "", "DGX-B200 BF16": "",
                                      "DGX-B200 NVFP4": "mamba;attn;moe_router;moe_preprocess"}}
"""The CUDA-graph scopes of the hybrid rows' performance recipes, by system and precision (""
for the rest; an empty scope: no graphs), the same in Megatron-Bridge v0.4.2 (26.04.01) and
v0.5.0 (26.06): scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py
(v0.5.0 L31-39 ``BASE_NEMOTRON_3_NANO_CONFIG``: ``cuda_graph_impl="transformer_engine"``, the
four scopes on every system; L74-89 H100: FP8_CS ``["mamba"]``, BF16 ``["attn", "mamba"]``;
L98-107 ``BASE_NEMOTRON_3_SUPER_CONFIG``: the four; L141-157 B200: ``cuda_graph_impl="none"``
but NVFP4, which graphs the four again; v0.4.2 L31-39, L70-85, L94-103, L133-149). Where a
recipe graphs, the row states ``dp_overlap;cuda_graphs``: the model recipes set
``overlap_grad_reduce`` and ``overlap_param_gather`` (recipes/nemotronh/nemotron_3_super.py
L122-123, nemotron_3_nano.py L180-181, both releases) and Super's no ``CommOverlapConfig`` (no
TP overlap; Nano's ``tp_comm_overlap`` acts on no row: TP 1). ``--check`` reads them again
from the recipe file at each release's tag (``recipe_configs``)."""
HYBRID_RECOMPUTE = {"Nemotron_3_Nano": {"": "", "DGX-H100 FP8": "moe;layernorm;core_attn;moe_act",
                                        "DGX-H100 BF16": "moe;layernorm"},
                    "Nemotron_3_Super": {"": "", "DGX-B300 BF16": "moe_act;layernorm",
                                         "DGX-B300 NVFP4": "moe_act;layernorm",
                                         "DGX-B200 MXFP8": "moe_act;layernorm",
                                         "DGX-B200 BF16": "moe_act;moe;layernorm;core_attn"}}
"""The selective recompute of the hybrid rows' performance recipes, by system and precision (""
for the rest: none), in the file and at the tags of ``HYBRID_GRAPHS``: a workload config's
``recompute_modules`` (v0.5.0 L84 / L90 H100 BF16 / FP8_CS, L135 B300 BF16 (NVFP4 = BF16, L138),
L145 B200 base (MXFP8 = the base, L152), L150 B200 BF16, L158 B200 NVFP4 ``None``; v0.4.2 L80,
L86, L127, L137, L142, L150) makes the run selective with those modules (scripts/performance/
utils/overrides.py v0.5.0 L154-156, v0.4.2 L148-150); without one the model recipe's stays:
Nano's ``recompute_granularity = None`` (recipes/nemotronh/nemotron_3_nano.py L133-134, both
tags), Super's none set (nemotron_3_super.py; Megatron-core's TransformerConfig default
``recompute_granularity`` None). ``--check`` reads them again (``recipe_configs``)."""
HYBRID_SETTINGS_NOTE = (
    "sequence parallel = TP > 1 (Megatron-Bridge scripts/performance/utils/utils.py "
    "WorkloadBaseConfig.sequence_parallel, v0.5.0 L74-76 / v0.4.2 L69-71, set by overrides.py "
    "L226 / L210); dispatcher hybridep (the base configs' moe_flex_dispatcher_backend, "
    "{file} v0.5.0 L37 / L105, v0.4.2 L37 / L101, applied on every GPU here by "
    "training/flex_dispatcher_backend.py); distributed optimizer (nemotron_3_nano.py L183, "
    "nemotron_3_super.py L125)")
RECIPE_FILE = "scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py"
RECIPE_TAGS = {"26.04.01": "v0.4.2", "26.06": "v0.5.0"}
RECIPE_PRECISION = {"MXFP8": "FP8_MX", "NVFP4": "NVFP4", "BF16": "BF16", "FP8": "FP8_CS"}
"""The archive's precision -> the recipe name's (the H100 rows' FP8: current scaling, the
only H100 FP8 recipe of the file)."""
HYBRID_ETP = {"26.04.01": {"BASE_NEMOTRON_3_NANO_CONFIG": 35, "BASE_NEMOTRON_3_SUPER_CONFIG": 99},
              "26.06": {"BASE_NEMOTRON_3_NANO_CONFIG": 35, "BASE_NEMOTRON_3_SUPER_CONFIG": 103}}
"""Expert TP of the hybrid rows by section: the recipe file (``RECIPE_FILE`` at
``RECIPE_TAGS``' tag) sets ``expert_tensor_parallel_size=1`` in the Nano and Super base configs
(the line of each), and every per-system config is a ``replace`` of one of them that sets no
expert TP (the GB200 and B200 NVFP4 Super configs change TP to 2 only: v0.4.2 L111-118 /
L145-151, v0.5.0 L115-122 / L153-159; v0.4.0 and v0.4.1 the same lines as v0.4.2).
``--check`` re-reads each line and that no other line of the file sets an expert TP."""
SUPER_NVFP4_PARAM_GATHER = {"26.06": "0"}
"""Megatron-Bridge@v0.5.0 scripts/performance/configs/nemotronh/nemotron_3_llm_pretrain.py L42-46
``set_nemotron_3_super_common_configs``: under nvfp4 ``cfg.mixed_precision.fp4_param_gather =
False`` ("Disabled until MCore PR 4358 lands"); at 26.04 (v0.4.x) the recipe has no
fp4_param_gather, the profile's default (off)."""
SUPER_NVFP4_BF16_TAIL = "14"
"""Megatron-Bridge@067f987d perf_recipes/nemotronh/common.py L65-70 ``_nemotron_3_super_nvfp4_
precision`` -> training/mixed_precision.py L421-429 ``nemotron_3_super_bf16_with_nvfp4_mixed``:
``first_last_layers_bf16 = True``, ``num_layers_at_end_in_bf16 = 14`` (at the start: the
default 0, L73)."""
SOURCE = ("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md @ " + COMMIT
          + " (last changed 4ab94dfa, 2026-08-11), section '{section} NeMo Container', {system}, "
          "Pre-Training Performance, line {line}")
SECTIONS = {"25.11": "25.11", "26.04.01": "26.04", "26.06": "26.06"}  # -> framework_version
ID_RELEASE = {"25.11": "2511", "26.04.01": "2604p1", "26.06": "2606"}
COLUMNS = ("line", "section", "system", "model", "gpus", "precision", "gbs", "mbs", "seq", "fsdp",
           "tp", "pp", "cp", "vp", "ep", "ga", "tokens", "tflops")
# archive line | section | system | Model | #-GPUs | Precision | GBS | MBS | Sequence Length |
# FSDP | TP | PP | CP | VP | EP | GA | Tokens / sec / GPU | Model TFLOP / sec / GPU
TABLE = """
100|26.06|DGX-GB300|LLAMA3.1_405B|256|FP8|1536|1|8192|-|4|8|1|4|n/a|-|1048|2646
101|26.06|DGX-GB300|LLAMA3.1_405B|256|MXFP8|1536|1|8192|-|2|8|2|4|n/a|-|952|2403
102|26.06|DGX-GB300|LLAMA3.1_405B|256|NVFP4|1536|1|8192|-|4|8|1|4|n/a|-|1413|3575
103|26.06|DGX-GB200|LLAMA3.1_405B|256|FP8|1536|1|8192|-|4|16|1|4|n/a|-|843|2129
104|26.06|DGX-GB200|LLAMA3.1_405B|256|MXFP8|1536|1|8192|-|4|16|1|8|n/a|-|783|1976
105|26.06|DGX-GB200|LLAMA3.1_405B|256|NVFP4|1536|1|8192|-|4|16|1|8|n/a|-|1166|2944
106|26.06|DGX-H100|LLAMA3.1_405B|1024|FP8|1536|1|8192|-|8|8|2|8|n/a|-|326|822
112|26.06|DGX-GB300|DeepSeekV3|256|MXFP8|4096|1|4096|-|1|2|1|8|32|-|6338|1648
113|26.06|DGX-GB300|DeepSeekV3|256|MXFP8|15360|1|4096|-|1|2|1|8|32|-|6422|1670
114|26.06|DGX-GB200|DeepSeekV3|256|MXFP8|4096|1|4096|-|1|4|1|4|64|-|4969|1292
115|26.06|DGX-B300|DeepSeekV3|256|MXFP8|4096|2|4096|-|1|8|1|n/a|8|-|3541|920
121|26.06|DGX-GB300|GPT OSS 120B|64|MXFP8|1280|4|4096|-|1|1|1|n/a|16|-|33166|1081
122|26.06|DGX-GB200|GPT OSS 120B|64|MXFP8|1280|4|4096|-|1|1|1|n/a|64|-|28947|943
123|26.06|DGX-B300|GPT OSS 120B|64|MXFP8|1280|4|4096|-|1|1|1|n/a|8|-|18534|604
129|26.06|DGX-GB300|Qwen3_30B_a3B|8|MXFP8|512|8|4096|-|1|1|1|n/a|8|-|45275|1041
130|26.06|DGX-GB200|Qwen3_30B_a3B|8|MXFP8|512|4|4096|-|1|1|1|n/a|8|-|40706|936
131|26.06|DGX-B300|Qwen3_30B_a3B|8|MXFP8|512|8|4096|-|1|1|1|n/a|8|-|40769|938
132|26.06|DGX-H100|Qwen3_30B_a3B|16|FP8|1024|1|4096|-|1|1|1|n/a|16|-|8826|203
138|26.06|DGX-GB300|Qwen3_235B_a22B|256|MXFP8|8192|2|4096|-|1|4|1|12|32|-|9015|1335
139|26.06|DGX-GB200|Qwen3_235B_a22B|256|MXFP8|8192|1|4096|-|1|8|1|3|32|-|7376|1092
145|26.06|DGX-GB300|Kimi_K2|256|MXFP8|4096|2|4096|-|1|4|1|4|64|-|5372|1099
153|26.06|DGX-GB300|Nemotron_3_Nano|8|MXFP8|512|4|8192|-|1|1|1|n/a|8|-|39749|885
154|26.06|DGX-GB200|Nemotron_3_Nano|8|MXFP8|512|2|8192|-|1|1|1|n/a|8|-|33522|747
155|26.06|DGX-B300|Nemotron_3_Nano|8|MXFP8|512|4|8192|-|1|1|1|n/a|8|-|37316|831
156|26.06|DGX-H100|Nemotron_3_Nano|16|FP8|1024|1|8192|-|1|1|1|n/a|8|-|14719|328
162|26.06|DGX-GB300|Nemotron_3_Super|64|MXFP8|512|1|8192|-|1|1|1|n/a|64|-|9652|817
163|26.06|DGX-GB300|Nemotron_3_Super|64|NVFP4|512|1|8192|-|1|1|1|n/a|64|-|9900|839
164|26.06|DGX-GB200|Nemotron_3_Super|64|MXFP8|512|1|8192|-|2|1|1|n/a|64|-|6742|571
165|26.06|DGX-GB200|Nemotron_3_Super|64|NVFP4|512|1|8192|-|2|1|1|n/a|64|-|6928|587
166|26.06|DGX-B300|Nemotron_3_Super|64|MXFP8|512|1|8192|-|1|1|1|n/a|8|-|7867|667
167|26.06|DGX-B300|Nemotron_3_Super|64|NVFP4|512|1|8192|-|1|1|1|n/a|8|-|8131|689
201|26.04.01|DGX-GB300|LLAMA3_70B|64|FP8|256|2|8192|64|1|1|1|n/a|n/a|-|5248|2348
202|26.04.01|DGX-GB300|LLAMA3_70B|64|MXFP8|256|1|8192|0|1|4|1|5|n/a|-|4864|2186
203|26.04.01|DGX-GB300|LLAMA3_70B|64|NVFP4|256|1|8192|0|1|4|1|5|n/a|-|7296|3253
204|26.04.01|DGX-GB200|LLAMA3_70B|64|FP8|256|2|8192|64|1|1|1|n/a|n/a|-|4224|1892
205|26.04.01|DGX-GB200|LLAMA3_70B|64|MXFP8|256|1|8192|0|2|4|1|5|n/a|-|3712|1664
206|26.04.01|DGX-GB200|LLAMA3_70B|64|NVFP4|256|1|8192|0|2|4|1|5|n/a|-|4864|2202
207|26.04.01|DGX-H100|LLAMA3_70B|64|FP8|256|1|8192|0|4|8|1|5|n/a|-|1664|731
213|26.04.01|DGX-GB300|LLAMA3.1_405B|256|FP8|1536|1|8192|0|4|8|1|4|n/a|-|1024|2617
214|26.04.01|DGX-GB300|LLAMA3.1_405B|256|MXFP8|1536|1|8192|0|2|8|2|4|n/a|-|960|2453
215|26.04.01|DGX-GB300|LLAMA3.1_405B|256|NVFP4|1536|1|8192|0|4|8|1|4|n/a|-|1440|3653
216|26.04.01|DGX-GB200|LLAMA3.1_405B|256|FP8|1536|1|8192|0|4|16|1|4|n/a|-|864|2144
217|26.04.01|DGX-GB200|LLAMA3.1_405B|256|MXFP8|1536|1|8192|0|4|16|1|8|n/a|-|800|1994
218|26.04.01|DGX-GB200|LLAMA3.1_405B|256|NVFP4|1536|1|8192|0|4|16|1|8|n/a|-|1184|2960
219|26.04.01|DGX-H100|LLAMA3.1_405B|1024|FP8|1536|1|8192|0|8|8|2|8|n/a|-|328|827
225|26.04.01|DGX-GB300|DeepSeekV3|256|MXFP8|4096|2|4096|0|1|2|1|8|32|-|4992|1298
226|26.04.01|DGX-GB200|DeepSeekV3|256|MXFP8|4096|1|4096|0|1|4|1|4|64|-|4256|1106
227|26.04.01|DGX-B300|DeepSeekV3|256|MXFP8|4096|2|4096|0|1|8|1|n/a|8|-|3456|898
228|26.04.01|DGX-B200|DeepSeekV3|256|MXFP8|4096|1|4096|0|1|8|1|2|32|-|3328|864
234|26.04.01|DGX-GB300|GPT OSS 120B|64|BF16|1280|4|4096|0|1|1|1|n/a|64|-|19200|523
235|26.04.01|DGX-GB200|GPT OSS 120B|64|BF16|1280|4|4096|0|1|1|1|n/a|64|-|16640|452
236|26.04.01|DGX-B300|GPT OSS 120B|64|BF16|1280|4|4096|0|1|1|1|n/a|8|-|15232|414
237|26.04.01|DGX-B200|GPT OSS 120B|64|BF16|1280|4|4096|0|1|1|1|n/a|8|-|13568|369
238|26.04.01|DGX-H100|GPT OSS 120B|64|BF16|1280|1|4096|0|1|4|1|n/a|8|-|5824|158
244|26.04.01|DGX-GB300|Qwen3_30B_a3B|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|-|31744|729
245|26.04.01|DGX-GB200|Qwen3_30B_a3B|8|MXFP8|512|4|4096|0|1|1|1|n/a|8|-|26112|599
246|26.04.01|DGX-B300|Qwen3_30B_a3B|8|MXFP8|512|8|4096|0|1|1|1|n/a|8|-|30720|704
247|26.04.01|DGX-B200|Qwen3_30B_a3B|8|MXFP8|512|4|4096|0|1|1|1|n/a|8|-|27136|619
248|26.04.01|DGX-H100|Qwen3_30B_a3B|16|FP8|1024|1|4096|0|1|1|1|n/a|16|-|8960|206
254|26.04.01|DGX-GB300|Qwen3_235B_a22B|256|MXFP8|8192|2|4096|0|1|4|1|12|32|-|6944|1029
255|26.04.01|DGX-GB200|Qwen3_235B_a22B|256|MXFP8|8192|1|4096|0|1|8|1|3|32|-|5680|840
256|26.04.01|DGX-B300|Qwen3_235B_a22B|256|MXFP8|8192|2|4096|0|1|8|1|n/a|8|-|5936|878
257|26.04.01|DGX-B200|Qwen3_235B_a22B|256|MXFP8|8192|1|4096|0|1|8|1|n/a|8|-|3776|560
258|26.04.01|DGX-H100|Qwen3_235B_a22B|256|FP8|8192|1|4096|0|2|8|1|4|32|-|1712|253
264|26.04.01|DGX-GB300|Kimi_K2|256|MXFP8|4096|2|4096|0|1|4|1|4|64|-|5328|1088
272|26.04.01|DGX-GB300|Nemotron_3_Nano|8|MXFP8|512|4|8192|0|1|1|1|n/a|8|-|37888|845
273|26.04.01|DGX-GB200|Nemotron_3_Nano|8|MXFP8|512|2|8192|0|1|1|1|n/a|8|-|32768|725
274|26.04.01|DGX-B300|Nemotron_3_Nano|8|MXFP8|512|4|8192|0|1|1|1|n/a|8|-|35840|794
275|26.04.01|DGX-B200|Nemotron_3_Nano|8|MXFP8|512|2|8192|0|1|1|1|n/a|8|-|32768|726
276|26.04.01|DGX-H100|Nemotron_3_Nano|16|FP8|1024|1|8192|0|1|1|1|n/a|8|-|14336|321
282|26.04.01|DGX-GB300|Nemotron_3_Super|64|MXFP8|512|1|8192|0|1|1|1|n/a|64|-|9344|795
283|26.04.01|DGX-GB300|Nemotron_3_Super|64|NVFP4|512|1|8192|0|1|1|1|n/a|64|-|9600|817
284|26.04.01|DGX-GB200|Nemotron_3_Super|64|MXFP8|512|1|8192|0|2|1|1|n/a|64|-|6656|564
285|26.04.01|DGX-GB200|Nemotron_3_Super|64|NVFP4|512|1|8192|0|2|1|1|n/a|64|-|6784|574
286|26.04.01|DGX-B300|Nemotron_3_Super|64|MXFP8|512|1|8192|0|1|1|1|n/a|8|-|7296|623
287|26.04.01|DGX-B300|Nemotron_3_Super|64|NVFP4|512|1|8192|0|1|1|1|n/a|8|-|7424|634
288|26.04.01|DGX-B200|Nemotron_3_Super|64|MXFP8|512|1|8192|0|1|1|1|n/a|64|-|6400|542
289|26.04.01|DGX-B200|Nemotron_3_Super|64|NVFP4|512|1|8192|0|2|1|1|n/a|64|-|5632|475
552|25.11|DGX-GB300|LLAMA3_8B|8|FP8-CS (FP8-MX)|128|2|8192|0|1|1|1|n/a|1|8|37556 (36108)|1933 (1858)
553|25.11|DGX-GB300|LLAMA3_70B|64|FP8-CS|256|2|8192|64|1|1|1|1|1|2|4520|2030
554|25.11|DGX-GB300|LLAMA3.1_405B|256|FP8-CS|1536|1|8192|0|2|8|2|4|1|192|999|2522
555|25.11|DGX-GB300|DeepSeekV3 (w/o MTP)|256|BF16|4096|1|4096|0|1|2|1|4|32|32|3848|961
556|25.11|DGX-GB300|DeepSeekV3 (w/o MTP)|256|FP8-MX|4096|1|4096|0|1|2|1|4|32|32|4357|1088
557|25.11|DGX-GB300|GPT OSS 120B|64|BF16|1280|2|8192|0|1|1|1|1|64|10|18347|565
558|25.11|DGX-GB300|Qwen3_30B_a3B|8|FP8-MX|512|4|4096|0|1|1|1|1|8|16|28934|666
559|25.11|DGX-GB300|Qwen3_235B_a22B|256|BF16|8192|2|4096|0|1|4|1|12|16|32|6131|907
565|25.11|DGX-GB200|LLAMA3_8B|8|FP8-CS (FP8-MX)|128|2|8192|0|1|1|1|n/a|1|8|31508 (29789)|1622 (1533)
566|25.11|DGX-GB200|LLAMA3_70B|64|FP8-CS|256|2|8192|64|1|1|1|1|1|2|4312|1937
567|25.11|DGX-GB200|LLAMA3.1_405B|256|FP8-CS|1536|1|8192|0|4|16|1|4|1|384|813|2053
568|25.11|DGX-GB200|DeepSeekV3 (w/o MTP)|256|BF16|4096|1|4096|0|1|4|1|4|64|64|3139|782
569|25.11|DGX-GB200|DeepSeekV3 (w/o MTP)|256|FP8-MX|4096|1|4096|0|1|8|1|4|32|128|4018|1003
570|25.11|DGX-GB200|GPT OSS 120B|64|BF16|1280|1|8192|0|1|1|1|1|64|20|15876|488
571|25.11|DGX-GB200|Qwen3_30B_a3B|8|FP8-MX|512|4|4096|0|1|1|1|1|8|16|23766|547
572|25.11|DGX-GB200|Qwen3_235B_a22B|256|BF16|8192|1|4096|0|1|8|1|3|32|256|4916|728
578|25.11|DGX-B200|LLAMA3_8B|8|FP8-CS (FP8-MX)|128|2|8192|0|1|1|1|n/a|1|8|30624 (29521)|1576 (1519)
579|25.11|DGX-B200|LLAMA3.1_405B|128|FP8-CS (FP8-MX)|64|1|8192|0|4|8|2|8|1|32|661 (624)|1667 (1576)
580|25.11|DGX-B200|DeepSeekV3 (w/ MTP)|256|FP8-MX|2048|1|4096|0|1|16|1|1|8|128|2139|557
581|25.11|DGX-B200|GPT OSS 120B|64|BF16|512|4|4096|0|1|1|1|1|8|2|8213|223
582|25.11|DGX-B200|Qwen3_30B_a3B|8|FP8-MX|512|1|4096|0|1|1|1|1|8|64|9299|214
583|25.11|DGX-B200|Qwen3_235B_a22B|64|FP8-MX|1024|1|4096|0|1|8|1|2|8|128|3269|484
589|25.11|DGX-H100|LLAMA3_8B|8|FP8-CS|128|1|8192|8|1|1|1|n/a|1|16|14451|744
590|25.11|DGX-H100|LLAMA3_70B|64|FP8-CS|128|1|8192|0|4|8|1|5|1|64|1602|719
591|25.11|DGX-H100|LLAMA3.1_405B|1024|FP8-CS|512|1|8192|0|8|8|2|8|1|64|292|737
592|25.11|DGX-H100|GPT OSS 120B|64|BF16|512|4|4096|0|1|4|1|1|8|2|5630|153
593|25.11|DGX-H100|Qwen3_30B_a3B|16|FP8-CS|512|2|4096|0|1|2|1|24|8|32|5275|121
594|25.11|DGX-H100|Qwen3_235B_a22B|256|FP8-CS|2048|1|4096|0|2|8|1|4|32|128|1575|233
"""

# rows of TABLE some other file already holds: (line, precision) -> that row's id
HELD = {
    (103, "FP8"): "bridge2606-llama3.1-405b-gb200-256-fp8",
    (104, "MXFP8"): "bridge2606-llama3.1-405b-gb200-256-mxfp8",
    (106, "FP8"): "bridge2606-llama3.1-405b-h100-1024-fp8",
    (114, "MXFP8"): "bridge2606-deepseek-v3-gb200-256-mxfp8",
    (122, "MXFP8"): "bridge2606-gpt-oss-120b-gb200-64-mxfp8",
    (130, "MXFP8"): "bridge2606-qwen3-30b-a3b-gb200-8-mxfp8",
    (132, "FP8"): "bridge2606-qwen3-30b-a3b-h100-16-fp8",
    (139, "MXFP8"): "bridge2606-qwen3-235b-a22b-gb200-256-mxfp8",
    (204, "FP8"): "bridge2604p1-llama3-70b-gb200-64-fsdp",
    (207, "FP8"): "bridge2604p1-llama3-70b-h100-64-gbs256",
    (216, "FP8"): "bridge2604p1-llama3.1-405b-gb200-256",
    (219, "FP8"): "bridge2604p1-llama3.1-405b-h100-1024-gbs1536",
    (226, "MXFP8"): "bridge2604p1-deepseek-v3-gb200-256",
    (228, "MXFP8"): "bridge2604p1-deepseek-v3-b200-256",
    (237, "BF16"): "bridge2604p1-gpt-oss-120b-b200-64",
    (238, "BF16"): "bridge2604p1-gpt-oss-120b-h100-64",
    (247, "MXFP8"): "bridge2604p1-qwen3-30b-a3b-b200-8",
    (248, "FP8"): "bridge2604p1-qwen3-30b-a3b-h100-16-ep16",
    (255, "MXFP8"): "bridge2604p1-qwen3-235b-a22b-gb200-256",
    (257, "MXFP8"): "bridge2604p1-qwen3-235b-a22b-b200-256",
    (258, "FP8"): "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192",
    (578, "FP8-CS"): "bridge2511-llama3-8b-b200-8",
    (579, "FP8-CS"): "bridge2511-llama3.1-405b-b200-128",
    (589, "FP8-CS"): "bridge2511-llama3-8b-8",
    (590, "FP8-CS"): "bridge2511-llama3-70b-64",
    (591, "FP8-CS"): "bridge2511-llama3.1-405b-1024",
    (593, "FP8-CS"): "bridge2511-qwen3-30b-a3b-16",
    (594, "FP8-CS"): "bridge2511-qwen3-235b-a22b-h100-256-gbs2048",
}
HELDOUT = Path(__file__).resolve().parent / "training_heldout.csv"

# system -> (gpu, gpus_per_node, nic_gbps_per_gpu), as the public file's rows of these sections
# spell them (GB200 NVL72: 64, NIC empty; DGX-H100: 8 x 400 Gb/s; DGX-B200: 8, NIC empty)
SYSTEMS = {"DGX-GB300": ("gb300", "64", ""), "DGX-GB200": ("gb200", "64", ""),
           "DGX-B300": ("b300-sxm-288gb", "8", ""), "DGX-B200": ("b200-sxm-180gb", "8", ""),
           "DGX-H100": ("h100-sxm-80gb", "8", "400")}
# table model name -> the public row whose model and shape cells are copied
MODELS = {"LLAMA3_8B": "bridge2511-llama3-8b-8",
          "LLAMA3_70B": "bridge2604p1-llama3-70b-h100-64-gbs256",
          "LLAMA3.1_405B": "bridge2604p1-llama3.1-405b-h100-1024-gbs1536",
          "DeepSeekV3": "bridge2604p1-deepseek-v3-gb200-256",
          "GPT OSS 120B": "bridge2604p1-gpt-oss-120b-h100-64",
          "Qwen3_30B_a3B": "bridge2604p1-qwen3-30b-a3b-h100-16-ep16",
          "Qwen3_235B_a22B": "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192"}
SHAPE = ("model", "hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
         "ffn_hidden_size", "vocab_size", "activation", "num_experts", "moe_top_k",
         "moe_ffn_hidden_size")
MUON = ("Muon optimizer (the table's footnote): training.optimizer is one of adam, lamb, sgd "
        "(the kimi-k2 preset exists; its optimizer step does not)")
UNEXPRESSIBLE = {"Kimi_K2": MUON}
HYBRID = {"Nemotron_3_Nano": "nemotron-3-nano-30b-a3b",
          "Nemotron_3_Super": "nemotron-3-super-120b-a12b"}
"""Hybrid models whose rows ``--hybrid`` writes (the model cell a preset; no shape cells)."""
# table precision -> (dtype, fp8_recipe); 'FP8' alone: the profile's recipe (current scaling
# since 25.11, megatron-bridge.yaml), left empty as the public and held-out rows of 26.x leave it
PRECISION = {"FP8": ("fp8", ""), "FP8-CS": ("fp8", "current"), "FP8-MX": ("fp8", "mxfp8"),
             "MXFP8": ("fp8", "mxfp8"), "BF16": ("bf16", ""), "NVFP4": ("fp8", "nvfp4")}
PRECISION_WORDS = {"FP8": "FP8, recipe not named", "FP8-CS": "FP8 current scaling",
                   "FP8-MX": "MXFP8 block scaling", "MXFP8": "MXFP8 block scaling",
                   "BF16": "BF16", "NVFP4": "NVFP4 block scaling, TE NVFP4BlockScaling"}
TAGS = {"FP8": "fp8", "FP8-CS": "fp8cs", "FP8-MX": "mxfp8", "MXFP8": "mxfp8", "BF16": "bf16",
        "NVFP4": "nvfp4"}


def table() -> list[dict[str, str]]:
    return [dict(zip(COLUMNS, line.split("|"))) for line in TABLE.strip().splitlines()]


def _alt(cell: str) -> tuple[str, str | None]:
    """'FP8-CS (FP8-MX)' -> ('FP8-CS', 'FP8-MX'); '4520' -> ('4520', None)."""
    m = re.fullmatch(r"([^()]+?)\s*(?:\(([^()]+)\))?", cell)
    return m.group(1), m.group(2)


def variants(t: dict[str, str]) -> list[tuple[str, str, bool]]:
    """(precision, tokens/s/GPU, is the parenthesized alternate) of one table row."""
    (prec, alt), (tok, alt_tok) = _alt(t["precision"]), _alt(t["tokens"])
    return [(prec, tok, False)] + ([(alt, alt_tok, True)] if alt else [])


def iteration_s(t: dict[str, str], tokens: str) -> float:
    return int(t["gbs"]) * int(t["seq"]) / (float(tokens) * int(t["gpus"]))


def _size(t: dict[str, str], column: str) -> str:
    """A parallel size; the table's 'n/a' (no interleaving, no experts) is 1."""
    return "1" if t[column] == "n/a" else t[column]


def left_out() -> list[str]:
    """The table's rows the tool cannot express, each with the reason."""
    out = []
    for t in table():
        name = re.sub(r"\s*\(.*\)", "", t["model"])
        for prec, _tok, _ in variants(t):
            why = UNEXPRESSIBLE.get(name)
            if name in HYBRID and why is None:
                continue  # in the --hybrid file
            if why:
                out.append(f"{t['section']} {t['system']} {name} {t['gpus']} GPUs {prec} "
                           f"(line {t['line']}): {why}")
    return out


def rows(hybrid: bool = False) -> list[dict[str, str]]:
    """The check file's rows: every expressible row not held elsewhere, of the ``HYBRID``
    models only (``hybrid``) or of the others."""
    templates = {r["id"]: r for r in csv.DictReader(PUBLIC.open())}
    out = []
    for t in table():
        name = re.sub(r"\s*\(.*\)", "", t["model"])
        for prec, tok, alternate in variants(t):
            if name in UNEXPRESSIBLE or (int(t["line"]), prec) in HELD \
                    or (name in HYBRID) != hybrid:
                continue
            shape = ({**{c: "" for c in SHAPE}, "model": HYBRID[name]}
                     if hybrid else templates[MODELS[name]])
            gpu, per_node, nic = SYSTEMS[t["system"]]
            dtype, recipe = PRECISION[prec]
            mtp = "0" if "w/o MTP" in t["model"] else ""
            fsdp = t["fsdp"] not in ("-", "0")
            note = [f"Megatron-Bridge perf recipe, NeMo {t['section']}; published {tok} tok/s/GPU",
                    f"iteration = GBS {t['gbs']} x seq {t['seq']} / (tok/s/GPU x {t['gpus']})",
                    f"precision '{prec}' ({PRECISION_WORDS[prec]}"
                    + ("; stored as fp8)" if dtype == "fp8" else ")")]
            if alternate:
                note.append("the table's parenthesized value: 'different quantization "
                            "granularities', 32x32 blocks on GB200 / B200 (its footnote)")
            note.append("no FSDP column in this release's table" if t["fsdp"] == "-" else
                        f"FSDP {t['fsdp']} = Megatron FSDP (zero_stage 3)" if fsdp else
                        "FSDP 0 = DDP (distributed optimizer not stated)")
            tail = gather = ""
            if prec == "NVFP4" and name == "Nemotron_3_Super":
                tail = SUPER_NVFP4_BF16_TAIL
                gather = SUPER_NVFP4_PARAM_GATHER.get(SECTIONS[t["section"]], "")
                note.append("NVFP4 recipe (Megatron-Bridge@067f987d perf_recipes/nemotronh/"
                            "common.py L65-70): the last 14 layers BF16 (num_layers_at_end_in_"
                            "bf16); fp4_param_gather off (v0.5.0 nemotron_3_llm_pretrain.py "
                            "L45); not read: te_quant.cfg's BF16 attention, "
                            "latent and MTP linears and MXFP8 Mamba out_proj (priced NVFP4)")
            elif prec == "NVFP4":
                note.append("bf16_with_nvfp4_mixed: no BF16 layers, fp4_param_gather on "
                            "(Megatron-Bridge@067f987d training/mixed_precision.py L405-418)")
            scope = None
            if hybrid:
                graphs = HYBRID_GRAPHS[name]
                scope = graphs.get(f"{t['system']} {prec}", graphs[""])
            modules = None
            if hybrid:
                graphs = HYBRID_RECOMPUTE[name]
                modules = graphs.get(f"{t['system']} {prec}", graphs[""])
            if scope:
                note.append(f"the recipe's TE-scoped CUDA graphs ({scope}) and DP overlap "
                            "(HYBRID_GRAPHS)")
            if hybrid:
                note.append((f"recompute selective {modules}" if modules else "recompute none")
                            + " (the recipe's, HYBRID_RECOMPUTE); "
                            + HYBRID_SETTINGS_NOTE.format(file=RECIPE_FILE)
                            + ("" if scope else "; overlaps not stated"))
            else:
                note.append("recompute, sequence parallel, dispatcher and overlaps not stated")
            if t["ga"] != "-":
                dp = int(t["gpus"]) // (int(t["tp"]) * int(t["pp"]) * int(t["cp"]))
                ga = int(t["gbs"]) // (dp * int(t["mbs"]))
                note.append(f"GA {t['ga']}" if ga == int(t["ga"]) else
                            f"the table's GA {t['ga']} is not GBS / (DP {dp} x MBS) = {ga}; "
                            "its other cells kept as published")
            if mtp:
                note.append("'DeepSeekV3 (w/o MTP)': mtp_num_layers 0")
            elif name == "DeepSeekV3":
                note.append(f"'{t['model']}': the preset's MTP layer")
            if shape["num_experts"] or hybrid:  # Nano's E layers: 128 experts
                note.append("MoE benchmarks force-balance tokens among experts, dropless "
                            "(the archive's footnote)")
            if gpu in ("gb300", "gb200"):
                note.append("NVL72 rack: gpus_per_node 64 as the public file's GB200 rows; "
                            "NIC not stated")
            elif not nic:
                note.append(f"{t['system']} NIC not stated")
            rid = (f"bridgearch{ID_RELEASE[t['section']]}-{shape['model']}-{gpu.split('-')[0]}"
                   f"-{t['gpus']}-{TAGS[prec]}" + ("-nomtp" if mtp else ""))
            row = {c: "" for c in (HYBRID_HEADER if hybrid else HEADER)}
            row.update({c: shape[c] for c in SHAPE})
            if hybrid:
                lines = HYBRID_ETP[t["section"]]
                base = f"BASE_NEMOTRON_3_{'SUPER' if 'Super' in name else 'NANO'}_CONFIG"
                note.append(f"etp 1: Megatron-Bridge@{RECIPE_TAGS[t['section']]} {RECIPE_FILE} "
                            f"L{lines[base]} "
                            f"({base}: expert_tensor_parallel_size=1; no system's config "
                            "changes it)")
            row.update(id=rid, source=SOURCE.format(section=t["section"], system=t["system"],
                                                    line=t["line"]),
                       seq_length=t["seq"], mtp_num_layers=mtp, gpu=gpu, num_gpus=t["gpus"],
                       gpus_per_node=per_node, nic_gbps_per_gpu=nic, tp=_size(t, "tp"),
                       pp=_size(t, "pp"), cp=_size(t, "cp"), ep=_size(t, "ep"),
                       vpp=_size(t, "vp"), zero_stage="3" if fsdp else "",
                       global_batch_size=t["gbs"], micro_batch_size=t["mbs"], dtype=dtype,
                       fp8_recipe=recipe, num_layers_at_end_in_bf16=tail,
                       **({"fp8_param_gather": gather, "etp": "1",
                           "recompute": "selective" if modules else "none",
                           "recompute_modules": modules, "moe_dispatcher": "hybridep",
                           "sequence_parallel": "1" if _size(t, "tp") != "1" else "0",
                           "distributed_optimizer": "1"} if hybrid else {}),
                       **({"options": "dp_overlap;cuda_graphs", "cuda_graph_scope": scope}
                          if scope else {}),
                       framework="megatron-bridge",
                       framework_version=SECTIONS[t["section"]],
                       measured_iteration_s=f"{iteration_s(t, tok):.4f}", note="; ".join(note))
            out.append(row)
    ids = [r["id"] for r in out]
    for r in out:  # one workload at two batches (26.06 DeepSeek-V3 on GB300): name the batch
        if ids.count(r["id"]) > 1:
            r["id"] += f"-gbs{r['global_batch_size']}"
        if not hybrid and (said := bridge_recipe_cells.note(r["id"], r["framework_version"])):
            r.update(bridge_recipe_cells.cells(r["id"], r["tp"]))
            r["note"] += f"; {said}"
    return out


def _mirror() -> Path:
    return mirror_rows.mirror(REPO_DIR)


def mirror_table(text: str) -> list[dict[str, str]]:
    """Every pre-training row of the three sections in the archive's text, as ``table()``."""
    out, section, pretrain, context, header = [], None, False, "", []
    for n, line in enumerate(text.splitlines(), 1):
        if m := re.match(r"## (\S+) NeMo Container", line):
            section, pretrain = m.group(1), False
        elif line.startswith("### "):
            pretrain = "Pre-Training" in line
        elif m := re.match(r"#### (?:Model|System): (.+)", line):
            context, header = m.group(1).strip(), []
        elif line.startswith("|") and section in SECTIONS and pretrain:
            cells = [re.sub(r"\[\^[^]]*\]", "", c).strip()
                     for c in line.strip().strip("|").split("|")]
            if not header:
                header = cells
            elif not set(line) <= set("|- "):
                rec = dict(zip(header, cells))
                out.append({"line": str(n), "section": section,
                            "system": rec.get("System", context),
                            "model": rec.get("Model", context), "gpus": rec["#-GPUs"],
                            "precision": rec["Precision"], "gbs": rec["GBS"], "mbs": rec["MBS"],
                            "seq": rec["Sequence Length"], "fsdp": rec.get("FSDP", "-"),
                            "tp": rec["TP"], "pp": rec["PP"], "cp": rec["CP"], "vp": rec["VP"],
                            "ep": rec["EP"], "ga": rec.get("GA", "-"),
                            "tokens": rec["Tokens / sec / GPU"],
                            "tflops": rec["Model TFLOP / sec / GPU"]})
    return out


def recipe_configs(text: str) -> dict[str, dict]:
    """Each ``NAME = WorkloadBaseConfig(...)``, ``replace(BASE, ...)`` or ``OTHER`` of a
    workload base config file: its keyword settings (literals), the base's resolved."""
    out: dict[str, dict] = {}
    for node in ast.parse(text).body:
        if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
            continue
        name, v = node.targets[0].id, node.value
        if isinstance(v, ast.Name) and v.id in out:
            out[name] = out[v.id]
        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and \
                v.func.id in ("WorkloadBaseConfig", "replace"):
            base = out[v.args[0].id] if v.args and isinstance(v.args[0], ast.Name) else {}
            out[name] = {**base, **{k.arg: ast.literal_eval(k.value) for k in v.keywords}}
    return out


def recipe_scope_differences() -> list[str]:
    """``HYBRID_GRAPHS`` and ``HYBRID_RECOMPUTE`` against each hybrid row's recipe at its
    release's tag."""
    bad, files = [], {}
    for t in table():
        name = re.sub(r"\s*\(.*\)", "", t["model"])
        if name not in HYBRID_GRAPHS:
            continue
        tag = RECIPE_TAGS[t["section"]]
        if tag not in files:
            files[tag] = recipe_configs(mirror_rows.show(REPO_DIR, tag, RECIPE_FILE))
        key = (f"{name.upper()}_PRETRAIN_CONFIG_{t['system'].removeprefix('DGX-')}_"
               f"{RECIPE_PRECISION[t['precision']]}_V1")
        cfg = files[tag].get(key)
        if cfg is None:
            bad.append(f"line {t['line']}: no {key} at {tag}")
            continue
        got = "" if cfg.get("cuda_graph_impl", "none") == "none" else \
            ";".join(cfg.get("cuda_graph_scope") or [])
        graphs = HYBRID_GRAPHS[name]
        want = graphs.get(f"{t['system']} {t['precision']}", graphs[""])
        if got != want:
            bad.append(f"line {t['line']}: HYBRID_GRAPHS {want!r} != {key} at {tag}: {got!r}")
        got = ";".join(cfg.get("recompute_modules") or [])
        modules = HYBRID_RECOMPUTE[name]
        want = modules.get(f"{t['system']} {t['precision']}", modules[""])
        if got != want:
            bad.append(f"line {t['line']}: HYBRID_RECOMPUTE {want!r} != {key} at {tag}: {got!r}")
    return bad


def check() -> list[str]:
    """Differences between ``TABLE`` / ``HELD`` / ``HYBRID_GRAPHS`` and the mirror and the other
    files."""
    bad = recipe_scope_differences()
    want = mirror_table(mirror_rows.show(REPO_DIR, COMMIT, ARCHIVE))
    mine = table()
    if len(want) != len(mine):
        bad.append(f"{len(mine)} typed rows, {len(want)} in the archive's three sections")
    for a, b in zip(mine, want):
        if a != b:
            bad.append(f"line {b['line']}: typed {a} != archive {b}")
    held = {r["id"] for p in (PUBLIC, HELDOUT) for r in csv.DictReader(p.open())}
    bad += [f"HELD {k}: no row {v}" for k, v in HELD.items() if v not in held]
    bad += bridge_recipe_cells.check({r["id"]: r for r in rows()})
    return bad + check_hybrid_etp()


def check_hybrid_etp() -> list[str]:
    """``HYBRID_ETP`` against the recipe file at each section's tag: each base config's line
    sets expert TP 1 inside that config, and no other line sets one."""
    bad = []
    for section, lines in HYBRID_ETP.items():
        tag = RECIPE_TAGS[section]
        text = mirror_rows.show(REPO_DIR, tag, RECIPE_FILE).splitlines()
        sets = [n for n, line in enumerate(text, 1) if "expert_tensor_parallel_size" in line]
        if sorted(sets) != sorted(lines.values()):
            bad.append(f"{tag}: expert TP set on lines {sets}, typed {sorted(lines.values())}")
        for base, n in lines.items():
            opens = max(i for i, line in enumerate(text[:n], 1) if " = " in line
                        and not line.startswith(" "))
            if text[n - 1].strip() != "expert_tensor_parallel_size=1," or \
                    not text[opens - 1].startswith(f"{base} = "):
                bad.append(f"{tag} L{n}: {text[n - 1].strip()!r} in {text[opens - 1]!r}")
    return bad


def main() -> None:
    if sys.argv[1:] == ["--left-out"]:
        print("\n".join(left_out()))
        return
    if sys.argv[1:] == ["--hybrid"]:
        mirror_rows.main(lambda: rows(hybrid=True), HYBRID_HEADER, check, "")
        return
    mirror_rows.main(rows, HEADER, check, "table as in the archive; every held row exists")


if __name__ == "__main__":
    main()
