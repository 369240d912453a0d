"""Errors that carry a user-facing meaning (and, for the CLI, an exit code)."""
from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: the CLI prints the message and exits 2.

    The message names the bad input and what would be accepted; `refused_devices`, the device ids
    it refuses (what a caller adds the inventory's reason to, never read from the message).
    """

    def __init__(self, message: str = "", *, refused_devices: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.refused_devices = tuple(refused_devices)


class Unsupported(Exception):
    """A workload, dtype or feature cannot run on a device: recorded as a skip with this reason."""
