"""Span sources: RAG traces kept where their applications already log them (OTLP JSON as the
OpenTelemetry Collector writes it, OpenInference span JSON, a Phoenix spans export, a Langfuse
export, OTLP messages on Pub/Sub) read into `SourceSpan`s, to be assembled into traces by
`transforms/assemble.py`. docs/sources.md maps each source's fields to the trace schema."""
