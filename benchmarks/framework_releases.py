"""Write src/trainsim/catalog/framework_releases.yaml: each framework's release tags and dates.

    python benchmarks/framework_releases.py [--mirror /work/.mirror] [--check]

A validation row may give a framework's version as a release ("DeepSpeed v0.14.0",
"core_r0.8.0") or as a date ("2024-07"), whichever its source printed (validation/README.md,
``framework, framework_version``). A profile is keyed by one of the two
(``catalog/frameworks/*.yaml``); this table translates. Each date is the committer date of the
commit the tag names, read from a mirror of the framework's repository with

    git -C MIRROR/<owner>+<name>/repo for-each-ref \\
        --format='%(refname:short) %(*committerdate:short)%(committerdate:short)' refs/tags

(``*committerdate`` is the tagged commit's of an annotated tag; some Megatron-LM tags were
re-created in 2025, so the tag's own date would be wrong). Only final releases are kept
(no rc/alpha/beta/dev); where two tags name one release (``core_v0.8.0``, ``core_r0.8.0``) the
``v`` tag's commit wins. Container-numbered frameworks (NeMo, Megatron-Bridge, "25.11") list
which library tag each container ships, as a cited source says, and that tag's date (evidence
only: a container is dated by its own YY.MM month, catalog/framework_versions.py; null where
the mirror lacks the tag).
``--check`` compares (framework, line) pairs and exits non-zero where a line of the file is not
what the mirrors give, where a line the mirrors give is missing from its framework's section
(a deleted or moved line), or where the shared lines are out of order; release lines dated
after the newest in the file's section (tags added to the mirrors since) are reported, not
failed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/trainsim/catalog/framework_releases.yaml"

# framework -> (repository, tag filter: a regex on the tag name, None = every release tag)
REPOS = {
    "deepspeed": ("deepspeedai/DeepSpeed", None),
    "llm-foundry": ("mosaicml/llm-foundry", None),
    "torchtitan": ("pytorch/torchtitan", None),
    "megatron-lm": ("NVIDIA/Megatron-LM", None),
    # Megatron-Core's own numbers: the core_v/core_r tags and the v0.X tags of the same repo
    "megatron-core": ("NVIDIA/Megatron-LM", r"^(tags/)?(core_[vr]|v)0\."),
    "nemo": ("NVIDIA/NeMo", r"^(tags/)?[vr]?\d"),
    "megatron-bridge": ("NVIDIA-NeMo/Megatron-Bridge", None),
}

# container -> (library tag it ships, where that is said)
CONTAINERS = {
    "nemo": {
        # docs.nvidia.com/nemo-framework/user-guide/24.09/softwarecomponentversions.html
        # ("NeMo Framework 24.09 ... NeMo 2.0.0"; 24.07: 2.0.0rc1; 24.05: 2.0.0rc0)
        "24.05": ("v2.0.0rc0", "NeMo FW user guide 24.09 softwarecomponentversions"),
        "24.07": ("r2.0.0rc1", "NeMo FW user guide 24.09 softwarecomponentversions"),
        "24.09": ("v2.0.0", "NeMo FW user guide 24.09 softwarecomponentversions"),
        # a release whose own docs run the container: NVIDIA/NeMo@v2.2.0
        # docs/source/evaluation/evaluation_doc.rst L100 and scripts/llm/automodel.py L82
        # (container_image nvcr.io/nvidia/nemo:25.02); @v2.3.0 evaluation_doc.rst L131
        # (nemo:25.04) and tutorials/llm/llama/pruning-distillation/README.md L35 ("tested on
        # nvcr.io/nvidia/nemo:25.04")
        "25.02": ("v2.2.0", "NeMo@v2.2.0 evaluation_doc.rst L100 (nvcr.io/nvidia/nemo:25.02)"),
        "25.04": ("v2.3.0", "NeMo@v2.3.0 evaluation_doc.rst L131, pruning-distillation README L35"),
        # NVIDIA/NeMo@v2.4.0 (2025-07-25) is the only release tagged between v2.3.0 (25.04)
        # and v2.5.0 (25.09; v2.3.1/v2.3.2 are patches of 2.3), in 25.07's own month; its
        # CHANGELOG.md L303 names "perf scripts 25.07 refactor" (#13875), the scripts behind
        # the 25.07 performance summary (benchmarks/training_nemo_perf.md)
        "25.07": ("v2.4.0", "NeMo@v2.4.0 CHANGELOG.md L303 (perf scripts 25.07), between 2.3.0 and 2.5.0"),
        # NVIDIA-NeMo/Megatron-Bridge@067f987d docs/releases/software-versions.md: "NeMo
        # Framework 25.09 ... NeMo | 2.5.0", "25.11 ... NeMo | 2.6.0", "26.02 ... NeMo | 2.7.0"
        # (26.04 and 26.06 list no NeMo); these tags are newer than the NeMo mirror
        # (its last tag v2.5.0rc0, 2025-08-01), so their date is null
        # (a tag 'v2.5.0rc0' reads as container 25.09, the container of its release; the
        # date 2025-08 reads as the latest dated container, 25.07: the two readings differ, but
        # both select the nemo profile's 25.07 entry today, the last entry before 25.09)
        "25.09": ("v2.5.0", "Megatron-Bridge@067f987d docs/releases/software-versions.md"),
        "25.11": ("v2.6.0", "Megatron-Bridge@067f987d docs/releases/software-versions.md"),
        "26.02": ("v2.7.0", "Megatron-Bridge@067f987d docs/releases/software-versions.md"),
    },
    "megatron-bridge": {
        # NVIDIA-NeMo/Megatron-Bridge@v0.6.0 docs/versions1.json: the docs' version menu names
        # each release with its container ("0.6.0 (latest) · 26.08", "0.5.0 · 26.06",
        # "0.4.0 · 26.04", "0.3.0 · 26.02", "0.2.0 · 25.11", "0.1.0 · 25.09"); 0.1.0 was only
        # tagged as v0.1.0rc3 (the 25.09 recipes, catalog/frameworks/megatron-bridge.yaml)
        "25.09": ("v0.1.0rc3", "Megatron-Bridge@v0.6.0 docs/versions1.json (0.1.0)"),
        "25.11": ("v0.2.0", "Megatron-Bridge@v0.6.0 docs/versions1.json"),
        "26.02": ("v0.3.0", "Megatron-Bridge@v0.6.0 docs/versions1.json"),
        "26.04": ("v0.4.0", "Megatron-Bridge@v0.6.0 docs/versions1.json"),
        "26.06": ("v0.5.0", "Megatron-Bridge@v0.6.0 docs/versions1.json"),
        "26.08": ("v0.6.0", "Megatron-Bridge@v0.6.0 docs/versions1.json"),
    },
}

# frameworks whose patch releases are cut from their minor's release branch, so a patch
# carries its minor's features, not those merged on main by its own tag date: NVIDIA/Megatron-LM
# tags core_v0.13.1 (2025-08-11) on the 0.13 branch; `git merge-base --is-ancestor
# core_v0.13.0 core_v0.13.1` holds, `... 720c8b40 core_v0.13.1` (main, 2025-07-29) does not
BRANCH_PATCHES = {
    "megatron-lm": "core_v0.13.1 descends from core_v0.13.0, not from main's 720c8b40",
    "megatron-core": "the same repository and tags as megatron-lm",
}

_TAG = re.compile(r"^(?:tags/)?(?:core_v|core_r|v|r)?(\d+(?:\.\d+)*)$")


def _tags(mirror: Path, repo: str) -> list[tuple[str, str]]:
    git = mirror / repo.replace("/", "+") / "repo"
    out = subprocess.run(
        ["git", "-C", str(git), "for-each-ref", "--sort=refname",
         "--format=%(refname:short) %(*committerdate:short)%(committerdate:short)", "refs/tags"],
        check=True, capture_output=True, text=True).stdout
    return [tuple(line.split()) for line in out.splitlines() if line.strip()]  # type: ignore


def _norm(number: str) -> tuple[int, ...]:
    parts = [int(p) for p in number.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def releases(mirror: Path, repo: str, pattern: str | None) -> dict[str, str]:
    """Final release -> date, oldest first, from ``repo``'s tags."""
    best: dict[tuple[int, ...], tuple[int, str, str]] = {}
    for tag, date in _tags(mirror, repo):
        m = _TAG.match(tag)
        if not m or (pattern and not re.search(pattern, tag)):
            continue
        rank = 0 if re.match(r"^(core_)?v", tag) else 1  # a v tag before core_r / tags/
        key = _norm(m.group(1))
        if key not in best or (rank, date) < best[key][:2]:
            best[key] = (rank, date, m.group(1))
    ordered = sorted(best.items(), key=lambda kv: (kv[1][1], kv[0]))
    return {v[2]: v[1] for _, v in ordered}


