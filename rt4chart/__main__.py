"""`python -m rt4chart ...`: the `rt4chart` command, for an environment whose scripts folder is
not on PATH (a notebook's kernel, `pipx run`, a venv used without activating it)."""

import sys

from rt4chart.pipeline.launcher import main

sys.exit(main())
