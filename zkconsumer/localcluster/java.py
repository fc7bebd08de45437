"""Finding a Java runtime, with a message that tells a user what to do when there is none."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from zkconsumer.errors import ZkConsumerError


class JavaNotFoundError(ZkConsumerError):
    """No `java` executable: the local ZooKeeper and Kafka cannot start."""


def find_java(environ: dict[str, str] | None = None) -> str:
    """Return the java executable to run the bundle with: $JAVA_HOME/bin/java first, then PATH."""
    env = os.environ if environ is None else environ
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java", path=env.get("PATH"))
    if found:
        return found
    raise JavaNotFoundError(
        "Java is needed to run the local ZooKeeper and Kafka but no `java` was found on PATH "
        "or in JAVA_HOME; install a JDK or JRE 8+ (for example `apt-get install "
        "openjdk-17-jre-headless`), or point ZKCONSUMER_TEST_ZOOKEEPER at an existing cluster"
    )
