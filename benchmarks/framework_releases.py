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
which library tag each container ships; the container's date is that tag's.
``--check`` exits non-zero where a line of the file is not what the mirrors give (tags
added to the mirrors since are reported, not failed).
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
    },
    "megatron-bridge": {
        # catalog/frameworks/megatron-bridge.yaml header and entry sources
        "25.09": ("v0.1.0rc3", "megatron-bridge.yaml header"),
        "25.11": ("v0.2.0", "megatron-bridge.yaml header"),
        "26.02": ("v0.3.0", "megatron-bridge.yaml header"),
        "26.04": ("v0.4.0", "megatron-bridge.yaml header"),
        "26.06": ("v0.5.0", "megatron-bridge.yaml 26.06 entry source"),
        "26.08": ("v0.6.0", "assumed: tagged in the container's month, as v0.4.0 and v0.5.0"),
    },
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
        "# Read by catalog/framework_versions.py; edit the script, not this file.",
    ]
    for name, (repo, pattern) in REPOS.items():
        lines += [f"{name}:", f"  repo: {repo}"]
        tags = {t.removeprefix("tags/"): d for t, d in _tags(mirror, repo)}
        if name in CONTAINERS:
            lines.append("  containers:  # container: [library tag it ships, that tag's date]")
            for box, (tag, said) in CONTAINERS[name].items():
                lines.append(f'    "{box}": ["{tag}", "{tags[tag]}"]  # {said}')
        lines.append("  releases:")
        for number, date in releases(mirror, repo, pattern).items():
            lines.append(f'    "{number}": "{date}"')
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = render(args.mirror)
    if args.check:  # every line of the file as the mirrors give it (newer tags: a note only)
        have, now = OUT.read_text().splitlines(), set(text.splitlines())
        wrong = [line for line in have if line not in now]
        newer = len(now - set(have))
        print("\n".join(f"not in the mirrors: {line}" for line in wrong) or
              f"every line agrees with the mirrors ({newer} newer lines there)")
        return 1 if wrong else 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
