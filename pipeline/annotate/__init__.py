"""Write-back of a run's verdicts to where a RAG team looks at its traces.

`rt4chart annotate phoenix RUN_DIR|bq:P:D --endpoint URL` (and `--annotate phoenix` on `audit`
and `stream`) puts each audited answer's verdict onto the root span of its trace in Arize
Phoenix, as a span annotation (`verdicts.py` builds it, `phoenix.py` writes it, `cli.py` wires
the commands).
"""
