"""Input robustness, 2026-11-28 (46th session, fuzz46): the input classes a user meets at every
entry point that the rounds before left open.

- ``names``: near-miss and other-case spellings of every named value (each Literal field's
  values, the GPU, node, topology, fabric, NCCL algorithm / protocol, framework and schedule
  names): accepted as the value they spell, or refused in one line that suggests it;
- ``keys``: misspelt section keys (a field's name in capitals, with a letter dropped, the GPU
  and node of the cluster as other tools name them): the error names the key as written;
- ``aliases``: old names that must mean what they mean elsewhere (``flash`` in
  ``parallel.cp_te_ring`` is FlashAttention-2, as ``training.attention`` reads it; NCCL's
  protocols in any case, as NCCL_PROTO and ``trainsim collective --protocol`` read them);
- ``yaml``: YAML and JSON oddities as files (anchors, merge keys, duplicate keys, tags, deep
  nesting, alias bombs, several documents, BOM, CRLF, tabs, model sources that cannot be read);
- ``sets``: ``simulate --set`` of every field of every section with 32 shell texts (a seeded
  sample unless ``--every-set``);
- ``columns``: the four validation CSV kinds with each column dropped, renamed in capitals or
  spaced, emptied, given a comma, reversed, delimited by ``;`` or tabs, quoted, extended;
- ``hf``: Hugging Face config.json files with each key dropped, rope_scaling kinds, unknown
  architectures and model types, odd values;
- ``commands``: search / plan / sweep / goodput / export / collective with extreme flags, a
  ``--format json`` answer read as JSON, and a wrong choice answered with its nearest value.

Each input must give a sane answer or one ``TrainsimError`` line (``fuzz_checks.outcome``; 20 s a
case is a hang); the surfaces add their own oracles (named above).

    PYTHONPATH=src python benchmarks/fuzz_inputs46.py [--only names,keys,...] [--every]
        [--every-set] [--seed N]
"""
from __future__ import annotations

import copy
import csv
import io
import os
import random
import sys
import tempfile
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_checks
from fuzz_checks import (
    BASES,
    Case,
    fields_of,
    only_of,
    print_report,
    run_config,
    run_surfaces,
    seeded_sample,
    surface_parser,
)
from fuzz_inputs46_cli import command_cases, hf_cases, json_answer
from fuzz_sweep import _cli

from trainsim.catalog import apply_overrides, run_config_from_dict
from trainsim.errors import TrainsimError
from trainsim.simulator import simulate

fuzz_checks.TIME_LIMIT_S = 20
ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "../shared/validation"
NAMES = {("training", "framework"): ["megatron-lm", "megatron-core", "nemo", "deepspeed",
                                     "torchtitan", "llm-foundry"],
         ("cluster", "gpu"): ["h100-sxm-80gb", "a100-sxm-80gb", "b200-sxm-180gb", "mi300x"],
         ("cluster", "node"): ["dgx-h100", "dgx-a100", "gb200-nvl72"],
         ("cluster", "topology"): ["rail-optimized", "spine-leaf", "torus"],
         ("cluster", "fabric"): ["infiniband", "roce"],
         ("cluster", "nccl_algo"): ["ring", "tree"],
         ("cluster", "nccl_proto"): ["Simple", "LL128"],
         ("parallel", "pipeline_schedule"): ["1f1b", "interleaved_1f1b", "dualpipe_v"]}
"""Named values that are not Literal fields: a few of each catalog or list."""
TUPLE_FIELDS = ("cp_te_ring", "flex_two_ranks", "recompute_modules", "cuda_graph_scope")
UNKNOWN_WORDS = ("unknown", "is not one of", "not in [", "no such", "not a ")


def _values(tp: typing.Any) -> list[str]:
    """The text values a Literal (or a tuple or Optional of one) field takes."""
    out: list[str] = []
    for a in typing.get_args(tp):
        if isinstance(a, str):
            out.append(a)
        else:
            out += _values(a)
    return list(dict.fromkeys(out))


