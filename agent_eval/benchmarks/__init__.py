"""Published agent benchmarks read from their own packages and scored by their own checkers."""
