"""The check files' cells for the output layer's deferred weight gradient (Megatron-core
``defer_embedding_wgrad_compute`` / ``wgrad_deferral_limit``, ``trainsim.deferred_wgrad``), each
from the line of the recipe its row ran:

- NeMo-Framework-Launcher YAML (dgxc-benchmarking v24.11.1 / v25.02, nemo:24.09 / 24.12): the
  Llama 3.1 70B / 405B and Nemotron-4 340B recipes set the model keys (22 / 50 / 22); NeMo's
  megatron_gpt_model.py honours them under mcore_gpt with the Apex distributed Adam the yamls
  name (NVIDIA/NeMo v2.0.0 e938df327c L844-854 clears the buffer, L869-886 drains it after the
  schedule; v2.1.0 633cb60277 L880 / L905-922). GPT-3 175B's hydra yaml sets neither (NeMo's
  default False).
- NeMo 2.0 performance scripts (``pretrain_recipe(performance_mode=True)``): each recipe's
  ``pretrain_performance_optimizations`` gives MegatronCommOverlapCallback the setting (the
  callback's own default is off: nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py
  ``defer_embedding_wgrad_compute = False``, ``wgrad_deferral_limit = -1``): gpt3_175b 50,
  llama31_405b 50, llama3_70b 22, nemotron4_340b 22, the same setting at every tag v2.0.0 .. v2.5.0
  (llama31_70b / llama31_8b / nemotron 70B: 50; mixtral, deepseek_v3, llama4: none). The perf
  scripts turn it off only with Megatron FSDP (scripts/performance/utils.py), which no row uses.
- MLPerf Training v5.0 IBM+CoreWeave+NVIDIA Llama 3.1 405B (carina_ngpu*, NeMo 2): True, 50.

So the setting is per recipe (per model), not per framework release: no profile rule. Megatron-
Bridge's pretraining recipes dropped it on 2025-10-03 (5d194b9c1, #607, before v0.2.0 = 25.11;
v0.1.0rc3/rc4's llama31_405b.py / llama3_70b.py still set 50 / 22 when no comm_overlap is given,
and 25.09's run_script.py gives none: ``BRIDGE_2509``, the 25.09 points bridge_releases.py
prices); from v0.2.0 only fine-tuning configs set it, so no Bridge pre-training row here defers.

NeMo-Framework-Launcher 24.01 .. 24.07 (training_nemo_launcher.csv, the nemo2407 public rows):
no training YAML of the rows' models sets either key at those tags (``LAUNCHER_SILENT``; only
24.07's mlperf-24n.yaml, no row's recipe, does), and NeMo's megatron_gpt_model.py reads
``defer_embedding_wgrad_compute`` with default False (v2.0.0rc0, 24.05's NeMo; v1.23.0, 24.01 /
24.03's, has no such key): those rows did not defer, as their empty cells (the nemo profile:
no rule) already say.

    python benchmarks/deferral_cells.py --check            # every cited line against the mirrors
                                                           # (and the Launcher YAMLs' silence)
    python benchmarks/deferral_cells.py --write FILE.csv   # fill a hand-kept file's cells in place

The generators (dgxc2502_rows.py, dgxc2505_rows.py, dgxc_llama31_2505_rows.py) call
:func:`stated` on each row; training_dgxc.csv, training_nemo_perf.csv and training_mlperf5.csv have
no generator and were filled with ``--write``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

DGXC = "NVIDIA+dgxc-benchmarking"
NEMO = "NVIDIA+NeMo"
MLCOMMONS50 = "mlcommons+training_results_v5.0"
MLPERF50 = "0fdc28f013"
COLUMNS = ("defer_embedding_wgrad_compute", "wgrad_deferral_limit")
RECIPES = "nemo/collections/llm/recipes"


def _yaml(commit: str, path: str, line: int, limit: int) -> tuple:
    return (limit, f"NVIDIA/dgxc-benchmarking@{commit} {path} L{line}-{line + 1}",
            ((DGXC, commit, path, line, "defer_embedding_wgrad_compute: true"),
             (DGXC, commit, path, line + 1, f"wgrad_deferral_limit: {limit}")))


def _recipe(commit: str, recipe: str, line: int, limit: int, script: tuple) -> tuple:
    """A NeMo 2 recipe's performance mode (lines ``line``, ``line + 1``), run by ``script``:
    (repo, commit, path, line) of its ``pretrain_recipe(performance_mode=True)`` call."""
    repo, s_commit, s_path, s_line = script
    where = "NVIDIA/NeMo" if repo == NEMO else "NVIDIA/dgxc-benchmarking"
    path = f"{RECIPES}/{recipe}.py"
    cite = (f"NVIDIA/NeMo@{commit} {path} L{line}-{line + 1} (pretrain_performance_optimizations), "
            f"run by {where}@{s_commit} {s_path} L{s_line} pretrain_recipe(performance_mode=True)")
    return (limit, cite,
            ((NEMO, commit, path, line, "defer_embedding_wgrad_compute=True"),
             (NEMO, commit, path, line + 1, f"wgrad_deferral_limit={limit}"),
             (repo, s_commit, s_path, s_line, "performance_mode=True")))


def _carina(gpus: int) -> tuple:
    """MLPerf Training v5.0 IBM+CoreWeave+NVIDIA Llama 3.1 405B on ``gpus`` GB200 (NeMo 2,
    Megatron-core DDP): config_common.sh exports the setting, conf/custom.yaml reads it into the
    model config, pretrain.py hands it to MegatronCommOverlapCallback."""
    d = (f"IBM+CoreWeave+NVIDIA/benchmarks/llama31_405b/implementations/"
         f"carina_ngpu{gpus}_ngc25.04_nemo")
    cite = (f"mlcommons/training_results_v5.0@{MLPERF50} {d}/config_common.sh L66-67, "
            "conf/custom.yaml L84-85, pretrain.py L500-501")
    return (50, cite,
            ((MLCOMMONS50, MLPERF50, f"{d}/config_common.sh", 66,
              "export DEFER_EMBEDDING_WGRAD_COMPUTE=True"),
             (MLCOMMONS50, MLPERF50, f"{d}/config_common.sh", 67, "export WGRAD_DEFERRAL_LIMIT=50"),
             (MLCOMMONS50, MLPERF50, f"{d}/conf/custom.yaml", 84, "DEFER_EMBEDDING_WGRAD_COMPUTE"),
             (MLCOMMONS50, MLPERF50, f"{d}/conf/custom.yaml", 85, "WGRAD_DEFERRAL_LIMIT"),
             (MLCOMMONS50, MLPERF50, f"{d}/pretrain.py", 500,
              "defer_embedding_wgrad_compute=config.model.defer_embedding_wgrad_compute"),
             (MLCOMMONS50, MLPERF50, f"{d}/pretrain.py", 501,
              "wgrad_deferral_limit=config.model.wgrad_deferral_limit")))


def _nemo_script(commit: str, name: str, line: int, old: bool = False) -> tuple:
    folder = "scripts/llm/performance" if old else "scripts/performance/llm"
    return (NEMO, commit, f"{folder}/pretrain_{name}.py", line)


# row id prefix -> (limit, citation, ((mirror, commit, path, line, text that line holds), ...))
STATED = {
    # dgxc-benchmarking v24.11.1 (35a9aecc8d) and v25.02 (8f5cbb3799): Launcher YAML
    "dgxc2411-llama3.1-405b-": _yaml("35a9aecc8d", "llama3.1/llama3.1_405b.yaml", 124, 50),
    "dgxc2411-llama3.1-70b-": _yaml("35a9aecc8d", "llama3.1/llama3.1_70b.yaml", 118, 22),
    "dgxc2411-nemotron4-340b-": _yaml("35a9aecc8d", "nemotron/nemotron4-340b-synth.yaml", 214, 22),
    "dgxc2502-llama3.1-405b-": _yaml("8f5cbb3799", "llama3.1/llama3.1_405b.yaml", 124, 50),
    "dgxc2502-llama3.1-70b-": _yaml("8f5cbb3799", "llama3.1/llama3.1_70b.yaml", 118, 22),
    # dgxc-benchmarking v25.04 (741c886025): the release's pretrain_llama31.py, NeMo d2b21556f2
    "dgxc2504-llama3.1-405b-": _recipe("d2b21556f2", "llama31_405b", 241, 50,
                                       (DGXC, "741c886025", "llama3.1/pretrain_llama31.py", 89)),
    "dgxc2504-llama3.1-70b-": _recipe("d2b21556f2", "llama3_70b", 234, 22,
                                      (DGXC, "741c886025", "llama3.1/pretrain_llama31.py", 76)),
    "dgxc2504-nemotron4-340b-": _recipe("d2b21556f2", "nemotron4_340b", 214, 22,
                                        _nemo_script("d2b21556f2", "nemotron4_340b", 56)),
    # dgxc-benchmarking v25.05 (NeMo 7a8f1cc7bc / b4148d2169) and v25.05.01 (6f2c6fdaff)
    "dgxc2505-llama3.1-405b-": _recipe("7a8f1cc7bc", "llama31_405b", 241, 50,
                                       _nemo_script("7a8f1cc7bc", "llama31_405b", 65)),
    "dgxc2505-nemotron4-340b-": _recipe("b4148d2169", "nemotron4_340b", 214, 22,
                                        _nemo_script("b4148d2169", "nemotron4_340b", 62)),
    "dgxc250501-llama3.1-405b-": _recipe("6f2c6fdaff", "llama31_405b", 241, 50,
                                         _nemo_script("6f2c6fdaff", "llama31_405b", 65)),
    # the NeMo performance summary: 25.02 = v2.2.0 (7192a2c944), 25.04 = v2.3.0 (2b03b748bb)
    "nemo2502-gpt3-175b-": _recipe("v2.2.0", "gpt3_175b", 232, 50,
                                   _nemo_script("v2.2.0", "gpt3_175b", 56, old=True)),
    "nemo2502-llama3-70b-": _recipe("v2.2.0", "llama3_70b", 234, 22,
                                    _nemo_script("v2.2.0", "llama3_70b", 56, old=True)),
    "nemo2502-llama3-405b-": _recipe("v2.2.0", "llama31_405b", 241, 50,
                                     _nemo_script("v2.2.0", "llama31_405b", 56, old=True)),
    "nemo2502-nemotron4-340b-": _recipe("v2.2.0", "nemotron4_340b", 214, 22,
                                        _nemo_script("v2.2.0", "nemotron4_340b", 54, old=True)),
    "nemo2504-gpt3-175b-": _recipe("v2.3.0", "gpt3_175b", 232, 50,
                                   _nemo_script("v2.3.0", "gpt3_175b", 62)),
    "nemo2504-llama3-405b-": _recipe("v2.3.0", "llama31_405b", 241, 50,
                                     _nemo_script("v2.3.0", "llama31_405b", 62)),
    "nemo2504-nemotron4-340b-": _recipe("v2.3.0", "nemotron4_340b", 214, 22,
                                        _nemo_script("v2.3.0", "nemotron4_340b", 60)),
    # MLPerf Training v5.0 (NVIDIA's own eos-dfw / Nebius Llama 3.1 405B configs keep custom.yaml's
    # default False: no cells)
    **{f"mlperf50-coreweave-llama3.1-405b-gb200-{n}": _carina(n)
       for n in (512, 1024, 1536, 2048, 2496)},
}


BRIDGE = "NVIDIA-NeMo+Megatron-Bridge"
BRIDGE_2509_TAG = "v0.1.0rc3"
"""Megatron-Bridge's 25.09 release (the megatron-bridge profile's first entry, 2025-10-07)."""


def _bridge_2509(recipe: str, line: int, limit: int, run_line: int) -> tuple:
    """A Megatron-Bridge 25.09 Llama pre-training workload: scripts/performance/run_script.py
    (line ``run_line``) builds ``{recipe}_pretrain_config`` with no ``comm_overlap_config``, so
    the recipe's own CommOverlapConfig (lines ``line``, ``line + 1``) defers."""
    path = f"src/megatron/bridge/recipes/llama/{recipe}.py"
    run = "scripts/performance/run_script.py"
    cite = (f"NVIDIA-NeMo/Megatron-Bridge@{BRIDGE_2509_TAG} {path} L{line}-{line + 1} (the "
            f"CommOverlapConfig pretrain_config builds when none is passed; v0.1.0rc4 the same "
            f"lines), run so by {run} L{run_line}")
    call = f"{recipe}_pretrain_config(mock=True, precision_config=precision_config)"
    return (limit, cite,
            ((BRIDGE, BRIDGE_2509_TAG, path, line, "defer_embedding_wgrad_compute=True"),
             (BRIDGE, BRIDGE_2509_TAG, path, line + 1, f"wgrad_deferral_limit={limit}"),
             (BRIDGE, "v0.1.0rc4", path, line, "defer_embedding_wgrad_compute=True"),
             (BRIDGE, "v0.1.0rc4", path, line + 1, f"wgrad_deferral_limit={limit}"),
             (BRIDGE, BRIDGE_2509_TAG, run, run_line, call)))


