"""Reading finished runs: the summary table, later the HTML report and run comparison."""
