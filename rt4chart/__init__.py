"""rt4chart: claim-level hallucination auditing of RAG traces (RT4CHART) on Apache Beam."""

__version__ = "0.1.0"