BRIDGE_2509 = {
    "bridge2604p1-llama3.1-405b-h100-1024-gbs1536": _bridge_2509("llama31_405b", 239, 50, 54),
    "bridge2604p1-llama3-70b-h100-64-gbs256": _bridge_2509("llama3_70b", 223, 22, 52),
    "bridge2511-llama3.1-405b-b200-128": _bridge_2509("llama31_405b", 239, 50, 54),
}
"""The 25.09 points of benchmarks/bridge_releases.py (keyed by the public row whose cells are the
workload's) whose run deferred the output layer's weight gradient. The Megatron-FSDP workload
(Llama 3 70B on 64 GB200) did not: scripts/performance/utils/helpers.py L81-85 at v0.1.0rc3
switches the deferral off under Megatron FSDP. From v0.2.0 (25.11) the pre-training recipes set
none (5d194b9c1), so only the 25.09 points carry the cells."""
BRIDGE_2509_OFF = (BRIDGE, BRIDGE_2509_TAG, "scripts/performance/utils/helpers.py", 85,
                   "recipe.comm_overlap.defer_embedding_wgrad_compute = False")


LAUNCHER = "NVIDIA+NeMo-Framework-Launcher"
LAUNCHER_KEYS = ("defer_embedding_wgrad_compute", "wgrad_deferral_limit")
NEMO_DEFAULT = (NEMO, "v2.0.0rc0", "nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py",
                802, "self.cfg.get('defer_embedding_wgrad_compute', False)")
