"""Adaptive concurrency: what the fleet shows, the limit it leads to, and the loop between."""
