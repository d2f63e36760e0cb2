"""Root conftest of the clone: loads the conformance plugin for the certification and the
selftests (an installed package loads it for ``pytest --pyargs sampler_conformance``)."""

pytest_plugins = ["sampler_conformance.plugin"]
