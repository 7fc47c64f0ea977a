#!/usr/bin/env bash
# Regenerates the op and pass docs from ODS and copies them into docs/.
# Usage: scripts/update-docs.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" mlir-doc
cp "$build/docs/AttnDialect/AttnOps.md" docs/AttnOps.md
cp "$build/docs/AttnDialect/AttnPasses.md" docs/AttnPasses.md
echo "docs/ updated from $build"
