"""Where the certification's test folders lie: in a clone, or in site-packages.

The package's subpackages ``properties`` (simulated ranks) and ``conformance`` (real
process groups) are the repository's folders of those names, mapped in at build time.
They are found, not imported: their tests import the plugin, which imports this.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path


def _folder(package: str) -> Path:
    spec = find_spec(package)
    assert spec is not None and spec.submodule_search_locations is not None, package
    return Path(list(spec.submodule_search_locations)[0]).resolve()


IN_PROCESS_DIR = _folder("sampler_conformance.properties")
PROCESS_GROUPS_DIR = _folder("sampler_conformance.conformance")
CERTIFICATION_DIRS = (IN_PROCESS_DIR, PROCESS_GROUPS_DIR)
