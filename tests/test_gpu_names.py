"""GPU names as people write them (papers, cloud consoles, nvidia-smi) resolve to one catalog
entry, or to a one-line error (catalog.gpu_names)."""

from __future__ import annotations

import pytest

from trainsim import ConfigError, catalog
from trainsim.catalog import gpu_names, run_config_from_dict
from trainsim.errors import CatalogError


@pytest.mark.parametrize("written,entry", [
    ("H100", "h100-sxm-80gb"),
    ("h100-80gb", "h100-sxm-80gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm-80gb"),      # nvidia-smi, SXM5
    ("H100 SXM", "h100-sxm-80gb"),
    ("NVIDIA H100 PCIe", "h100-pcie-80gb"),           # nvidia-smi, PCIe
    ("NVIDIA H100 NVL", "h100-nvl-94gb"),
    ("A100-SXM4-80GB", "a100-sxm-80gb"),              # nvidia-smi before the NVIDIA prefix
    ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA A800-SXM4-80GB", "a800-sxm-80gb"),
    ("Tesla V100-SXM2-32GB", "v100-sxm-32gb"),
    ("v100-sxm2-16gb", "v100-sxm-16gb"),
    ("NVIDIA H200", "h200-sxm-141gb"),
    ("NVIDIA H20", "h20-sxm-96gb"),
    ("NVIDIA H800", "h800-sxm-80gb"),
    ("NVIDIA B200", "b200-sxm-180gb"),
    ("NVIDIA B300 SXM6 AC", "b300-sxm-288gb"),
    ("GB300", "gb300"),
    ("NVIDIA L40S", "l40s-pcie-48gb"),
    ("mi300x", "mi300x"),
    ("AMD Instinct MI300X", "mi300x"),
    ("AMD Instinct MI250X", "mi250x-gcd"),
    ("MI355X", "mi355x"),
    ("h100_sxm_80gb", "h100-sxm-80gb"),
    ("H100-SXM5 94GB", "h100-sxm-96gb-500w"),         # NVIDIA MIG user guide's name
    ("GB200 NVL72", "gb200"),                         # the rack names its GPU
    ("NVIDIA GB200", "gb200"),
    ("GB300 NVL72", "gb300"),
])
def test_common_spellings_resolve(written, entry):
    """Each spelling names exactly one catalog GPU, whatever its case or separators."""
    assert catalog.gpu(written).name == entry


@pytest.mark.parametrize("written,candidates", [
    ("v100", ["v100-sxm-16gb", "v100-sxm-32gb"]),
    ("A100", ["a100-pcie-40gb", "a100-pcie-80gb", "a100-sxm-40gb", "a100-sxm-80gb"]),
    ("A100 SXM", ["a100-sxm-40gb", "a100-sxm-80gb"]),  # the size left open
    ("GH200", ["gh200-144gb", "gh200-96gb"]),
])
def test_ambiguous_names_list_the_candidates(written, candidates):
    """A name several entries match is one error line naming every one of them."""
    with pytest.raises(CatalogError) as info:
        catalog.gpu(written)
    text = str(info.value)
    assert "\n" not in text and "ambiguous" in text
    assert all(c in text for c in candidates)


def test_unknown_name_keeps_did_you_mean():
    """A name nothing matches is still 'unknown GPU ... did you mean'."""
    with pytest.raises(CatalogError, match="did you mean 'h100-sxm-80gb'"):
        catalog.gpu("h1000")


def test_run_config_takes_a_written_name():
    """cluster.gpu may be written as nvidia-smi prints it; the config holds the catalog spec."""
    cfg = run_config_from_dict({"model": "llama3-8b", "training": {"global_batch_size": 8},
                                "cluster": {"gpu": "NVIDIA H100 80GB HBM3", "num_gpus": 8}})
    assert cfg.cluster.gpu == catalog.gpu("h100-sxm-80gb")
    with pytest.raises(ConfigError, match="ambiguous"):
        run_config_from_dict({"model": "llama3-8b", "training": {"global_batch_size": 8},
                              "cluster": {"gpu": "a100", "num_gpus": 8}})


def test_aliases_name_one_entry_each():
    """No alias is claimed by two entries or is another entry's file name."""
    assert gpu_names.alias_clashes(catalog.gpu_aliases()) == []


def test_every_alias_resolves_to_its_entry():
    """Every alias a GPU file lists finds that file."""
    for entry, aliases in catalog.gpu_aliases().items():
        for alias in aliases:
            assert catalog.gpu(alias).name == entry, alias


def test_words_drop_only_what_never_tells_gpus_apart():
    """Vendor words and memory types go; sxm generations merge; sizes and form factors stay."""
    assert gpu_names.words("NVIDIA A100-SXM4-80GB") == {"a100", "sxm", "80gb"}
    assert gpu_names.words("NVIDIA H100 80GB HBM3") == {"h100", "80gb"}
    assert gpu_names.words("NVIDIA H100 PCIe") == {"h100", "pcie"}
    assert gpu_names.words("nvidia") == frozenset()


def test_resolve_on_a_small_table():
    """resolve: exact name, alias, a unique word match, an ambiguity, or None."""
    table = {"x1-sxm-40gb": ("x1",), "x1-pcie-40gb": (), "x1-sxm-80gb": (), "y2": ()}
    assert gpu_names.resolve("X1_SXM_40GB", table) == "x1-sxm-40gb"
    assert gpu_names.resolve("x1", table) == "x1-sxm-40gb"            # its alias
    assert gpu_names.resolve("Vendor X1 PCIe", table) is None        # 'vendor' is a word
    assert gpu_names.resolve("NVIDIA X1 PCIe", table) == "x1-pcie-40gb"
    assert gpu_names.resolve("x1-40gb", table) == "x1-sxm-40gb"       # no form factor: SXM
    with pytest.raises(gpu_names.Ambiguous) as info:
        gpu_names.resolve("x1-sxm", table)                            # 40 or 80 GB
    assert info.value.candidates == ["x1-sxm-40gb", "x1-sxm-80gb"]
    assert gpu_names.resolve("z9", table) is None
