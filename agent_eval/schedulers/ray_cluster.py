"""Ray scheduler: one placement group and one actor per worker; each actor runs its server.

Logs go to RUN_DIR/workers/ on the worker's node: a multi-node cluster needs the run dir on a
shared filesystem (a node that cannot write it logs to its own temp dir instead).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import ray
from ray.actor import ActorHandle
from ray.exceptions import GetTimeoutError, RayActorError, RayError, RayTaskError
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from agent_eval.allocation import Allocation
from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig
from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig
from agent_eval.schedulers.base import Launch, LaunchedWorker, Scheduler
from agent_eval.schedulers.errors import GPUAllocationError, SchedulerUnavailableError
from agent_eval.schedulers.local import visible_gpus
from agent_eval.schedulers.ray_actor import ServerActor, ServerProcess, Started
from agent_eval.shims.ray_logs import hide_sigterm_note

if TYPE_CHECKING:
    from ray import ObjectRef

log = logging.getLogger(__name__)

T = TypeVar("T")

GRACE_SECONDS = 10.0
PLACEMENT_TIMEOUT = 120.0
ACTOR_TIMEOUT = 120.0
STATUS_TIMEOUT = 5.0
CONNECT_TIMEOUT = 10.0


class _InitLogging(TypedDict):
    """ray.init's logging arguments, typed so that `**` passes each with its own type."""

    log_to_driver: bool
    configure_logging: bool
    logging_level: int


# Ray's chatter stays out of the harness's terminal: no worker output, warnings only.
_QUIET: _InitLogging = {
    "log_to_driver": False,
    "configure_logging": True,
    "logging_level": logging.WARNING,
}


# ray.init off the main thread warns it set no SIGTERM handler: intended, the harness has one.
hide_sigterm_note()


class PlacementError(ConfigError):
    """The Ray cluster cannot hold the workers' bundles."""


def format_bundle(bundle: dict[str, float]) -> str:
    """`{GPU: 4, CPU: 1}`."""
    return "{" + ", ".join(f"{name}: {amount:g}" for name, amount in bundle.items()) + "}"


def placement_problem(
    bundle: dict[str, float], count: int, nodes: list[dict[str, float]]
) -> str | None:
    """Why `count` bundles can never fit nodes with these resources, or None when they may."""
    for name, amount in bundle.items():
        total = sum(node.get(name, 0.0) for node in nodes)
        largest = max((node.get(name, 0.0) for node in nodes), default=0.0)
        if amount * count > total:
            return f"the cluster has {name}: {total:g}"
        if amount > largest:
            return f"no node has more than {name}: {largest:g}"
    return None


def refuse_spanning(
    bundle: dict[str, float], allocation: Allocation, nodes: list[dict[str, float]]
) -> None:
    """Refuse a worker that only GPUs of several nodes together could hold.

    Raises: GPUAllocationError naming the shape, each node's GPUs and the ways to run it.
    """
    need = bundle.get("GPU", 0.0)
    gpus = sorted((node.get("GPU", 0.0) for node in nodes), reverse=True)
    if need <= max(gpus, default=0.0) or need > sum(gpus):
        return  # it fits one node, or the whole cluster is short (placement_problem says so)
    raise GPUAllocationError(
        f"{allocation} puts {need:g} GPUs (t x p) in each worker, but Ray's nodes have "
        f"{', '.join(f'{g:g}' for g in gpus)} GPUs each: a worker would span nodes, which the "
        f"Ray scheduler does not launch. Run it with the Slurm scheduler (scheduler.type=slurm), "
        f"or lower t x p to {gpus[0]:g} or less"
    )


