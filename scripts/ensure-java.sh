#!/usr/bin/env bash
# Install Debian's Java 17 runtime for the Spark engine (rageval evaluate --engine spark and its
# tests) when `java` is missing. Spark 4 needs Java 17 or later.
set -euo pipefail
if command -v java >/dev/null 2>&1; then exit 0; fi
echo "java is missing: installing Debian's openjdk-17-jre-headless (apt-get)" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "java could not be installed: no apt-get here; install a Java 17+ runtime and put \`java\` on the PATH (the Spark engine needs it)" >&2
    exit 1
fi
if ! { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }; then
    echo "java could not be installed with apt-get (no root, no sudo, or no package source): install a Java 17+ runtime and put \`java\` on the PATH (the Spark engine needs it)" >&2
    exit 1
fi
command -v java >/dev/null 2>&1 || { echo "openjdk-17-jre-headless was installed but \`java\` is not on the PATH" >&2; exit 1; }
