"""JUnit XML: one test case per partition and check, so CI systems show failures natively.

A `fail` check is a <failure>; a `warn` check passes but says so in <system-out> (JUnit has no
warning state, and a warning must not break a CI gate that only fails on failures).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from shadow_backfill.document import ReportDoc
from shadow_backfill.report.model import check_id
from shadow_backfill.vocabulary import CheckStatus

# ElementTree escapes <, > and & but writes control characters as they are, and XML 1.0 has no
# way to carry them: one in a data value would make the whole file unreadable to CI.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def x(value: Any) -> str:
    """Data as text XML 1.0 can hold (characters it cannot become U+FFFD)."""
    return _NOT_XML.sub("\ufffd", str(value))


def render_junit(doc: ReportDoc) -> str:
    cases = [(p, c) for p in doc.partitions for c in p.checks]
    failures = sum(1 for _, c in cases if c.status == CheckStatus.FAIL)
    skipped = sum(1 for _, c in cases if c.status == CheckStatus.SKIPPED)
    suites = ET.Element(
        "testsuites", name="shadow-backfill", tests=str(len(cases)), failures=str(failures), skipped=str(skipped)
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=x(f"{doc.shadow_table} vs {doc.live_table}"),
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
        timestamp=x(doc.generated_at),
    )
    for p, c in cases:
        case = ET.SubElement(suite, "testcase", classname=x(f"partition.{p.partition}"), name=x(check_id(c)))
        if c.status == CheckStatus.FAIL:
            failure = ET.SubElement(case, "failure", message=x(c.message), type=x(c.name))
            failure.text = x(f"observed {c.observed!r}; threshold {c.threshold}")
        elif c.status == CheckStatus.SKIPPED:  # not judged (too few rows): CI shows it as skipped
            ET.SubElement(case, "skipped", message=x(c.message))
        elif c.status == CheckStatus.WARN:
            ET.SubElement(case, "system-out").text = x(f"WARN: {c.message}")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
