"""`audit --input-format phoenix-api` in the launcher: Phoenix checked before anything is
written, then its spans fetched into the staging folder, which the audit reads as OpenInference
span JSON (`sources/phoenix_api.py`; the watermark: `sources/watermark.py`)."""

from __future__ import annotations

import dataclasses
import logging

from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.run.config import AuditConfig
from rt4chart.pipeline.sources import phoenix_api, watermark
from rt4chart.pipeline.sources.phoenix_client import PhoenixClient
from rt4chart.transforms.common.span_mapping import SERVICE_NAME

logger = logging.getLogger(__name__)

SPOOL_FORMAT = "openinference"


def check_source(config: AuditConfig, out: str) -> AuditConfig:
    """`config` with the watermark to start from (when --watermark and an earlier run has
    one); unchanged for other inputs.

    Raises:
        ValueError: Phoenix does not answer or has no such project; the watermark in `out` is
            unreadable or of another project.
    """
    source = config.phoenix
    if source is None:
        return config
    with PhoenixClient(source.target) as client:
        phoenix_api.check(source.target, client)
    after = None
    if source.watermark:
        after = watermark.previous(out, source.target.base_url, source.target.project)
        logger.info("phoenix-api --watermark: %s", f"starting at {after.start_time} (the last "
                    f"run's newest root span)" if after else
                    f"no watermark in {out} yet: starting at {source.since or 'the beginning'}")
    if config.spans.route_attribute == SERVICE_NAME:
        logger.info("phoenix-api: Phoenix keeps no resource attributes, so service.name (the "
                    "route) is the project, %r; --route-attribute reads a span attribute "
                    "instead (e.g. metadata.route)", source.target.project)
    return dataclasses.replace(config, phoenix=dataclasses.replace(source, after=after))


def stage_input(config: AuditConfig, staging: str) -> AuditConfig:
    """Fetch the spans into `staging` and return the config that audits that file; other
    inputs: `config` unchanged.

    Raises:
        PhoenixReadError: a request failed after its retries (nothing is audited).
    """
    source = config.phoenix
    if source is None:
        return config
    with PhoenixClient(source.target) as client:
        phoenix_api.read_into(source, client, staging)
    return dataclasses.replace(config, inputs=(FileSystems.join(staging, watermark.SPANS_FILE),),
                               input_format=SPOOL_FORMAT, phoenix=None)
