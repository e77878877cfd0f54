"""Serve the OpenAI Responses API on every worker: natively, or translated to Chat Completions."""
