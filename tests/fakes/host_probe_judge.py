"""A custom judge that looks at its host process while it judges, for the test that the
library leaves its host alone (tests/integration/test_api_leaves_host_alone.py).

It is the keyword judge, except that at its first decomposition it does what a host process may
do while an audit runs in one of its threads (`gc.freeze()`, as a pre-fork server does) and
records, at every call, the collector's freeze count, whether Beam's `get_dofn_specs` is
still Beam's own and the identity of the function in both places Beam reads it from. The
records go to the file named by the `record` option (one JSON line per call): the judge may
run in a worker thread or process, never in the test's frame.
"""

from __future__ import annotations

import gc
import json

from apache_beam.runners.direct import transform_evaluator
from apache_beam.transforms import userstate

from fake_judges import KeywordJudge


class HostProbeJudge(KeywordJudge):
    def __init__(self, record: str, freeze: bool):
        super().__init__({})
        self._record, self._freeze = record, freeze
        self.model = "host-probe"

    def _note(self, call: str) -> None:
        if self._freeze and not gc.get_freeze_count():
            gc.freeze()  # the host's own policy, set while the audit runs
        memo_of = getattr(userstate.get_dofn_specs, "rt4chart_memo_of", None)
        with open(self._record, "a", encoding="utf-8") as out:
            out.write(json.dumps({"call": call, "frozen": gc.get_freeze_count(),
                                  "beam_specs_replaced": memo_of is not None,
                                  "specs_ids": [id(userstate.get_dofn_specs),
                                                id(transform_evaluator.get_dofn_specs)]})
                      + "\n")

    async def decompose(self, sentence, answer, question):
        self._note("decompose")
        return await super().decompose(sentence, answer, question)

    async def verify_local(self, claim, chunk, question):
        self._note("verify_local")
        return await super().verify_local(claim, chunk, question)


def factory(options: dict[str, str]) -> HostProbeJudge:
    return HostProbeJudge(options["record"], options.get("freeze", "false") == "true")
