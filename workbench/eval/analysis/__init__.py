"""Reading logged runs: DataFrames over the store, and the regression gate between two runs."""
