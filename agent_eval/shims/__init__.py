"""Every reach into a library's private parts, one module per internal, each pinned by a test.

Nothing else in agent_eval imports a library's private name, patches a library's object or
swaps its class (tests/test_layers.py checks); tests/test_shims.py fails when a library
changes under a shim, so an upgrade breaks there and not silently.
"""