def _misspelt(v: str) -> list[str]:
    """Other cases, and one letter dropped at the end, the start and the middle."""
    out = [v.upper(), v.capitalize()]
    if len(v) > 3:
        out += [v[:-1], v[1:], v[:len(v) // 2] + v[len(v) // 2 + 1:]]
    return [m for m in dict.fromkeys(out) if m != v]


def _named(section: str, name: str, given: str) -> str | None:
    cfg = copy.deepcopy(BASES["mla"])
    cfg[section][name] = [given] if name in TUPLE_FIELDS else given
    try:
        run_config_from_dict(cfg)
    except TrainsimError as exc:
        text = str(exc)
        if "\n" in text.strip():
            return "multi-line error"
        unknown = any(w in text for w in UNKNOWN_WORDS) and f"{name}" in text.split(":")[0] \
            or text.startswith(("unknown GPU", "unknown node"))
        if unknown and "did you mean" not in text:
            return f"{section}.{name}: an unknown name refused without the nearest"
        fuzz_checks.REFUSED[0] += 1
    return None


def name_cases() -> Iterator[Case]:
    for section in ("model", "parallel", "training", "cluster"):
        for name, tp in fields_of(section):
            for v in _values(tp) + NAMES.get((section, name), []):
                for m in _misspelt(v):
                    yield (f"{section}.{name}={m!r}",
                           lambda s=section, n=name, g=m: _named(s, n, g))


def _key(section: str, key: str, value: typing.Any, bare: bool = False) -> str | None:
    """A config with ``section.key`` misspelt; ``bare``: a cluster section naming no GPU or
    node otherwise (the misspelt key is the one that would)."""
    cfg = copy.deepcopy(BASES["dense"])
    if section == "model" and key != "preset":
        cfg["model"] = {"preset": "llama3-8b"}
    if section == "cluster" and (bare or key.lower() in ("gpu", "node", "gp", "nod")):
        cfg["cluster"] = {"num_gpus": 8}  # the key misspelt is the one naming the GPU
    cfg[section][key] = value
    try:
        run_config_from_dict(cfg)
    except TrainsimError as exc:
        if key not in str(exc):
            return f"{section}: a misspelt key not named ({str(exc)[:50]})"
        fuzz_checks.REFUSED[0] += 1
        return None
    return f"{section}.{key}: a misspelt key read"


def key_cases() -> Iterator[Case]:
    cluster_only = {"gpu": "h100-sxm-80gb", "node": "dgx-h100"}
    for section in ("model", "parallel", "training", "cluster"):
        for name, _tp in fields_of(section):
            if name in ("name",) or section == "parallel" and name.startswith("_"):
                continue
            for m in [name.upper(), name[:-1]] if len(name) > 3 else [name.upper()]:
                if m.lower() in {n for n, _ in fields_of(section)} - {name}:
                    continue  # another field's name (vpp's VPP is no misspelling)
                value = cluster_only.get(name, 2)
                yield f"{section} key {m}", (lambda s=section, k=m, v=value: _key(s, k, v))
    for m in ["Gpu", "gpu_type", "gpu_name", "accelerator", "nod", "node_type"]:
        value = "dgx-h100" if "od" in m else "h100-sxm-80gb"
        yield f"cluster key {m}", (lambda k=m, v=value: _key("cluster", k, v, bare=True))


def _time(cfg: dict) -> float:
    return simulate(run_config_from_dict(copy.deepcopy(cfg))).iteration_time_s


def _same_as(cfg: dict, section: str, name: str, given: typing.Any,
             meant: typing.Any) -> str | None:
    a, b = copy.deepcopy(cfg), copy.deepcopy(cfg)
    a[section][name], b[section][name] = given, meant
    return None if _time(a) == _time(b) else f"{section}.{name}={given!r} priced unlike {meant!r}"


def alias_cases() -> Iterator[Case]:
    ring = copy.deepcopy(BASES["dense"])
    ring["parallel"].update(cp=2)
    ring["training"].update(seq_length=8192)
    for att in ("flash", "flash2", "FLASH"):
        with_att = copy.deepcopy(ring)
        with_att["training"]["attention"] = att
        for given in (["flash"], ["FLASH", "cudnn"], ["flash", "flash2"]):
            meant = ["flash2" if g.lower() == "flash" else g for g in given]
            yield (f"cp_te_ring={given} attention={att}",
                   lambda c=with_att, g=given, m=meant: _same_as(c, "parallel", "cp_te_ring", g, m))
    two = copy.deepcopy(BASES["dense"])
    two["cluster"].update(num_gpus=16)
    for given, meant in [("simple", "Simple"), ("SIMPLE", "Simple"), ("ll128", "LL128"),
                         ("ll", "LL"), (" LL ", "LL"), ("AUTO", "auto")]:
        yield f"nccl_proto={given!r}", (lambda g=given, m=meant:
                                        _same_as(two, "cluster", "nccl_proto", g, m))


# ----------------------------------------------------------------------------- files

BASE_YAML = ("parallel: {tp: 2}\ntraining: {global_batch_size: 128, micro_batch_size: 1, "
             "seq_length: 8192}\ncluster: {node: dgx-h100, num_gpus: 8}\n")


def yaml_texts() -> dict[str, str | bytes]:
    bomb = "".join(f"x-{c}: &{c} [{', '.join([f'*{p}'] * 10) if p else '1, ' * 9 + '1'}]\n"
                   for p, c in zip(" abcdefgh", "abcdefghi"))
    return {
        "plain": "model: llama3-8b\n" + BASE_YAML,
        "dup_key": "model: llama3-8b\nmodel: llama3-70b\n" + BASE_YAML,
        "anchor": "x-p: &p {tp: 2}\nmodel: llama3-8b\nparallel: *p\n" + BASE_YAML.split("\n", 1)[1],
        "merge": "x-p: &p {tp: 2}\nmodel: llama3-8b\nparallel: {<<: *p, pp: 1}\n"
                 + BASE_YAML.split("\n", 1)[1],
        "list_scalar": "model: llama3-8b\n" + BASE_YAML.replace("tp: 2", "tp: [2]"),
        "int_text": "model: llama3-8b\n" + BASE_YAML.replace("tp: 2", "tp: '2'"),
        "exp": "model: llama3-8b\n" + BASE_YAML.replace("128", "1e3"),
        "exp_dot": "model: llama3-8b\n" + BASE_YAML.replace("128", "1.28e2"),
        "inf": "model: llama3-8b\n" + BASE_YAML.replace("128", ".inf"),
        "nan": "model: llama3-8b\n" + BASE_YAML.replace("8192", ".nan"),
        "hex": "model: llama3-8b\n" + BASE_YAML.replace("tp: 2", "tp: 0x2"),
        "deep_list": "model: llama3-8b\n" + BASE_YAML.replace("tp: 2", "tp: " + "[" * 5000
                                                              + "]" * 5000),
        "deep_map": "model: llama3-8b\nx-d: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n" + BASE_YAML,
        "alias_bomb": bomb + "model: llama3-8b\n" + BASE_YAML,
        "python_tag": "model: !!python/object/apply:os.getcwd []\n" + BASE_YAML,
        "two_docs": "model: llama3-8b\n---\n" + BASE_YAML,
        "empty": "", "list_top": "- a\n- b\n", "scalar_top": "llama3-8b\n",
        "bom": "\ufeffmodel: llama3-8b\n" + BASE_YAML,
        "crlf": ("model: llama3-8b\n" + BASE_YAML).replace("\n", "\r\n"),
        "tab": "model: llama3-8b\nparallel:\n\ttp: 2\n",
        "latin1": ("model: llam\xe43-8b\n" + BASE_YAML).encode("latin-1"),
        "null_section": "model: llama3-8b\nparallel:\n" + BASE_YAML.split("\n", 1)[1],
        "int_key": "model: llama3-8b\n" + BASE_YAML.replace("tp: 2", "1: 2"),
        "upper_section": "model: llama3-8b\n" + BASE_YAML.replace("parallel:", "Parallel:"),
        "upper_key": "model: llama3-8b\n" + BASE_YAML.replace("tp: 2", "TP: 2"),
        "gpu_key_case": "model: llama3-8b\n" + BASE_YAML.replace("node: dgx-h100", "Gpu: h100"),
        "node_key_typo": "model: llama3-8b\n" + BASE_YAML.replace("node:", "nod:"),
        "gpu_near": "model: llama3-8b\n" + BASE_YAML.replace("node: dgx-h100",
                                                             "gpu: h100-sxm-80gbb"),
        "node_near": "model: llama3-8b\n" + BASE_YAML.replace("dgx-h100", "dgx-h10"),
        "topology_near": "model: llama3-8b\n" + BASE_YAML.replace("num_gpus: 8", "num_gpus: 8, "
                                                                   "topology: spine-lef"),
        "model_near": "model: lama3-8b\n" + BASE_YAML,
        "model_missing_file": "model: ./missing.yaml\n" + BASE_YAML,
        "hf_missing_file": "model: {hf_config: missing/config.json}\n" + BASE_YAML,
        "hf_empty": "model: {hf_config: ''}\n" + BASE_YAML,
        "preset_null": "model: {preset: ~}\n" + BASE_YAML,
        "preset_list": "model: {preset: [llama3-8b]}\n" + BASE_YAML,
        "preset_and_hf": "model: {preset: llama3-8b, hf_config: x.json}\n" + BASE_YAML,
        "json_dup": '{"model": "llama3-8b", "model": "llama3-70b"}',
        "json_nan": '{"model": {"preset": "llama3-8b", "hidden_size": NaN}}',
        "json_big": '{"model": {"preset": "llama3-8b", "hidden_size": 1' + "0" * 5000 + "}}",
        "json_trailing": '{"model": "llama3-8b",}',
    }


NAMED = {"upper_key": "did you mean 'tp'", "gpu_key_case": "cluster.Gpu", "node_key_typo":
         "cluster.nod", "hf_empty": "model.hf_config", "preset_null": "model.preset",
         "preset_list": "model.preset", "preset_and_hf": "model.preset and model.hf_config",
         "gpu_near": "did you mean", "node_near": "did you mean", "topology_near": "did you mean",
         "model_near": "did you mean", "upper_section": "did you mean"}
"""Files whose one-line refusal must say this: the key or field as written, or the nearest
name."""


def _says(args: list[str], text: str) -> str | None:
    """The CLI's refusal of ``args`` must hold ``text``."""
    from click.testing import CliRunner

    from trainsim.cli import main
    if text not in CliRunner().invoke(main, args).output:
        return f"the refusal does not say {text!r}"
    return None


def yaml_cases(workdir: str) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for name, text in yaml_texts().items():
            path = os.path.join(workdir, name + (".json" if name.startswith("json") else ".yaml"))
            Path(path).write_bytes(text if isinstance(text, bytes) else text.encode())
            for fmt in ("table", "json"):
                args = ["simulate", path, "--format", fmt]
                yield f"yaml {name} {fmt}", (lambda a=args: _cli(a, answer_check=json_answer(a)))
            if name in NAMED:
                yield f"yaml {name} says", (lambda a=["simulate", path], t=NAMED[name]: _says(a, t))
    return cases


SET_TEXTS = ["", "~", "[]", "{}", "[1, 2]", "{a: 1}", "'8'", "1e3", "-1", "0", ".inf", ".nan",
             "0x10", "0o7", "1_000", "yes", "No", "True", "2.5", "&a 3", "!!str 4", "!!int x",
             "!!binary aGk=", "2020-01-01", "12:30", "1e400", "\u0663", "' '", '"\\u0000"',
             "a: b", "- 1", "null"]


def set_cases(sample: int, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def made() -> Iterator[Case]:
        for base_name, base in BASES.items():
            for section in ("model", "parallel", "training", "cluster"):
                for name, _tp in fields_of(section):
                    for text in SET_TEXTS:
                        item = f"{section}.{name}={text}"
                        yield f"{base_name} --set {item}", (
                            lambda b=base, i=item:
                            run_config(apply_overrides(copy.deepcopy(b), [i])))
    return lambda: iter(seeded_sample(made(), sample, rng))


def _csv(head: list[str], body: list[list[str]], delimiter: str = ",", **kw: typing.Any) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, **kw)
    w.writerow(head)
    w.writerows(body)
    return buf.getvalue()


def column_cases(workdir: str, sample: int, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def made() -> Iterator[Case]:
        for name, n in [("training_public.csv", 3), ("kernels_published.csv", 4),
                        ("collectives_public.csv", 4), ("kernels_h100_measured.csv", 4)]:
            with open(VALIDATION / name, newline="") as f:
                rows = list(csv.reader(f))
            head, body = rows[0], rows[1:1 + n]
            texts = {}
            for i, col in enumerate(head):
                texts[f"drop {col}"] = _csv(head[:i] + head[i + 1:],
                                            [r[:i] + r[i + 1:] for r in body])
                texts[f"upper {col}"] = _csv(head[:i] + [col.upper()] + head[i + 1:], body)
                texts[f"spaced {col}"] = _csv(head[:i] + [f" {col} "] + head[i + 1:], body)
                texts[f"empty {col}"] = _csv(head, [r[:i] + [""] + r[i + 1:] for r in body])
                texts[f"comma {col}"] = _csv(head, [r[:i] + [r[i] + ",x"] + r[i + 1:]
                                                    for r in body])
            texts.update({"reversed": _csv(head[::-1], [r[::-1] for r in body]),
                          "semicolon": _csv(head, body, ";"), "tab": _csv(head, body, "\t"),
                          "quoted": _csv(head, body, quoting=csv.QUOTE_ALL),
                          "extra": _csv(head + ["zz", "note2"], [r + ["1", "a,b"] for r in body])})
            for j, (mut, text) in enumerate(texts.items()):
                path = os.path.join(workdir, f"c{j}_{name}")
                Path(path).write_text(text)
                args = ["validate", path, "--format", "json", "--workers", "1"]
                yield f"{name} {mut}", (lambda a=args: _cli(a, answer_check=json_answer(a)))
    return lambda: iter(seeded_sample(made(), sample, rng))


def main(argv: list[str] | None = None) -> int:
    ap = surface_parser()
    ap.add_argument("--every-set", action="store_true", help="every --set text and CSV column "
                    "edit, not a seeded sample (15,456 + 560 inputs, about an hour)")
    ap.add_argument("--seed", type=int, default=46)
    args = ap.parse_args(argv)
    only = only_of(args)
    warnings.simplefilter("ignore")
    rng = random.Random(args.seed)
    sample = 0 if args.every_set else 1
    with tempfile.TemporaryDirectory() as workdir:
        surfaces = {"names": name_cases, "keys": key_cases, "aliases": alias_cases,
                    "yaml": yaml_cases(workdir), "sets": set_cases(sample * 1500, rng),
                    "columns": column_cases(workdir, sample * 120, rng),
                    "hf": hf_cases(workdir), "commands": command_cases(workdir)}
        return print_report(run_surfaces(surfaces, only), every=args.every)


if __name__ == "__main__":
    sys.exit(main())
