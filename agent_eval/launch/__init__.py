"""What to launch and where: the launch settings and the schedulers by name, settled before
anything starts; `run/workers.py` puts them to work."""
