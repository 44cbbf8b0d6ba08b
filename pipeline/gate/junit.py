"""The gate's checks as JUnit XML (`rt4chart gate --junit FILE`), the report format GitHub
Actions (test-reporter actions), GitLab (`artifacts:reports:junit`) and Jenkins show: one
test suite, one test case per route and limit, a `<failure>` for each limit not held, an
`<error>` for each reason the gate refused the run."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from rt4chart.pipeline.gate.checks import Check

SUITE = "rt4chart gate"
# Characters XML 1.0 cannot hold even escaped; route names and claims are untrusted text.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` with what XML cannot hold written as \\uXXXX (a route or claim may hold it),
    and its line breaks as \\n (an XML reader turns \\r\\n and \\r into \\n anyway)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def junit_tree(checks: Sequence[Check], diff: str | None = None) -> ET.ElementTree:
    """The XML document: classname `rt4chart gate.ROUTE`, name the limit; a failure's
    message is the check's figures, its text the changed claims (and where the diff is). A
    refusal (the run or its baseline cannot be gated: route `*`, name "run state", "baseline
    judge", ...) is an `<error>` of type GateRefused, its message the reason."""
    failures = sum(not c.ok and not c.refused for c in checks)
    errors = sum(c.refused for c in checks)
    suites = ET.Element("testsuites", name=SUITE, tests=str(len(checks)),
                        failures=str(failures), errors=str(errors))
    suite = ET.SubElement(suites, "testsuite", name=SUITE, tests=str(len(checks)),
                          failures=str(failures), errors=str(errors), skipped="0")
    for check in checks:
        case = ET.SubElement(suite, "testcase", classname=xml_text(f"{SUITE}.{check.route}"),
                             name=check.limit)
        if check.ok:
            ET.SubElement(case, "system-out").text = xml_text(check.detail)
            continue
        failure = ET.SubElement(case, "error" if check.refused else "failure",
                                message=xml_text(check.detail),
                                type="GateRefused" if check.refused else "GateLimit")
        parts = [check.detail, check.text] + ([f"claim-level diff: {diff}"] if diff else [])
        failure.text = xml_text("\n".join(p for p in parts if p))
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_junit(path: str, checks: Sequence[Check], diff: str | None = None) -> None:
    """Write the JUnit XML file (its folder made if need be)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    junit_tree(checks, diff).write(path, encoding="utf-8", xml_declaration=True)
