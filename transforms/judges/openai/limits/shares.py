"""One meaning for `--rpm`/`--tpm`: the whole job's limits, held in one of two ways.

`--rate-limiter static` (the default) gives every worker process a fixed share: the totals
divided by the number of worker processes the job can ever have (transforms/judges/limits/
workers.py counts them), so that all of them together can never exceed the totals; an explicit
`--judge-option rate_share=N` wins (N = the job's worker processes).

`--rate-limiter envoy` asks one Envoy rate-limit service (`--rate-limit-service HOST:PORT`,
deployed by `infra/ratelimit/`) before each call, so the totals hold however many workers run;
see :mod:`.envoy`. Either way the limits are logged when the job starts.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.judge_options import LIMITERS
from rt4chart.transforms.judges.limits.workers import worker_processes
from rt4chart.transforms.judges.openai.config import judge_options
from rt4chart.transforms.judges.openai.limits.rate import RateLimiter

logger = logging.getLogger("rt4chart")

def limiter_factory(config: Any) -> Callable[[], RateLimiter]:
    """What builds the openai judge's limiter for its config (validated now, built in the
    worker's event loop): the process's share of the totals, or the job-wide Envoy limiter.
    ValueError on a bad setting."""
    if config.rate_limiter not in LIMITERS:
        raise ValueError(f"rate_limiter must be {' or '.join(LIMITERS)}, "
                         f"got {config.rate_limiter!r}")
    if config.rate_limiter == "static":
        return functools.partial(RateLimiter, config.rpm / config.rate_share,
                                 config.tpm / config.rate_share)
    if not config.rate_limit_service:
        raise ValueError("--rate-limiter envoy needs --rate-limit-service HOST:PORT")
    from rt4chart.transforms.judges.openai.limits.envoy import EnvoyLimiter, EnvoySettings

    settings = EnvoySettings(config.rate_limit_service, config.rate_limit_domain)
    return functools.partial(EnvoyLimiter, config.rpm, config.tpm, settings,
                             config.max_concurrency)


def _num(value: float) -> str:
    return f"{round(value, 1):.12g}"


def share_rate_limits(spec: JudgeSpec, options: PipelineOptions) -> JudgeSpec:
    """An openai judge's spec with its static share of `--rpm`/`--tpm` (`rate_share`: the
    job's worker processes), and the limits logged; with the envoy limiter, as it is.
    ValueError when the share cannot be bounded."""
    given = dict(spec.options)
    config, _ = judge_options(given)
    job = f"{_num(config.rpm)} rpm / {_num(config.tpm)} tpm for the job"
    if config.rate_limiter == "envoy":
        logger.info("rate limits: %s, held by the Envoy rate-limit service at %s (domain %s)",
                    job, config.rate_limit_service, config.rate_limit_domain)
        return spec
    if "rate_share" in given:
        processes, how = config.rate_share, "rate_share as given"
    else:
        processes, how = worker_processes(options)
    logger.info("rate limits: %s, %s rpm / %s tpm per process (%d processes: %s)", job,
                _num(config.rpm / processes), _num(config.tpm / processes), processes, how)
    if processes <= 1 or "rate_share" in given:
        return spec
    return JudgeSpec.of(spec.name, {**given, "rate_share": str(processes)})
