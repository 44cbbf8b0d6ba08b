"""Deterministic sampling and always-audit rules: which valid traces are audited at all.

The decision is made right after validation, before segmentation and any judge call, so an
unsampled trace costs nothing but its count. It depends on the trace alone (its id, and the
fields the always-audit rules read), never on the runner, worker count, input order or chunk:
a rerun, a backfill, a stream replay and a run in chunks pick the same traces.

- The pick: the first 8 bytes of sha256(salt + "\\x00" + trace_id), as a big-endian uint64,
  divided by 2**64, is below the route's rate (`--sample ROUTE=RATE`; `*` is every other
  route; a bare RATE is `*=RATE`; a route with no rate and no `*` is audited whole).
- Always-audit rules (`--always FIELD=VALUE`): a trace whose FIELD, as str(), equals VALUE is
  audited whatever the sample says (counted as `always`, weight 1). FIELD is a top-level trace
  field (trace_id, route, task, generator, ...) or `metadata.KEY`; a missing field (None, or a
  metadata key the trace does not have) matches nothing, not even an empty VALUE.

Every trace that reaches the decision is counted (`Traffic` records, kinds in KINDS), so that
the traces left out are counted per route and window: seen - sampled - always.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, replace
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import DeadLetter, Trace, Traffic
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.judges import runtime

METRICS = "rt4chart"
ANY_ROUTE = "*"
SAMPLED, ALWAYS, UNSAMPLED = "sampled", "always", "unsampled"
_TRACE_FIELDS = tuple(f.name for f in dataclasses.fields(Trace)
                      if f.name not in ("metadata", "sample_weight", "raw"))


def parse_rate(text: str) -> float:
    """A rate in [0, 1] (ValueError naming --sample otherwise)."""
    try:
        rate = float(text)
    except ValueError:
        raise ValueError(f"--sample expects a rate in [0, 1], got {text!r}") from None
    if not 0.0 <= rate <= 1.0:  # NaN fails both
        raise ValueError(f"--sample expects a rate in [0, 1], got {text!r}")
    return rate


def parse_rates(items: tuple[str, ...]) -> dict[str, float]:
    """`--sample` values as {route or '*': rate}; a bare RATE is `*=RATE`; a route given twice
    is a usage error (which one was meant is not ours to guess)."""
    rates: dict[str, float] = {}
    for item in items:
        route, sep, value = item.rpartition("=")
        route = route.strip() if sep else ANY_ROUTE
        if sep and not route:
            raise ValueError(f"--sample expects RATE or ROUTE=RATE, got {item!r}")
        if route in rates:
            raise ValueError(f"--sample gives route {route!r} twice")
        rates[route] = parse_rate(value.strip())
    return rates


@dataclass(frozen=True)
class Rule:
    """An always-audit rule: FIELD (a trace field, or `metadata.KEY`) = VALUE."""

    field: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Rule:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--always expects FIELD=VALUE, got {text!r}")
        key = name.removeprefix("metadata.")
        if name.startswith("metadata.") and not key:
            raise ValueError(f"--always: metadata. needs a KEY, got {text!r}")
        if not name.startswith("metadata.") and name not in _TRACE_FIELDS:
            raise ValueError(f"--always: unknown trace field {name!r} (one of "
                             f"{', '.join(_TRACE_FIELDS)}, or metadata.KEY)")
        return cls(name, value)

    def matches(self, trace: Trace) -> bool:
        """str() of the field equals the value; a missing field matches nothing."""
        if self.field.startswith("metadata."):
            key = self.field.removeprefix("metadata.")
            found = [v for k, v in trace.metadata if k == key]
            return any(str(v) == self.value for v in found)
        got = getattr(trace, self.field)
        return got is not None and str(got) == self.value


def score(trace_id: str, salt: str = "") -> float:
    """The trace's place in [0, 1): sha256(salt NUL trace_id)'s first 8 bytes / 2**64."""
    digest = hashlib.sha256(f"{salt}\x00{trace_id}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class SamplingConfig:
    """The sampling rates, their salt and the always-audit rules (none: every trace)."""

    sample: tuple[str, ...] = option(
        "--sample", default=(), parsed_default=[], kind="append", metavar="[ROUTE=]RATE",
        flex=Flex(
            "Sampling rates",
            "Semicolon-separated [ROUTE=]RATE (each becomes --sample), e.g. "
            "checkout=0.2;*=0.01: the share of each route's traces audited, picked by a hash "
            "of the trace id. Default: every trace.",
            name="samples"),
        help="audit this share of the traces (of ROUTE; * or a bare RATE: every other route), "
             "picked by a stable hash of the trace id (repeatable; default: every trace)")
    sample_salt: str = option(
        "--sample-salt", "--sample_salt", default="", parsed_default=None, metavar="SALT",
        flex=Flex("Sampling salt",
                  "Mixed into the sampling hash: another salt picks other traces. Default: "
                  "none."),
        help="mixed into the sampling hash: another salt picks another sample")
    always: tuple[str, ...] = option(
        "--always", default=(), parsed_default=[], kind="append", metavar="FIELD=VALUE",
        flex=Flex(
            "Always-audit rules",
            "Semicolon-separated FIELD=VALUE (each becomes --always), FIELD a trace field or "
            "metadata.KEY, e.g. metadata.feedback=down: matching traces are audited whatever "
            "the sample says."),
        help="always audit the traces whose FIELD (a trace field or metadata.KEY) is VALUE, "
             "whatever --sample says (repeatable)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "sample", tuple(self.sample))
        object.__setattr__(self, "always", tuple(self.always))
        object.__setattr__(self, "_rates", parse_rates(self.sample))
        object.__setattr__(self, "_rules", tuple(Rule.parse(r) for r in self.always))

    @property
    def active(self) -> bool:
        """Whether any trace may be left out (rates given)."""
        return bool(self._rates)

    def rate(self, route: str) -> float:
        """The route's rate: its own, else `*`'s, else 1."""
        return self._rates.get(route, self._rates.get(ANY_ROUTE, 1.0))

    def decide(self, trace: Trace) -> str:
        """SAMPLED, ALWAYS or UNSAMPLED. A rule's match wins over the rate (weight 1), and
        without rates every trace is SAMPLED at rate 1."""
        if any(rule.matches(trace) for rule in self._rules):
            return ALWAYS
        return SAMPLED if score(trace.trace_id, self.sample_salt) < self.rate(trace.route) \
            else UNSAMPLED

    def weight(self, trace: Trace, decision: str) -> float:
        """The picked trace's inverse inclusion probability (1 for ALWAYS)."""
        return 1.0 if decision == ALWAYS else 1.0 / self.rate(trace.route)

    def summary(self) -> dict:
        """The sampling as recorded in summary.json (the salt as a hash: it picks the sample)."""
        salt = hashlib.sha256(self.sample_salt.encode()).hexdigest()[:16] if self.sample_salt \
            else None
        return {"rates": dict(self._rates), "salt_sha256": salt, "always": list(self.always)}


