#!/bin/sh
# Creates the Python venv with Bumble (an independent Bluetooth host stack with virtual
# controllers) that the interop tests run against: .build/bumble-venv, unless it is there
# already with the pinned version. Prints the venv's python path on success.
# Needs python3 (3.11 or newer) with the venv module (Debian: python3-venv) and PyPI.
set -eu
version=0.0.236
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${BUMBLE_VENV:-$root/.build/bumble-venv}
python=$venv/bin/python3
if [ -x "$python" ] && "$python" -c "import importlib.metadata as m, sys; sys.exit(m.version('bumble') != '$version')" 2>/dev/null; then
  echo "$python"
  exit 0
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" >&2
"$python" -m pip install --quiet --disable-pip-version-check --no-cache-dir "bumble==$version" >&2
echo "$python"
