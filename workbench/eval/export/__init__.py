"""A logged run, exported to the tools of the field.

inspect   `export_inspect`: Inspect AI eval logs (one per configuration), for `inspect view`
          and `inspect_ai.analysis` (the `inspect` extra)
otel      `export_otel`, `run_spans`, `write_otlp_json`: OpenTelemetry GenAI spans (a trace per
          sample: its routes with their attempts, its tool steps), to an OTLP/HTTP endpoint or a
          JSON file (the `otel` extra)

Both read the run through `RunFrames`, mask whatever content they carry with the run's own
maskers (`_content.py`), and write nothing half-done. Each module imports its extra when it is
imported: a missing one is `EXPORT_UNAVAILABLE`, naming the extra to install.
"""
