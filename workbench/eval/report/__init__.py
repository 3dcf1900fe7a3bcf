"""`workbench report`: one self-contained HTML page per run (and per pair of runs)."""
