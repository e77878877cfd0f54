"""Where workers run: the schedulers by name, and their settings, validated at the edge."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from agent_eval import installs
from agent_eval.errors import ConfigError
from agent_eval.registry import Registry
from agent_eval.settings import Section

# A scheduler is built from these settings, so they cannot name its class: launch.workers loads
# each one as a type[Scheduler].
SCHEDULERS: Registry[Any] = Registry(
    "scheduler",
    "agent_eval.schedulers",
    {
        "local": "agent_eval.schedulers.local:LocalScheduler",
        "ray": "agent_eval.schedulers.ray_cluster:RayScheduler",
        "slurm": "agent_eval.schedulers.slurm:SlurmScheduler",
    },
    installs={"ray": installs.extra("ray")},
)
# Checked by name when the config is read; the scheduler itself is imported only when launched.
SchedulerName = Annotated[str, AfterValidator(SCHEDULERS.check)]

# A host name or an IPv4 address: what a worker binds and the proxy's URL of it holds.
_HOST = re.compile(r"[A-Za-z0-9._-]+")


class RayConfig(BaseModel):
    """A Ray cluster to join, or none to start a local one."""

    model_config = ConfigDict(extra="forbid")

    address: str | None = Field(None, description="Cluster address (ray://host:10001 or auto).")
    cpus_per_worker: float = Field(1.0, gt=0, description="CPUs in each worker's bundle.")
    interface: str | None = Field(
        None,
        description="Network interface whose IPv4 workers publish (e.g. ib0); else Ray's node IP.",
    )


class SlurmConfig(BaseModel):
    """One sbatch job whose tasks each run a worker."""

    model_config = ConfigDict(extra="forbid")

    partition: str | None = Field(
        None, description="Partition the job goes to, as sbatch --partition takes it."
    )
    account: str | None = Field(
        None, description="Account the job is charged to, as sbatch --account takes it."
    )
    time: str = Field("04:00:00", description="Job time limit, as sbatch --time takes it.")
    nodes: int | None = Field(None, ge=1, description="Nodes; by default as many as the GPUs need.")
    gpus_per_node: int = Field(8, ge=0, description="GPUs on each node.")
    cpus_per_gpu: int = Field(8, ge=1, description="CPUs for each GPU of a worker's task.")
    cpus_per_task: int | None = Field(
        None, ge=1, description="CPUs of each task, instead of cpus_per_gpu x its GPUs."
    )
    mem_per_gpu: str = Field(
        "64G", description="Memory per GPU of workers sharing a node, as --mem-per-gpu takes it."
    )
    mem: str | None = Field(
        None, description="Memory per node, as sbatch --mem takes it (default: see mem_per_gpu)."
    )
    sbatch_lines: list[str] = Field(default_factory=list, description="More #SBATCH lines.")
    setup_lines: list[str] = Field(
        default_factory=list, description="Shell lines run first (module load, activation)."
    )
    poll_interval: float = Field(2.0, gt=0, description="Seconds between job state checks.")
    host: str | None = Field(
        None, description="Address workers bind and publish; by default the node's first IP."
    )
    interface: str | None = Field(
        None, description="Network interface (e.g. ib0) whose IPv4 address workers publish."
    )
    port_attempts: int = Field(
        5, ge=1, description="Launches of a worker whose port turns out to be taken."
    )

    @field_validator("host")
    @classmethod
    def _plain_host(cls, host: str | None) -> str | None:
        # A ConfigError, not a ValueError: the refusal must not echo the value (a password).
        if host is not None and not _HOST.fullmatch(host):
            raise ConfigError(
                "scheduler.slurm.host must be a host name or an IPv4 address, like node01 or "
                "10.0.0.5, without a user name, password, port or path: workers listen on it"
            )
        return host


class SchedulerSection(Section):
    """Where launched workers run."""

    type: SchedulerName = Field("local", description="Where workers run: local, ray or slurm.")
    ray: RayConfig = Field(default_factory=RayConfig)
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)