class RayScheduler(Scheduler):
    """Workers as Ray actors, each in its own placement group, on a cluster joined or started."""

    name = "ray"

    def __init__(
        self,
        run_dir: Path,
        address: str | None = None,
        cpus_per_worker: float = 1.0,
        placement_timeout: float = PLACEMENT_TIMEOUT,
        interface: str | None = None,
    ) -> None:
        super().__init__(run_dir)
        self.address = address
        self.cpus_per_worker = cpus_per_worker
        self.placement_timeout = placement_timeout
        self.interface = interface
        self._launch: Launch | None = None
        self._ports_taken: set[int] = set()  # by this launch: never handed out twice
        self._groups: list[PlacementGroup] = []
        self._actors: list[ActorHandle[ServerProcess]] = []
        self._started: list[Started] = []
        self._connected = False
        # Every Ray call runs on this one thread: the event loop never blocks, calls keep their
        # order, and the local cluster's processes (which die with the thread that started them)
        # live until stop().
        self._thread: ThreadPoolExecutor | None = None

    @classmethod
    def from_config(cls, config: LaunchConfig, run_dir: Path) -> RayScheduler:
        settings = config.scheduler.ray
        return cls(
            run_dir, settings.address, settings.cpus_per_worker, interface=settings.interface
        )

    async def launch(
        self, backend: Backend, config: WorkerConfig, allocation: Allocation
    ) -> list[LaunchedWorker]:
        backend.validate(config, allocation)
        self._launch = Launch(backend, config, allocation, self.worker_key)
        self._thread = self._thread or ThreadPoolExecutor(1, thread_name_prefix="ray-scheduler")
        try:
            self.workers = await self._call(self._start_all, self._launch)
        except BaseException:
            await self.stop()
            raise
        return self.workers

    async def relaunch(self, worker: LaunchedWorker, log: Path) -> bool:
        await self._call(self._relaunch, worker, log)
        return True

    @property
    def pids(self) -> list[int]:
        """Process ids of the servers (on their nodes), in launch order."""
        return [started["pid"] for started in self._started]

    async def exit_status(self, worker: LaunchedWorker) -> str | None:
        if self._thread is None or not self._actors:
            return "was stopped"
        actor = self._actors[worker.index]
        try:
            code = await self._call(ray.get, actor.returncode.remote(), timeout=STATUS_TIMEOUT)
        except GetTimeoutError:
            return None  # a busy actor is not a dead one; Ray reports the dead ones
        except RayActorError as exc:
            return f"lost its Ray actor ({first_line(exc)})"
        if code is None:
            return None
        await self._call(self._copy_log, worker)
        return f"exited with code {code}"

    async def stop(self) -> None:
        if self._thread is None:
            return
        thread, self._thread = self._thread, None
        try:
            await _run(thread, self._stop_servers)
        finally:
            # Queued behind the graceful stop on the scheduler's thread: the release happens even
            # if we are cancelled meanwhile, and the thread ends once it is done.
            release = asyncio.wrap_future(thread.submit(self._release))
            thread.shutdown(wait=False)
            await asyncio.shield(release)

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._thread is None:
            raise RuntimeError("the Ray scheduler is stopped")
        return await _run(self._thread, fn, *args, **kwargs)

    def _start_all(self, launch: Launch) -> list[LaunchedWorker]:
        self._connect()
        bundle = self._bundle(launch.backend, launch.allocation)
        self._place(bundle, launch.allocation)
        self._actors = [self._actor(group, bundle) for group in self._groups]
        addresses = [self._address(actor) for actor in self._actors]
        commands = [launch.command(*address) for address in addresses]
        gpus = launch.backend.needs_gpus
        starting = [self._start(i, c, self.log_path(i), gpus) for i, c in enumerate(commands)]
        self._started = _get(starting, ACTOR_TIMEOUT)
        return [self._worker(i, addresses[i], command) for i, command in enumerate(commands)]

    def _relaunch(self, worker: LaunchedWorker, log: Path) -> None:
        """Start a worker's server again on a port its actor picks anew."""
        assert self._launch is not None  # set by launch(), before any worker exists
        worker.host, worker.port = self._address(self._actors[worker.index])
        command = self._launch.command(worker.host, worker.port)
        starting = self._start(worker.index, command, log, self._launch.backend.needs_gpus)
        (self._started[worker.index],) = _get([starting], ACTOR_TIMEOUT)
        worker.log = Path(self._started[worker.index]["log"])

    def _address(self, actor: ActorHandle[ServerProcess]) -> tuple[str, int]:
        """Where the actor's server is to listen; one actor at a time, so no port goes twice."""
        ref: ObjectRef[tuple[str, int]] = actor.address.remote(
            self.interface, sorted(self._ports_taken)
        )
        ((host, port),) = _get([ref], ACTOR_TIMEOUT)
        self._ports_taken.add(port)
        return host, port

    def _start(self, index: int, command: WorkerCommand, log: Path, gpus: bool) -> ObjectRef:
        return self._actors[index].start.remote(command.argv, command.env, str(log), gpus)

    def _worker(
        self, index: int, address: tuple[str, int], command: WorkerCommand
    ) -> LaunchedWorker:
        started = self._started[index]
        gpus = tuple(int(g) for g in started["gpus"] if g.isdigit())
        worker = LaunchedWorker(
            index, *address, Path(started["log"]), command.ready_path, command.health_path, gpus
        )
        log.info("started %s: %s", worker.name, " ".join(command.argv))
        return worker

    def _connect(self) -> None:
        self._connected = join_cluster(self.address)

    def _bundle(self, backend: Backend, allocation: Allocation) -> dict[str, float]:
        cpus = {"CPU": self.cpus_per_worker}
        return {"GPU": float(allocation.gpus_per_worker), **cpus} if backend.needs_gpus else cpus

    def _place(self, bundle: dict[str, float], allocation: Allocation) -> None:
        """One placement group per worker, placed within the timeout.

        Raises: GPUAllocationError or PlacementError naming what was asked and what is there.
        """
        plural = "s" if allocation.dp > 1 else ""
        asked = f"{allocation.dp} bundle{plural} of {format_bundle(bundle)} ({allocation})"
        _check_fits(bundle, allocation, asked)
        # Unnamed: names are unique per namespace, and two schedulers may share a connection.
        self._groups = [placement_group([bundle]) for _ in range(allocation.dp)]
        try:
            ray.get([group.ready() for group in self._groups], timeout=self.placement_timeout)
        except GetTimeoutError:
            free = ray.available_resources()
            raise PlacementError(
                f"{asked} could not be placed within {self.placement_timeout:.0f} s; free now: "
                f"{format_bundle({k: free.get(k, 0.0) for k in bundle})}. Other jobs hold the rest."
            ) from None

    def _actor(self, group: PlacementGroup, bundle: dict[str, float]) -> ActorHandle[ServerProcess]:
        strategy = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0)
        actor = ServerActor.options(
            num_cpus=bundle["CPU"], num_gpus=bundle.get("GPU", 0), scheduling_strategy=strategy
        ).remote()
        # Ray types remote() as handle-or-class so that typed methods check; it makes a handle.
        assert isinstance(actor, ActorHandle)
        return actor

    def _copy_log(self, worker: LaunchedWorker) -> None:
        """Bring the end of a node-local log to the run dir, so the error can show it."""
        if worker.log.exists():
            return
        local = self.run_dir / "workers" / worker.log.name
        try:
            ref: ObjectRef[str] = self._actors[worker.index].tail.remote(200)
            tail = ray.get(ref, timeout=STATUS_TIMEOUT)
        except RayError as exc:
            log.warning("cannot fetch the log of %s: %s", worker.name, first_line(exc))
            return
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(f"(last lines of {worker.log} on {worker.host})\n{tail}\n")
        worker.log = local

    def _stop_servers(self) -> None:
        """Ask every actor to stop its server: SIGTERM to its group, SIGKILL after the grace."""
        if not self._actors:
            return
        _, late = ray.wait(
            [actor.stop.remote(GRACE_SECONDS) for actor in self._actors],
            num_returns=len(self._actors),
            timeout=GRACE_SECONDS + 5,
        )
        if late:
            log.warning("%d Ray actor(s) did not stop their server; killing them", len(late))

    def _release(self) -> None:
        """Kill the actors, remove the placement groups, and leave a cluster we started."""
        try:
            for actor in self._actors:
                ray.kill(actor, no_restart=True)
            for group in self._groups:
                remove_placement_group(group)
        finally:
            self._actors, self._groups = [], []
            if self._connected:
                # A local cluster stops with its driver; a joined one only loses this connection.
                ray.shutdown()
                self._connected = False


