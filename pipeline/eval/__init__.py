"""Evaluation of the audit on labelled data (`rt4chart eval`).

Modules: `loaders` (RAGTruth, RAGTruth++, JSONL with gold -> records), `items` (gold joined with
the audit's tables), `metrics` (pure measures), `measures` (systems, bootstrap intervals),
`report` and `plots` (JSON, Markdown, PNG), `runner` (the run), `compare` (two runs), `cli`.
"""
