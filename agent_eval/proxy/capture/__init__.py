"""Per-attempt keys: each request sent with one is attributed to its attempt and recorded."""
