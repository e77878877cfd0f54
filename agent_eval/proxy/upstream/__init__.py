"""Proxy to worker: the HTTP/1.1 client, its connections, failures, streams relayed and read."""
