"""Root conftest: loads the conformance plugin for the certification and the selftests."""

pytest_plugins = ["harness.plugin"]
