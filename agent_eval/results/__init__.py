"""A run's results on disk: the attempt, its record, the run directory, the summary, schemas.

Import the modules themselves: the attempt sits below the metrics that count it, the record
and the summary above them.
"""
