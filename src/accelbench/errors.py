"""Errors that carry a user-facing meaning (and, for the CLI, an exit code)."""
from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: the CLI prints the message and exits 2.

    The message names the bad input and what would be accepted.
    """


class Unsupported(Exception):
    """A workload, dtype or feature cannot run on a device: recorded as a skip with this reason."""
