"""Why a first start could not fetch the format runtimes, read from Ivy's own output.

When Spark's Ivy fails, PySpark only says "Java gateway process exited before sending its port
number": the cause is in what the JVM printed (now its log file, `jvm_output`). Every failure
ends in the same "unresolved dependency ... not found" or "download failed" line, whatever
happened, so the cause is read from the lines before it, most specific first. Blaming the
network for everything sent users who had a network, but two starts at once, off to look for
a proxy.
"""

from __future__ import annotations

import re

# Ivy downloads each pom and jar to `<file>.part` and renames it into place; another process
# downloading the same file into the same folder renames or deletes that part file first. What
# the loser prints depends on the moment (the fixtures in tests/fixtures/ivy_failures are real).
_CONCURRENT = re.compile(
    r"impossible to move part file to definitive one"
    r"|impossible to put metadata file in cache"
    r"|\.part \(No such file or directory\)"
)
# A request that never reached the repository: no DNS, no route, refused, timed out, TLS.
_NETWORK = re.compile(
    r"Server access error at url \S+ \((?P<exc>[\w.]+Exception[^)]*)\)"
    r"|Host (?P<host>\S+) not found\."
    r"|(?P<other>Network is unreachable|No route to host|connect timed out)"
)
_DENIED = re.compile(r"(Permission denied|AccessDeniedException)")
# Ivy's own summary: a module no repository has, or an artifact whose download failed.
_UNRESOLVED = re.compile(r"unresolved dependency: ([^;\s]+)#([^;\s]+);([^:\s]+): not found")
_DOWNLOAD_FAILED = re.compile(r"download failed: ([^#\s\]]+)#([^;\s]+);([^!\s\]]+)")

NETWORK_HINT = "without network access, put the jars in a folder and set spark.jars_dir"


def ivy_failure_cause(text: str, ivy: str) -> str | None:
    """The cause of a failed resolution in one clause, from Ivy's output `text` (the JVM's log)
    into the Ivy folder `ivy`; None if the text shows no resolution failure (Spark failed for
    another reason, quoted as it is). A failed download is named before the network: Spark's
    default chain also asks repositories that may not resolve here (spark-packages), which
    the failure did not depend on."""
    if _CONCURRENT.search(text):
        return (
            f"another process was downloading the same jars into {ivy} at the same time "
            "(Ivy's cache takes no lock of its own); run the command again"
        )
    if m := _DENIED.search(text):
        return f"the Ivy folder {ivy} cannot be written ({m.group(1)}); set spark.jars.ivy to a writable folder"
    if m := _DOWNLOAD_FAILED.search(text):
        return (
            f"the download of {m.group(1)}:{m.group(2)}:{m.group(3)} failed (a partial file, or a pom "
            f"without its jar in a repository such as ~/.m2); remove {ivy}/cache/{m.group(1)} and run again"
        )
    if m := _NETWORK.search(text):
        why = m.group("exc") or (f"host {m.group('host')} not found" if m.group("host") else m.group("other"))
        return f"the Maven repository could not be reached ({why}); {NETWORK_HINT}"
    if m := _UNRESOLVED.search(text):
        return (
            f"Maven Central has no {m.group(1)}:{m.group(2)}:{m.group(3)} "
            "(check the coordinates in spark.conf spark.jars.packages, or spark.jars.repositories)"
        )
    return None