def render(mirror: Path) -> str:
    lines = [
        "# Release tags and their dates, per framework (the date of the tagged commit).",
        "# Written by benchmarks/framework_releases.py from the repositories' tags:",
        "#   git -C /work/.mirror/<owner>+<name>/repo for-each-ref \\",
        "#     --format='%(refname:short) %(*committerdate:short)%(committerdate:short)' refs/tags",
        "# A container is dated by its own YY.MM month; the date of the tag it ships is evidence",
        "# only (checked against the mirror). Read by catalog/framework_versions.py; edit the",
        "# script, not this file.",
    ]
    for name, (repo, pattern) in REPOS.items():
        lines += [f"{name}:", f"  repo: {repo}"]
        if name in BRANCH_PATCHES:
            lines += [f"  # patches from release branches: {BRANCH_PATCHES[name]}",
                      "  patches: branch"]
        tags = {t.removeprefix("tags/"): d for t, d in _tags(mirror, repo)}
        if name in CONTAINERS:
            lines.append("  containers:  # container: [library tag it ships, that tag's date]")
            for box, (tag, said) in CONTAINERS[name].items():
                # a tag the mirror does not hold yet (cited from the container's release
                # notes) has no date here: null, never a guessed one
                date = f'"{tags[tag]}"' if tag in tags else "null"
                lines.append(f'    "{box}": ["{tag}", {date}]  # {said}')
        lines.append("  releases:")
        for number, date in releases(mirror, repo, pattern).items():
            lines.append(f'    "{number}": "{date}"')
    return "\n".join(lines) + "\n"


