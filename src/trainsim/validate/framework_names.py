"""A training row's framework name as written, read: a GitHub slug's or vendor's words dropped,
a release written after the name split off, and whether a name with no profile here is another
framework (read by ``catalog.fallback``) or a misspelling of a profile's (refused)."""

from __future__ import annotations

import re


def _word(text: str) -> str:
    from trainsim.validate.vocab import word

    return word(text, "-")


VENDOR_WORDS = ("nvidia", "microsoft", "mosaicml", "databricks", "huggingface", "hf", "meta",
                "pytorch", "allenai", "bytedance", "ibm", "google", "hpcaitech", "nvidia-nemo")
"""Organisations a framework's name may open with, as a GitHub slug (``NVIDIA/Megatron-LM``,
``microsoft/DeepSpeed``, ``pytorch/torchtitan``) or in prose ("NVIDIA NeMo")."""


def framework_key(text: str) -> str:
    """A training row's framework as the README spells it: lower case, '-' between words; a
    GitHub slug's or a vendor's name before it dropped where the rest is a profile's name."""
    from trainsim.catalog.frameworks import canonical_framework, framework_names

    key = canonical_framework(_word(text))  # the profiles' own aliases
    if key in framework_names():
        return key
    tail = key.rsplit("/", 1)[-1]
    for vendor in ("", *VENDOR_WORDS):
        if not vendor or tail.startswith(vendor + "-"):
            bare = canonical_framework(tail[len(vendor) + 1 if vendor else 0:])
            if bare in framework_names():
                return bare
    versioned = written_version(key)
    return framework_key(versioned[0]) if versioned else key


_VERSIONED = re.compile(r"(?P<name>[a-z].*?)-(?P<version>v?\d+(?:\.\d+)+[a-z0-9.]*)")
"""A framework written with its release after it ("DeepSpeed 0.14.2", "torchtitan v0.1.0"):
a dotted number, so that a name ending in a digit ("nemo-2" is an alias) is not cut."""


def written_version(key: str) -> tuple[str, str] | None:
    """(name, release) of a framework key (``word(text, '-')``) written as a profile's name or
    alias followed by a dotted release; None where it is not."""
    from trainsim.catalog.frameworks import canonical_framework, framework_names

    match = _VERSIONED.fullmatch(key)
    if match is None:
        return None
    name = match.group("name")
    known = canonical_framework(name) in framework_names() or \
        framework_key(name) in framework_names()
    return (name, match.group("version")) if known else None


TYPO_EDITS = 2
"""A framework name within this many single-letter edits (insert, delete, substitute, swap of
two neighbours) of a profile's name is read as its misspelling (``megatorn-lm``, ``deepsped``,
``torchtittan``), not as another framework: two slips of the keyboard. Real names built on a
profile's name lie further (``megatron-llama``, Alibaba's Megatron-LLaMA: 3 from megatron-lm,
a profile of its own since the 57th session; ``megatron-deepspeed-ms``: 3;
``megatron-core-moe``: 4), which a similarity ratio of 0.8 called misspellings."""


def _edits(a: str, b: str) -> int:
    """Single-letter edits from ``a`` to ``b``, a swap of two neighbours counting one (the
    optimal string alignment distance)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


def unprofiled(key: str) -> bool:
    """Whether framework ``key`` (``framework_key``) is a name (``_NAME``) with no profile here
    and not a misspelling of one (``TYPO_EDITS``; the config refuses a misspelling naming the
    profile it is near)."""
    from trainsim.catalog.frameworks import framework_names

    names = framework_names()
    return bool(_NAME.fullmatch(key)) and key not in names and \
        all(_edits(key, name) > TYPO_EDITS for name in names)


_NAME = re.compile(r"[a-z][a-z0-9.+_/-]*")
"""A software name as written (``colossal-ai``, ``fms-fsdp``, ``hf/accelerate``): a cell that is
not one ('[/x]', a number) is refused by the config as an unknown framework, not read as none."""
