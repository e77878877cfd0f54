"""From an allocation to running workers: the launch settings, the schedulers by name, and
the block that keeps the workers up."""
