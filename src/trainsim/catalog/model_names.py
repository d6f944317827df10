"""Model names as people write them: ``meta-llama/Llama-3.1-8B``, ``Qwen2.5-7B``,
``deepseek-ai/DeepSeek-V3-Base`` name the presets ``llama3.1-8b``, ``qwen2.5-7b``, ``deepseek-v3``.

A name is compared after :func:`normal` (both the user's and each preset's file name), then
against each preset's ``aliases:`` (Hugging Face repository names that normalise elsewhere,
e.g. ``Meta-Llama-3-8B``). Two presets answering to one normal name is a catalog error, so a
spelling never picks one of two models silently.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from trainsim.catalog.names import aliases_of, dashed, spellings
from trainsim.errors import CatalogError

VARIANT_SUFFIXES = ("-hf", "-base", "-instruct", "-chat", "-it")
"""Hugging Face repository suffixes that keep the architecture: a checkpoint converted to the
transformers format (``Llama-2-7b-hf``), the pre-trained and the fine-tuned releases of one
network (``Qwen3-8B-Base``, ``Kimi-K2-Instruct``, ``Llama-2-7b-chat-hf``, ``gemma-7b-it``)."""
_VERSION = re.compile(r"-v\d+(?:\.\d+)*$")
"""A release version ending a repository name (``Mixtral-8x7B-Instruct-v0.1``): kept, and the
variant suffix before it dropped. Releases of one name may differ (Mistral-7B-v0.1 slides a
4096-token window, v0.2 and v0.3 do not), so a fine-tuned name without its version is
ambiguous where the catalog holds several releases (``canonical``)."""


def _parts(name: object) -> tuple[str, bool, str]:
    """``name`` lower-cased without its ``org/`` prefix, spaces and underscores as dashes, split
    into (the name without variant suffixes, whether it had one, its ``-vX.Y`` version)."""
    # a parenthesised size as papers write it ("GPT-3 (175B)") is a word of the name
    key = dashed(re.sub(r"[()]", " ", str(name)).strip().rsplit("/", 1)[-1].strip())
    version = _VERSION.search(key)
    key, tail = (key[:version.start()], version.group()) if version else (key, "")
    variant = stripped = False
    while not stripped:
        stripped = True
        for suffix in VARIANT_SUFFIXES:
            if key.endswith(suffix) and len(key) > len(suffix):
                key, stripped, variant = key[: -len(suffix)], False, True
    return re.sub(r"(?<=[a-z])-(?=\d)|(?<=\d)-(?=[a-z])", "", key), variant, tail


def normal(name: object) -> str:
    """``name`` lower-cased, without an ``org/`` prefix or a variant suffix, spaces and
    underscores as dashes, and no dash between a letter and a digit ("Llama-3.1-8B" ->
    "llama3.1-8b"; a dash between two digits stays: "gpt3-5b" is not "gpt-35b"); a release
    version stays ("Mistral-7B-Instruct-v0.3" -> "mistral7b-v0.3")."""
    key, _, version = _parts(name)
    return key + version


@functools.cache
def index(entries: tuple[tuple[str, Path], ...]) -> dict[str, str]:
    """Normal name -> preset file name, for every preset's file name and ``aliases``."""
    from trainsim.catalog import _read_yaml

    paths = dict(entries)
    table, clashes = spellings({stem: aliases_of(path, _read_yaml(path))
                                for stem, path in entries}, normal)
    for stem, spelling, other in clashes:
        raise CatalogError(f"{paths[stem]}: {spelling!r} already names {other}")
    return table


def canonical(name: str, entries: dict[str, Path]) -> str:
    """The preset file name ``name`` spells, or ``name`` unchanged where it spells none (the
    lookup's error then shows what the user wrote)."""
    key = str(name).strip().lower()
    if key in entries:
        return key
    names = index(tuple(entries.items()))
    key, variant, version = _parts(name)
    if variant and not version:
        releases = sorted({stem for k, stem in names.items() if _VERSION.sub("", k) == key
                           and _VERSION.search(k)})
        if len(releases) > 1:
            raise CatalogError(f"model {str(name).strip()!r} is ambiguous: it could be "
                               f"{', '.join(releases)}; name the release (its -vX.Y)")
    found = names.get(key + version)
    if found is None and not version and (date := _DATE.search(key)):
        found = names.get(key[:date.start()])  # DeepSeek-V3-0324: the release of DeepSeek-V3
    return found or name


_DATE = re.compile(r"-\d{4}$")
"""A release date ending a repository name (``DeepSeek-V3-0324``, ``Mistral-Large-Instruct-2407``,
month and day or year and month): the checkpoint of that date of the network the rest names, read
as it where the full name names no preset (a date is never a size: sizes end in b or m)."""
