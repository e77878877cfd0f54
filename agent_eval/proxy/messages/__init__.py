"""Serve the Anthropic Messages API on every worker: natively, or translated to Chat Completions."""
