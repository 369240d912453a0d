"""Reading /proc and /sys through a root folder, so tests can replay a recorded machine.

A recording is a folder that mirrors the paths read (`proc/cpuinfo`,
`sys/devices/system/cpu/cpu0/cache/index0/size`, ...); `SysReader("/")` reads the live system.
"""
from __future__ import annotations

from pathlib import Path


class SysReader:
    def __init__(self, root: str | Path = "/"):
        self.root = Path(root)

    def _path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def text(self, path: str) -> str | None:
        try:
            return self._path(path).read_text(errors="replace")
        except OSError:
            return None

    def line(self, path: str) -> str | None:
        text = self.text(path)
        return text.strip() if text is not None else None

    def integer(self, path: str) -> int | None:
        value = self.line(path)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def children(self, path: str, prefix: str = "") -> list[str]:
        folder = self._path(path)
        try:
            names = [p.name for p in folder.iterdir() if p.name.startswith(prefix)]
        except OSError:
            return []
        return sorted(names, key=_natural_key)

    def exists(self, path: str) -> bool:
        return self._path(path).exists()


def _natural_key(name: str) -> tuple:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits else -1, name)


def parse_cpu_list(text: str | None) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.extend(range(int(low), int(high) + 1))
        else:
            cpus.append(int(part))
    return cpus


def parse_size_bytes(text: str | None) -> int | None:
    """sysfs cache sizes: '48K', '2048K', '32M' -> bytes."""
    if not text:
        return None
    text = text.strip().upper()
    factor = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    number = text[:-1] if factor != 1 else text
    try:
        return int(number) * factor
    except ValueError:
        return None
