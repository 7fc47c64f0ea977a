#!/usr/bin/env bash
# Regenerates the op and pass docs from ODS and copies them into docs/.
# Usage: scripts/update-docs.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" mlir-doc
generated="$build/docs/AttnDialect"
cp "$generated/AttnOps.md" docs/AttnOps.md
for stage in Transforms Conversion GPU NVVM KernelBundle; do
  cp "$generated/Attn${stage}Passes.md" "docs/passes/$stage.md"
done
echo "docs/ updated from $build"
