"""Where the certification's test folders lie: in a clone, or in site-packages.

The package's subpackages ``properties`` (simulated ranks) and ``conformance`` (real
process groups) are the repository's folders of those names, mapped in at build time.
"""

from __future__ import annotations

from pathlib import Path

from sampler_conformance import conformance, properties

IN_PROCESS_DIR = Path(properties.__path__[0]).resolve()
PROCESS_GROUPS_DIR = Path(conformance.__path__[0]).resolve()
CERTIFICATION_DIRS = (IN_PROCESS_DIR, PROCESS_GROUPS_DIR)
