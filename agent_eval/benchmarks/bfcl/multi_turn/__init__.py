"""BFCL's multi-turn categories, played turn by turn against its own executable backends."""
