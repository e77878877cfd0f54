"""`python -m agent_eval` and the `agent-eval` command: a first line at once, then the CLI."""

import os
import signal
import sys

LOADING = {
    "run": "agent-eval run: loading the agent, the reward and the dataset; the workers start next"
}
"""What a command that is seconds from its first output of its own says at once, on a terminal."""


def main() -> None:
    """Say what a slow-to-start command does, then import the command line and run it."""
    _announce(sys.argv[1:])
    # Ctrl-C among the imports ends the command at once: nothing has started yet. Raised as
    # KeyboardInterrupt instead, it can land in one of importlib's callbacks, which Python
    # ignores, and the command would carry on. A process started with SIGINT ignored (a
    # background job) keeps ignoring it.
    before = signal.getsignal(signal.SIGINT)
    if before is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _quit_while_loading)
    # Imported only now: the agent SDK, metrics and rich take seconds on a busy machine.
    from agent_eval.cli import app

    signal.signal(signal.SIGINT, before)
    app(prog_name="agent-eval")


def _quit_while_loading(signum: int, frame: object) -> None:
    os._exit(130)


def _announce(args: list[str]) -> None:
    command = next((arg for arg in args if not arg.startswith("-")), None)
    said = LOADING.get(command or "")
    if said is None or not sys.stderr.isatty() or "--help" in args:
        return
    sys.stderr.write(said + "\n")
    sys.stderr.flush()


if __name__ == "__main__":
    main()
