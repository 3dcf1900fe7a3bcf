"""workbench: route LLM traffic across providers under quotas, read every tool-call protocol,
observe what each model can really do, and measure it all."""

__version__ = "0.1.0"