"""NeMo 24.05's GPT model reads the key with default False (NeMo v1.23.0 has no such key)."""


def launcher_silent() -> list[tuple[str, str]]:
    """(commit, YAML) of each Launcher recipe the rows ran: training_nemo_launcher.csv's
    (launcher_table_rows.py's commits and YAMLs) and the 24.07 tag's of the nemo2407 public rows'
    models (the same YAMLs)."""
    import launcher_table_rows as lt

    out = {(lt.COMMITS[gen][0], f"launcher_scripts/conf/training/{lt.YAML[preset]}.yaml")
           for gen, _line, _name, preset, *_ in lt.TABLE}
    out |= {("24.07", f"launcher_scripts/conf/training/{y}.yaml") for y in lt.YAML.values()}
    return sorted(out)


def source_of(row_id: str) -> tuple | None:
    """The STATED entry whose prefix starts ``row_id`` (None: its recipe states nothing)."""
    hits = [v for k, v in STATED.items() if row_id.startswith(k)]
    if len(hits) > 1:
        raise ValueError(f"{row_id}: more than one STATED prefix")
    return hits[0] if hits else None


def clause(limit: int, cite: str) -> str:
    """The note's account of the cells."""
    return (f"output-layer weight gradient deferred to the pipeline drain: "
            f"defer_embedding_wgrad_compute 1, wgrad_deferral_limit {limit} ({cite})")


