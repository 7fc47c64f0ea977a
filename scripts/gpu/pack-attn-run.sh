#!/usr/bin/env bash
# Packs build/bin/attn-run and attn-opt with the shared libraries they need
# (ours, MLIR, LLVM and their dependencies, not the C/C++ runtime) into
# gpu-tools/attn-run.tar.xz (git-ignored), so that a GPU machine without
# MLIR can run `attn-run --target=gpu` (compile and run in one tool) and
# fuzz/random_programs.py; its glibc must be at least as new as the build
# machine's.
# There: scripts/gpu/attn-run.sh, or by hand
#        tar -xJf gpu-tools/attn-run.tar.xz -C /tmp &&
#        LD_LIBRARY_PATH=/tmp/attn-run/lib /tmp/attn-run/bin/attn-run ...
set -euo pipefail
cd "$(dirname "$0")/../.."
stage=$(mktemp -d)/attn-run
mkdir -p "$stage/bin" "$stage/lib" gpu-tools
cp build/bin/attn-run build/bin/attn-opt "$stage/bin/"
ldd build/bin/attn-run build/bin/attn-opt | awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libgcc_s|libstdc\+\+|libdl|libpthread|librt|libz3|libxml2|libicu.*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# libLLVM links Z3 (the static analyzer's solver) and libxml2 (Windows
# manifests), which attn-run never calls: empty stand-ins with the same
# sonames (and libxml2's version nodes and one data symbol, which the loader
# binds eagerly) keep the package small (tens of MB). Calls are bound
# lazily, and none reaches them.
stubs=$(mktemp -d)
printf 'LIBXML2_2.4.30 { global: xmlFree; local: *; };\nLIBXML2_2.6.0 { } LIBXML2_2.4.30;\n' > "$stubs/xml.map"
echo 'void *xmlFree = 0;' > "$stubs/xml.c"
echo 'int attn_z3_stub;' > "$stubs/z3.c"
cc -shared -fPIC -o "$stage/lib/libxml2.so.2" "$stubs/xml.c" \
  -Wl,-soname,libxml2.so.2 -Wl,--version-script="$stubs/xml.map"
cc -shared -fPIC -o "$stage/lib/libz3.so.4" "$stubs/z3.c" -Wl,-soname,libz3.so.4
tar -C "$(dirname "$stage")" -cf - attn-run | xz -9 -T2 > gpu-tools/attn-run.tar.xz
ls -l gpu-tools/attn-run.tar.xz
