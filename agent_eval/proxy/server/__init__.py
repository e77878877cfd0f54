"""The proxy's face to clients: the app, routes, auth, request bounds, metrics, socket, process."""
