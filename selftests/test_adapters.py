"""The adapters import without their third-party packages and say what to install."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sampler_conformance import adapters
from sampler_conformance.adapters import (  # noqa: F401
    SamplerPackageMissing,
    accelerate,
    catalyst,
    lightning,
    lightning_datamodule,
    mmengine,
    torchdata,
    transformers,
)
from sampler_conformance.adapters.catalogue import REAL_SAMPLERS
from sampler_conformance.core.subject import SpecError
from sampler_conformance.report.issue_body import versions
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.common.index_dataset import IndexDataset
from sampler_conformance.subjects.index_sampler.plug import load_plug
from sampler_conformance.subjects.specs import PACKAGE_ATTRIBUTE, require_package

# (factory, PyPI distribution that provides it, its top-level import packages, extra options)
ADAPTERS = [
    pytest.param(
        adapters.torchdata.StatefulDistributedSampler,
        "torchdata",
        ("torchdata",),
        {},
        id="torchdata-StatefulDistributedSampler",
    ),
    pytest.param(
        adapters.lightning.DistributedSamplerWrapper,
        "pytorch-lightning",
        ("lightning_fabric", "pytorch_lightning"),
        {},
        id="lightning-DistributedSamplerWrapper",
    ),
    pytest.param(adapters.catalyst.DistributedSamplerWrapper, "catalyst", ("catalyst",), {}, id="catalyst-wrapper"),
    pytest.param(
        adapters.lightning.UnrepeatedDistributedSampler,
        "pytorch-lightning",
        ("lightning_fabric", "pytorch_lightning"),
        {},
        id="lightning-UnrepeatedDistributedSampler",
    ),
    pytest.param(adapters.mmengine.DefaultSampler, "mmengine", ("mmengine",), {}, id="mmengine-DefaultSampler"),
    pytest.param(
        adapters.mmengine.DefaultSamplerNoRoundUp, "mmengine", ("mmengine",), {}, id="mmengine-DefaultSamplerNoRoundUp"
    ),
    pytest.param(adapters.mmengine.InfiniteSampler, "mmengine", ("mmengine",), {}, id="mmengine-InfiniteSampler"),
    pytest.param(
        adapters.accelerate.BatchSamplerShard,
        "accelerate",
        ("accelerate",),
        {"batch_size": 2},
        id="accelerate-BatchSamplerShard",
    ),
    pytest.param(
        adapters.accelerate.SkipFirstBatchesResume,
        "accelerate",
        ("accelerate",),
        {"batch_size": 2},
        id="accelerate-SkipFirstBatchesResume",
    ),
]


def hide_packages(monkeypatch: pytest.MonkeyPatch, packages: tuple[str, ...]) -> None:
    """Make ``import`` of these packages and all their submodules fail, installed or not."""
    for name in list(sys.modules):
        if name.split(".")[0] in packages:
            monkeypatch.setitem(sys.modules, name, None)
    for name in packages:
        monkeypatch.setitem(sys.modules, name, None)


def assert_missing_package_is_named(
    monkeypatch: pytest.MonkeyPatch,
    factory: Any,
    packages: tuple[str, ...],
    distribution: str,
    load: Callable[[str], Any],
    build: Callable[[], Any],
) -> None:
    """With ``packages`` hidden, loading ``factory``'s spec (before any test) and calling it
    anyway (``build``) each say what to pip install, naming the spec."""
    hide_packages(monkeypatch, packages)
    spec = f"{factory.__module__}:{factory.__name__}"
    with pytest.raises(SpecError) as refused:
        load(spec)
    with pytest.raises(SamplerPackageMissing) as raised:
        build()
    for error in (refused.value, raised.value):
        assert f"pip install {distribution}" in str(error) and spec in str(error)


@pytest.mark.parametrize(("factory", "distribution", "packages", "options"), ADAPTERS)
def test_missing_package_is_named(monkeypatch, factory, distribution, packages, options):
    hide_packages(monkeypatch, packages)
    with pytest.raises(SamplerPackageMissing) as raised:
        factory(IndexDataset(6), num_replicas=2, rank=0, shuffle=True, seed=0, **options)
    message = str(raised.value)
    assert f"pip install {distribution}" in message
    assert f"{factory.__module__}:{factory.__name__}" in message
    assert isinstance(raised.value, ImportError)


@pytest.mark.parametrize(("factory", "distribution", "packages", "options"), ADAPTERS)
def test_installed_package_builds_a_sampler(factory, distribution, packages, options):
    for package in packages:
        pytest.importorskip(package, reason=f"{distribution} is not installed here")
    ranks = [factory(IndexDataset(6), num_replicas=2, rank=r, shuffle=False, seed=0, **options) for r in range(2)]
    first_items = [next(iter(sampler)) for sampler in ranks]
    assert first_items[0] != first_items[1]


def test_mmengine_adapter_refuses_a_rank_outside_the_world():
    with pytest.raises(ValueError, match="Invalid rank 2"):
        adapters.mmengine.DefaultSampler(IndexDataset(6), num_replicas=2, rank=2)


@pytest.mark.parametrize(("factory", "distribution", "packages", "options"), ADAPTERS)
def test_a_spec_whose_package_is_missing_is_refused_before_any_test(
    monkeypatch, factory, distribution, packages, options
):
    """Loading the spec names what to install: a missing package is never charged to the sampler."""
    hide_packages(monkeypatch, packages)
    spec = f"{factory.__module__}:{factory.__name__}"
    with pytest.raises(SpecError, match=f"pip install {distribution}"):
        load_plug(spec)


@pytest.mark.parametrize(
    ("factory", "options"),
    [
        (adapters.transformers.DistributedLengthGroupedSampler, {}),
        (adapters.transformers.TrainerGroupByLength, {"batch_size": 2}),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_the_length_grouped_adapters_name_transformers_when_it_is_missing(monkeypatch, factory, options):
    """They take no shuffle (the samplers always shuffle), so they are not among ADAPTERS above."""
    assert_missing_package_is_named(
        monkeypatch,
        factory,
        ("transformers",),
        "transformers",
        load_plug,
        lambda: factory(IndexDataset(6), num_replicas=2, rank=0, seed=0, **options),
    )


def test_a_factory_that_needs_two_packages_names_the_one_missing(monkeypatch):
    """The Trainer's adapter needs transformers and accelerate: each is checked."""

    @adapters.needs("json", "a-package-that-is-installed")
    @adapters.needs("torchdata", "torchdata")
    def factory() -> None: ...

    require_package("spec", factory)
    hide_packages(monkeypatch, ("torchdata",))
    with pytest.raises(SpecError, match="pip install torchdata"):
        require_package("spec", factory)


