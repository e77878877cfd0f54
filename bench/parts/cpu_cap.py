"""Hold benchmark processes to a fixed CPU share, each in a cgroup of its own with a CPU quota
(cgroup v1 `cpu` controller or cgroup v2 `cpu.max`) and ten times the default CPU weight, so
other load on the machine cannot take the share either; every cgroup is removed on exit."""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from bench.parts.fleet import BenchError, process_cpu_seconds

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
MIN_QUOTA_US = 1_000  # the kernel refuses quotas below 1 ms
WEIGHT = {False: "10240", True: "1000"}  # 10x the default cpu.shares (v1), cpu.weight (v2)


class CpuCapError(BenchError):
    """No cgroup CPU controller this process may use; the message says what is missing."""


@dataclass(frozen=True)
class Controller:
    """Where new cgroups go, and which cgroup version's files set their quota."""

    base: Path
    v2: bool

    def set_weight(self, group: Path) -> None:
        (group / ("cpu.weight" if self.v2 else "cpu.shares")).write_text(WEIGHT[self.v2])

    def set_quota(self, group: Path, cores: float) -> None:
        quota = max(round(cores * PERIOD_US), MIN_QUOTA_US)
        if self.v2:
            (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))


def find_controller(root: Path = CGROUP_ROOT) -> Controller:
    """The cgroup v1 `cpu` hierarchy under `root`, else a v2 one offering `cpu`.

    Raises: CpuCapError naming what is missing."""
    need = "a CPU cap needs root and a cgroup cpu controller"
    v1 = root / "cpu"
    candidates = [
        Controller(v1, v2=False) if (v1 / "cpu.cfs_quota_us").is_file() else None,
        *(_v2(base) for base in (root / "unified", root)),
    ]
    found = next((c for c in candidates if c is not None), None)
    if found is None:
        raise CpuCapError(
            f"{need}: found neither {v1}/cpu.cfs_quota_us (cgroup v1) nor `cpu` in "
            f"{root}/cgroup.controllers (cgroup v2); run without the cap"
        )
    if not os.access(found.base, os.W_OK):
        raise CpuCapError(f"{need}: {found.base} is not writable here; run as root")
    return found


def _v2(base: Path) -> Controller | None:
    controllers = base / "cgroup.controllers"
    if controllers.is_file() and "cpu" in controllers.read_text().split():
        return Controller(base, v2=True)
    return None


@dataclass
class CpuCaps:
    """Cgroups made by this benchmark: `cap` puts processes in a new one; `close` removes all."""

    controller: Controller
    _groups: dict[str, tuple[Path, list[int]]] = field(default_factory=dict)

    def cap(self, name: str, pids: list[int], cores: float | None) -> None:
        """Put these processes (all their threads, and children they start later) in a new
        cgroup of high CPU weight, allowed `cores` of CPU time (no limit with None).
        Raises: CpuCapError."""
        group = self.controller.base / f"agent-eval-bench-{os.getpid()}-{name}"
        try:
            if self.controller.v2:
                _enable_cpu(self.controller.base)
            group.mkdir()
            self._groups[name] = (group, pids)
            self.controller.set_weight(group)
            if cores is not None:
                self.controller.set_quota(group, cores)
            for pid in pids:
                (group / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            raise CpuCapError(f"could not place {name} in the cgroup {group}: {exc}") from exc

    def usage(self) -> dict[str, dict[str, float]]:
        """Per cgroup so far: the CPU seconds of the processes put in it, and the share of
        the quota periods in which it ran that the quota cut short (near 0: it was not the
        cap that held it back)."""
        return {
            name: {
                "cpu_seconds": round(sum(map(process_cpu_seconds, pids)), 2),
                "throttled": round(_throttled(group), 3),
            }
            for name, (group, pids) in self._groups.items()
        }

    def close(self) -> None:
        """Remove every cgroup made, moving what still runs in one back to the base cgroup."""
        for group, _ in reversed(self._groups.values()):
            _remove(group, self.controller.base)
        self._groups.clear()


def _throttled(group: Path) -> float:
    """Throttled periods over periods with runnable threads, from the cgroup's cpu.stat."""
    lines = (group / "cpu.stat").read_text().split("\n")
    stat = dict(line.split() for line in lines if line.strip())
    periods = int(stat["nr_periods"])
    return int(stat["nr_throttled"]) / periods if periods else 0.0


def _enable_cpu(base: Path) -> None:
    control = base / "cgroup.subtree_control"
    if "cpu" not in control.read_text().split():
        control.write_text("+cpu")


def _remove(group: Path, base: Path) -> None:
    """Move whatever still runs in the cgroup back to the base one, then delete it."""
    with contextlib.suppress(OSError):
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):  # gone meanwhile
                (base / "cgroup.procs").write_text(pid)
        group.rmdir()
        return
    logger.warning("could not remove the cgroup %s; remove it with rmdir", group)
