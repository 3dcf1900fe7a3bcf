"""The DuckDB file of the workbench: its schema and migrations, its journal, how it is opened,
the rows written to it and the typed methods that read it."""