async def _run(thread: ThreadPoolExecutor, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(thread, functools.partial(fn, *args, **kwargs))


def _get(refs: list[Any], timeout: float) -> list[Any]:
    """Results of actor calls; an actor's ConfigError reaches the caller as itself."""
    try:
        return ray.get(refs, timeout=timeout)
    except RayTaskError as exc:
        if isinstance(exc.cause, ConfigError):
            raise exc.cause from None
        raise
    except GetTimeoutError:
        raise SchedulerUnavailableError(
            f"the Ray worker actors did not answer within {timeout:.0f} s"
        ) from None
    except RayActorError as exc:
        raise SchedulerUnavailableError(
            f"a Ray worker actor died while starting ({first_line(exc)}); agent-eval must be "
            "installed, at the same version, on every node"
        ) from None


def _check_fits(bundle: dict[str, float], allocation: Allocation, asked: str) -> None:
    """Refuse at once what the cluster's live nodes can never hold, rather than wait for it."""
    nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]
    refuse_spanning(bundle, allocation, nodes)
    problem = placement_problem(bundle, allocation.dp, nodes)
    if problem is not None and "GPU" in problem:
        raise GPUAllocationError(
            f"{asked} cannot be placed: {problem}; lower d, t or p, or join a cluster with "
            "more GPUs (ray.address)"
        )
    if problem is not None:
        raise PlacementError(
            f"{asked} cannot be placed: {problem}; lower d or ray.cpus_per_worker, or join "
            "a larger cluster (ray.address)"
        )


