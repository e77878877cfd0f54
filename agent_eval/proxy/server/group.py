"""A proxy process's place in a group sharing one port: its index, and its siblings' own ports.

The parent makes the group's folder (its path in AGENT_EVAL_PROXY_GROUP); each child writes its
own origin (`http://HOST:PORT`, a port of its alone) there as `member-I` before it says it is
ready, so once the group is up every process can reach every other. Process 0 leads: it probes
the workers for all of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent_eval.system.diagnostics import writing

GROUP_DIR = "AGENT_EVAL_PROXY_GROUP"
GROUP_SIZE = "AGENT_EVAL_PROXY_GROUP_SIZE"
LOCAL_HEADER = "X-Agent-Eval-Local"
"""On a request one process sends another: answer for yourself alone, relay it to no one."""
LEADER = 0
RESPONSES_FILE = "responses.sqlite3"


@dataclass(frozen=True)
class Group:
    """This process's index in its group, the group's size, and the folder the group shares."""

    member: int
    directory: Path
    size: int

    @classmethod
    def from_environment(cls, member: int) -> Group:
        """The group the parent set up for member `member` (its folder in GROUP_DIR, its size
        in GROUP_SIZE)."""
        return cls(member, Path(os.environ[GROUP_DIR]), int(os.environ[GROUP_SIZE]))

    @property
    def leads(self) -> bool:
        return self.member == LEADER

    @property
    def responses_path(self) -> Path:
        """The Responses store every process of the group reads and writes."""
        return self.directory / RESPONSES_FILE

    def publish(self, origin: str) -> None:
        """Tell the others where this process alone listens."""
        path = self.directory / f"member-{self.member}"
        temporary = path.with_suffix(".tmp")
        with writing(path):
            temporary.write_text(origin)
            temporary.replace(path)  # whole or absent: a sibling never reads half a URL

    def origins(self) -> dict[int, str]:
        """Each process's own origin, as published so far."""
        found = {}
        for path in self.directory.glob("member-*"):
            index = path.name.removeprefix("member-")
            if index.isdigit():
                found[int(index)] = path.read_text().strip()
        return found

    def unstarted(self) -> list[int]:
        """The processes that have not published their origin yet."""
        published = self.origins()
        return [member for member in range(self.size) if member not in published]

    def siblings(self) -> dict[int, str]:
        """The other processes' origins."""
        return {i: url for i, url in self.origins().items() if i != self.member}

    def leader(self) -> str | None:
        """The leading process's origin; None until it has published it."""
        return None if self.leads else self.origins().get(LEADER)
