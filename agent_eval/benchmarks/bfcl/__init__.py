"""BFCL v4 (the Berkeley Function Calling Leaderboard): its data, played through the proxy,
scored by its own checkers."""