def join_cluster(address: str | None) -> bool:
    """Connect this process to the Ray cluster at `address`, or start a local one for None;
    whether this call connected (False: a connection was already there, to be left open).

    Call it from a thread that lives as long as the connection: a local cluster's processes
    die with the thread that started them.

    Raises: SchedulerUnavailableError naming the address and how to start or reach it.
    """
    if ray.is_initialized():
        log.info("using this process's existing Ray connection")
        return False
    try:
        _init(address)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        if address is None:
            raise SchedulerUnavailableError(
                f"cannot start a local Ray cluster ({first_line(exc)})"
            ) from None
        raise SchedulerUnavailableError(
            f"cannot join the Ray cluster at {address} ({first_line(exc)}); start it "
            "with `ray start --head` or fix ray.address. A cluster with token authentication "
            "also needs RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN or ~/.ray/auth_token)"
        ) from None
    total = ray.cluster_resources()
    log.info("Ray cluster has %s", format_bundle({k: total.get(k, 0.0) for k in ("GPU", "CPU")}))
    return True


def _init(address: str | None) -> None:
    if address is not None:
        _check_listening(address)
        ray.init(address=address, **_QUIET)
        return
    # "local", not None: None would join any cluster found on this machine.
    ray.init(
        address="local", num_cpus=os.cpu_count(), num_gpus=len(visible_gpus()),
        include_dashboard=False, **_QUIET,
    )  # fmt: skip


def _check_listening(address: str) -> None:
    """Fail fast where nothing listens: ray.init would wait there forever.

    Raises: ConnectionError.
    """
    host, colon, port = address.rpartition(":")
    if "://" in address or not colon or not port.isdigit():
        return  # "auto" and ray:// addresses: Ray finds or times out by itself
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address}: {exc.strerror or exc}") from None


def first_line(error: BaseException) -> str:
    """The first line of an error's message (Ray's run to pages), else its type's name."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
