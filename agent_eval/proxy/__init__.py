"""Router proxy: one OpenAI-compatible endpoint load-balanced across inference workers."""