NO_SAMPLING = SamplingConfig()


class _DecideFn(GuardedDoFn):
    """Valid traces -> the picked ones (main, with their weight) and a Traffic record per
    trace and decision (tag `traffic`): `seen`, then `sampled`/`always`."""

    stage = "sample"

    def __init__(self, config: SamplingConfig):
        self._config = config
        # Made where the pipeline is built, as every progress counter (judges/runtime.py).
        self._counters = {k: runtime.counter(METRICS, f"traces_{k}")
                          for k in ("seen", SAMPLED, ALWAYS)}

    def process(self, trace: Trace):
        decision = self._config.decide(trace)
        self._counters["seen"].inc()
        yield beam.pvalue.TaggedOutput("traffic", Traffic(trace.route, trace.event_time_us, "seen"))
        if decision == UNSAMPLED:
            return
        self._counters[decision].inc()
        yield beam.pvalue.TaggedOutput("traffic",
                                       Traffic(trace.route, trace.event_time_us, decision))
        yield replace(trace, sample_weight=self._config.weight(trace, decision))


class SampleOutputs(NamedTuple):
    picked: beam.PCollection[Trace]
    traffic: beam.PCollection[Traffic]
    dead_letters: beam.PCollection[DeadLetter]


class Sample(beam.PTransform):
    """Valid traces -> (picked traces, Traffic records, dead letters)."""

    def __init__(self, config: SamplingConfig = NO_SAMPLING):
        super().__init__()
        self._config = config

    def expand(self, traces: beam.PCollection[Trace]) -> SampleOutputs:
        out = traces | "Decide" >> beam.ParDo(_DecideFn(self._config)).with_outputs(
            "traffic", "dead", main="picked")
        return SampleOutputs(out.picked, out.traffic, out.dead)