def test_a_package_that_is_installed_and_does_not_import_is_the_environments_failure(tmp_path, monkeypatch):
    """A package built for another torch raises on import (torchvision 0.28 under torch 2.13:
    "operator torchvision::nms does not exist"): the spec is refused, saying so, before any
    test, instead of charging the sampler whose constructor imports it."""
    (tmp_path / "broken_on_import.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    monkeypatch.syspath_prepend(str(tmp_path))

    @adapters.needs("broken_on_import", "broken-on-import")
    def factory() -> None: ...

    with pytest.raises(
        SpecError,
        match="installed but does not import here: importing 'broken_on_import' raised "
        "RuntimeError: operator torchvision::nms does not exist. Fix the environment",
    ):
        require_package("spec", factory)


def _adapter_modules() -> list[Any]:
    folder = Path(adapters.__file__).parent
    return [importlib.import_module(f"{adapters.__name__}.{path.stem}") for path in sorted(folder.glob("[a-z]*.py"))]


def test_every_adapter_of_a_pypi_package_is_in_the_catalogue_of_real_samplers():
    """A factory that declares its package (``@needs``) adapts a real sampler: the verdict
    table certifies it only if the catalogue lists it."""
    listed = {record.spec for record in REAL_SAMPLERS}
    adapting = {
        f"{module.__name__}:{name}"
        for module in _adapter_modules()
        for name, value in vars(module).items()
        if getattr(value, PACKAGE_ATTRIBUTE, ()) and getattr(value, "__module__", None) == module.__name__
    }
    assert adapting, "no factory declares its package: the check below would pass on nothing"
    assert adapting - listed == set()


def test_every_record_of_the_catalogue_names_a_spec_that_loads_and_a_contract_that_exists():
    for record in REAL_SAMPLERS:
        module, _, attribute = record.spec.partition(":")
        assert hasattr(importlib.import_module(module), attribute), record
        contract_named(record.contract)  # raises on a name no subject declares
        assert (record.version_of is None) == bool(record.origin) or record.version_of == "torch", record


def test_the_verdict_table_tool_reads_the_whole_catalogue():
    """tools/verdict_table.py reads the catalogue from the adapters folder, before the package is
    installed anywhere (in a fresh interpreter that cannot import it): every row the table certifies."""
    tool = Path(__file__).resolve().parents[1] / "tools" / "verdict_table.py"
    code = (
        "import importlib.util, sys\n"
        "sys.modules['sampler_conformance'] = None  # not installed, as where the tool first runs\n"
        f"spec = importlib.util.spec_from_file_location('verdict_table', {str(tool)!r})\n"
        "tool = sys.modules['verdict_table'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(tool)\n"
        "print('\\n'.join(f'{row.spec} {row.contract}' for row in tool.ROWS))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    listed = [f"{row.spec} {row.contract}" for row in REAL_SAMPLERS if not row.not_in_table]
    assert done.stdout.split("\n")[:-1] == listed, done.stdout


def test_an_issue_body_names_each_distribution_once_and_the_package_an_adapter_adapts():
    """An adapter's scripts report a bug of the package it adapts: its issue body's versions name
    that package (its ``needs``), and the adapter's own distribution once."""
    factory = lightning_datamodule.train_loader
    adapted = [distribution for _, distribution in getattr(factory, PACKAGE_ATTRIBUTE)]
    text = versions(f"{lightning_datamodule.__name__}:train_loader", adapted)
    assert adapted == ["pytorch-lightning"] and text.count("sampler-conformance ") == 1, text
    assert text.startswith("sampler-conformance ") and ", pytorch-lightning " in text and ", torch " in text, text
