"""What the harness asks of the operating system: child processes, signals, the keys they
get, and evidence when a process or a file fails."""
