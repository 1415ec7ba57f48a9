"""A Hive metastore that several JVMs share, for the `s3` group's Parquet tables by name: Spark's
embedded Hive 2.3 client in each JVM, over one Derby network server on loopback.

Why a server: the kill trials start CLI processes that must see the test session's tables, and
embedded Derby admits one JVM (a team's metastore is a server too). Why Derby: DataNucleus
creates the metastore's schema on it when the first client connects, as on embedded Derby. On
PostgreSQL the same schema creation hung here: DataNucleus adds a foreign key on one connection
while another holds the table open in a transaction ("ALTER TABLE waiting", seen with Spark 4.1's
Hive 2.3 client), and Hive's own schema scripts are not in any jar. The server runs the Derby
of PySpark's own jars, plus its network server jar; clients take the matching client driver.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def pyspark_derby() -> tuple[str, list[Path]]:
    """The Derby version PySpark ships, and its jars (the engine and its tools)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    engine = sorted(jars.glob("derby-*.jar"))
    if not engine:
        raise RuntimeError(f"no Derby jar in {jars}")
    version = engine[-1].stem.removeprefix("derby-")
    return version, [jars / f"{name}-{version}.jar" for name in ("derby", "derbyshared", "derbytools")]


@dataclass
class DerbyServer:
    """One running Derby network server; `url` is the metastore database's JDBC URL."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @classmethod
    def start(cls, home: Path, server_jar: Path, timeout: float = 60.0) -> DerbyServer:
        _, jars = pyspark_derby()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        classpath = os.pathsep.join(str(j) for j in [*jars, server_jar])
        cmd = ["java", f"-Dderby.system.home={home}", "-cp", classpath, "org.apache.derby.drda.NetworkServerControl"]
        cmd += ["start", "-h", "127.0.0.1", "-p", str(port), "-noSecurityManager"]
        log = home / "derby-server.log"
        with log.open("wb") as out:
            process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        server = cls(process, port, log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
            time.sleep(0.2)
        server.stop()
        raise RuntimeError(f"the Derby network server did not start: {log.read_text(errors='replace')[-2000:]}")

    def hive_conf(self, client_jar: Path) -> dict[str, str]:
        """Settings that give a JVM's embedded Hive client this metastore. The client driver
        goes on the JVM's own class path: Hive's classes are there, and `DriverManager` hands
        them no driver that a loader of `spark.jars` holds ("No suitable driver")."""
        return {
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby://127.0.0.1:{self.port}/metastore;create=true",
            "spark.hadoop.javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.ClientDriver",
            "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
            "spark.hadoop.hive.metastore.schema.verification": "false",
            "spark.driver.extraClassPath": str(client_jar),
        }

    def stop(self, deadline: float = 10.0) -> None:
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
