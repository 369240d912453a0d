"""The CPU quota on this process's cgroup (v1 or v2): how many cores' worth of time it may use.

A container or job quota caps a process below the cores it sees; the health check reports it
(health/cpu_config.py) and the plausibility bound scales a CPU's peak to it (runner/plausibility.py).
Every reader takes a SysReader (a root folder), so tests replay recorded trees.
"""
from __future__ import annotations

from dataclasses import dataclass

from accelbench.devices.sysfs import SysReader

V1_CPU_MOUNTS = ("sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/cpuacct,cpu")
V2_MOUNTS = ("sys/fs/cgroup", "sys/fs/cgroup/unified")


@dataclass(frozen=True)
class Quota:
    cores: float          # quota / period
    where: str            # the file and group that set it


def read_quota(reader: SysReader) -> Quota | None:
    """The tightest CPU quota on this process's cgroup or any group above it (v1 or v2)."""
    found: list[Quota] = []
    for line in (reader.text("proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        controllers, path = parts[1].split(","), parts[2].strip() or "/"
        if "cpu" in controllers:
            found += _v1_quotas(reader, path)
        elif parts[0] == "0" and parts[1] == "":
            found += _v2_quotas(reader, path)
    return min(found, key=lambda q: q.cores, default=None)


def _group_dirs(reader: SysReader, mount: str, path: str) -> list[str]:
    """The group's folder and every folder above it; the mount root alone where the path is not
    visible (a container's own cgroup mounted at its root)."""
    parts = [p for p in path.split("/") if p]
    if parts and not reader.exists(f"{mount}/{'/'.join(parts)}"):
        parts = []
    return [f"{mount}/{'/'.join(parts[:i])}".rstrip("/") for i in range(len(parts), -1, -1)]


def _v1_quotas(reader: SysReader, path: str) -> list[Quota]:
    mount = next((m for m in V1_CPU_MOUNTS if reader.exists(f"{m}/cpu.cfs_period_us")), None)
    quotas = []
    for folder in _group_dirs(reader, mount, path) if mount else []:
        assert mount is not None
        quota_us, period_us = reader.integer(f"{folder}/cpu.cfs_quota_us"), reader.integer(f"{folder}/cpu.cfs_period_us")
        if quota_us and quota_us > 0 and period_us:
            quotas.append(Quota(quota_us / period_us, f"cgroup v1 {folder.removeprefix(mount) or '/'}: "
                                f"cpu.cfs_quota_us {quota_us} / cpu.cfs_period_us {period_us}"))
    return quotas


def _v2_quotas(reader: SysReader, path: str) -> list[Quota]:
    mount = next((m for m in V2_MOUNTS if reader.exists(f"{m}/cgroup.controllers")), None)
    quotas = []
    for folder in _group_dirs(reader, mount, path) if mount else []:
        assert mount is not None
        fields = (reader.line(f"{folder}/cpu.max") or "").split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]):
            quotas.append(Quota(int(fields[0]) / int(fields[1]),
                                f"cgroup v2 {folder.removeprefix(mount) or '/'}: cpu.max {fields[0]} {fields[1]}"))
    return quotas
