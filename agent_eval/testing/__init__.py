"""Test and benchmark fixtures only: never used in the product path."""