def stated(row: dict) -> dict:
    """``row`` with the two cells (and a clause at the end of its note) where its recipe sets
    them; the cells empty otherwise (the profile's rule: none for nemo)."""
    out = {**row, **dict.fromkeys(COLUMNS, "")}
    src = source_of(str(row["id"]))
    if src is None:
        return out
    limit, cite, _ = src
    out.update(defer_embedding_wgrad_compute=1, wgrad_deferral_limit=limit)
    text = clause(limit, cite)
    if text not in str(out["note"]):
        out["note"] = f"{out['note']}; {text}"
    return out


def check(start: str = "") -> list[str]:
    """Each STATED line (of the prefixes that begin with ``start``) against its mirror (empty:
    all as typed)."""
    bad: list[str] = []
    entries = [(k, v[2]) for k, v in STATED.items()]
    entries += [(f"bridge 25.09 {k}", v[2]) for k, v in BRIDGE_2509.items()]
    entries.append(("bridge 25.09 fsdp off", (BRIDGE_2509_OFF,)))
    entries.append(("launcher: NeMo's default", (NEMO_DEFAULT,)))
    if "launcher".startswith(start) or start.startswith("launcher"):
        for commit, path in launcher_silent():
            text = mirror_rows.show(LAUNCHER, commit, path)
            bad += [f"launcher {commit} {path}: sets {k}" for k in LAUNCHER_KEYS if k in text]
    return bad + mirror_rows.lines_differ(entries, start)

def write(path: Path) -> None:
    """Add the columns to the CSV at ``path``, each row as ``stated`` says, keeping its line ending."""
    mirror_rows.restate(path, COLUMNS, stated)


def main() -> None:
    mirror_rows.cells_main(check, stated, COLUMNS, "every deferral line as in the mirrors",
                           "usage: deferral_cells.py --check | --write FILE.csv ...")


if __name__ == "__main__":
    main()
