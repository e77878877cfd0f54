"""A run's attempts in other tools' formats: ATIF (Harbor's trajectories), one file each."""
