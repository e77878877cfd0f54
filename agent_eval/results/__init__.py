"""A run's results on disk: the attempt record, the run directory, the summary and its schemas.

Import the modules themselves: the record sits below the metrics, the summary above them.
"""