def _pairs(text: str) -> list[tuple[str, str]]:
    """(framework, line) for each entry line of the file's text, in order."""
    out, section = [], ""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            section = line.rstrip(":")
        out.append((section, line))
    return out


_DATED = re.compile(r'^\s+"[^"]+": "(\d{4}-\d{2}-\d{2})"$')


def differences(have: str, now: str) -> tuple[list[str], list[str]]:
    """(what fails, what is only newer) between the file's text ``have`` and the mirrors'
    ``now``, compared as (framework, line) pairs."""
    old, new = _pairs(have), _pairs(now)
    old_set, new_set = set(old), set(new)
    latest: dict[str, str] = {}
    for name, line in old:
        if (m := _DATED.match(line)):
            latest[name] = max(latest.get(name, ""), m.group(1))
    wrong = [f"{n}: not in the mirrors: {line.strip()}" for n, line in old
             if (n, line) not in new_set]
    newer = []
    for n, line in new:
        if (n, line) in old_set:
            continue
        m = _DATED.match(line)
        if m and n in latest and m.group(1) > latest[n]:
            newer.append(f"{n}: newer in the mirrors: {line.strip()}")
        else:
            wrong.append(f"{n}: missing from the file: {line.strip()}")
    if not wrong and [p for p in old if p in new_set] != [p for p in new if p in old_set]:
        wrong.append("the file's lines are not in the mirrors' order")
    return wrong, newer


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = render(args.mirror)
    if args.check:  # every line of the file as the mirrors give it (newer tags: a note only)
        wrong, newer = differences(OUT.read_text(), text)
        print("\n".join(wrong + newer) or "every line agrees with the mirrors")
        return 1 if wrong else 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
