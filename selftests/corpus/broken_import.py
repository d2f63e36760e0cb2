"""A sampler module that raises while importing: the plug must report it as a usage error."""

from .faulty import IMPORT_ERROR

raise RuntimeError(IMPORT_ERROR)
