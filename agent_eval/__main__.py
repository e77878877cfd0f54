"""`python -m agent_eval` and the `agent-eval` command: a first line at once, then the CLI."""

import sys

LOADING = {
    "run": "agent-eval run: loading the agent, the reward and the dataset; the workers start next"
}
"""What a command that is seconds from its first output of its own says at once, on a terminal."""


def main() -> None:
    """Say what a slow-to-start command does, then import the command line and run it."""
    _announce(sys.argv[1:])
    try:
        # Imported only now: the agent SDK, metrics and rich take seconds on a busy machine.
        from agent_eval.cli import app
    except KeyboardInterrupt:
        sys.exit(130)  # Ctrl-C among the imports: nothing has started, no traceback to show
    app(prog_name="agent-eval")


def _announce(args: list[str]) -> None:
    command = next((arg for arg in args if not arg.startswith("-")), None)
    said = LOADING.get(command or "")
    if said is None or not sys.stderr.isatty() or "--help" in args:
        return
    sys.stderr.write(said + "\n")
    sys.stderr.flush()


if __name__ == "__main__":
    main()
