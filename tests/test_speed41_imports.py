"""Issue 21 item 3 (speed41): ``trainsim validate`` starts without the modules no training row
reads (the search engine, the flow network backend and its topologies, the Hugging Face
config reader, the flow decomposition of collectives, the zero-bubble search, the caching
allocator's replay). Each package still offers every name it offered, imported on first read
(PEP 562 ``__getattr__``)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import trainsim.catalog
import trainsim.collectives
import trainsim.network
import trainsim.search

LAZY_MODULES = ("trainsim.search.core", "trainsim.search.capacity", "trainsim.search.whatif",
                "trainsim.search.executors", "trainsim.search.space",
                "trainsim.network.flow", "trainsim.network.topology",
                "trainsim.catalog.hf_config", "trainsim.collectives.flows",
                "trainsim.workload.zb_search", "trainsim.memory.caching_allocator")
"""Modules ``import trainsim.cli, trainsim.validate`` must not import (each was imported at
every start before; none is read by a row of the public training file)."""


def test_the_validate_start_imports_none_of_the_lazy_modules():
    """One fresh interpreter: the CLI and the validator imported, and neither matplotlib, nor
    a lazily registered command's module (``cli.LAZY_COMMANDS``, ``tests/test_cli_lazy.py``),
    nor any of :data:`LAZY_MODULES` is in ``sys.modules`` (this replaces test_figures' check of
    the first two, in the same single subprocess)."""
    code = ("import sys, trainsim.cli, trainsim.validate; print(sorted(m for m in "
            "{'matplotlib', *(x[1] for x in trainsim.cli.LAZY_COMMANDS), *sys.argv[1:]} "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, *LAZY_MODULES], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", [trainsim.search, trainsim.network])
def test_every_lazy_name_is_its_modules_object(package):
    """Each name a package maps lazily is the very object its module defines, and every name
    of the package's ``__all__`` is either defined at import or mapped."""
    for name, module in package._LAZY.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name)
    assert set(package.__all__) <= set(vars(package)) | set(package._LAZY)


def test_the_search_package_lists_and_imports_its_names():
    """``from trainsim.search import ...`` of a function, a class and a submodule works, and
    ``dir()`` lists the lazy names (tab completion, ``help``)."""
    from trainsim.search import SearchSpace, search, waves

    assert search is importlib.import_module("trainsim.search.core").search
    assert SearchSpace.__module__ == "trainsim.search.space"
    assert waves.__name__ == "trainsim.search.waves"
    assert {"search", "plan", "sweep", "SearchSpace"} <= set(dir(trainsim.search))


def test_the_collectives_flows_and_the_hf_reader_are_their_modules_objects():
    flows = importlib.import_module("trainsim.collectives.flows")
    for name in trainsim.collectives._FLOWS:
        assert getattr(trainsim.collectives, name) is getattr(flows, name)
    from trainsim.catalog import model_from_hf_config
    from trainsim.catalog.hf_config import model_from_hf_config as defined

    assert model_from_hf_config is defined


@pytest.mark.parametrize("package", [trainsim.search, trainsim.network, trainsim.collectives,
                                     trainsim.catalog])
def test_an_unknown_name_is_still_an_attribute_error(package):
    """A name no module defines is an AttributeError (``hasattr`` False), as before."""
    assert not hasattr(package, "no_such_name_41")
    with pytest.raises(AttributeError, match="no_such_name_41"):
        package.no_such_name_41  # noqa: B018 - the read is the test


def test_the_uneven_layout_base_is_made_once_and_splits_front_loaded():
    """``validate.layouts``' Base of any pipeline split is built on first use, once: the same
    class each time, a search Base whose layout rule is the front-loaded one."""
    from trainsim.search.space import Base
    from trainsim.validate.layouts import _any_split

    cls = _any_split()
    assert cls is _any_split()
    assert issubclass(cls, Base)
    assert cls.layout_rule.fget(None) == "front_loaded"
