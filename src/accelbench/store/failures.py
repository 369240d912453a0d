"""SQLite failures after a database was opened, told as one line naming the file and what would help."""
from __future__ import annotations

import functools
import sqlite3
from typing import Any, Callable, TypeVar, cast

from accelbench.errors import UsageError
from accelbench.store import recovery
from accelbench.store.opening import ACCEPTED


_Method = TypeVar("_Method", bound=Callable[..., Any])


def reported(method: _Method) -> _Method:
    """Turn SQLite failures after opening (damaged file, disk full, lock held too long) into a
    UsageError naming the file, instead of a traceback. Constraint errors stay as they are."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            hint = (" (damaged: restore it from a backup or an export file)"
                    if "malformed" in str(exc) or "not a database" in str(exc) else
                    f" (held by {recovery.holders(self.path)})" if recovery.is_locked(exc) else "")
            raise UsageError(f"results database {self.path}: {exc}{hint}; {ACCEPTED}") from exc
    return cast(_Method, wrapper)  # functools.wraps keeps the signature mypy cannot see through
