"""The web view of runs: browse a run's attempts and drill down into every trajectory."""
