"""agent-eval: evaluate tool-calling agents at scale behind one OpenAI-compatible router proxy."""

__version__ = "0.1.0"
