"""Reading finished runs: the summary table, the offline HTML report and run comparison."""
