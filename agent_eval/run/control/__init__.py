"""Control of a running run: its actions, and the Unix socket in its directory that takes them."""
