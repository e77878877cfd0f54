"""The workers behind the proxy: each one's state, the pool, health probes, breakers, URLs."""
