#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the tools need,
# then the Python packages of the bindings (nanobind, numpy, pytest, from
# PyPI) for the first `python3` on PATH, the one the build binds to.
# Idempotent: packages already present are left alone. Runs as root or
# through sudo.
set -euo pipefail

packages=(
  cmake ninja-build g++ git
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools lld-22
  clang-22 libclang-rt-22-dev
  libgtest-dev
  python3 python3-dev python3-pip
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

python=$(command -v python3)
if "$python" -c "import nanobind, numpy, pytest" 2>/dev/null; then
  echo "install-deps: nanobind, numpy and pytest present for $python"
else
  echo "install-deps: pip-installing nanobind, numpy and pytest for $python"
  pip=("$python" -m pip install -q --disable-pip-version-check nanobind numpy pytest)
  # Debian's own python3 is externally managed (PEP 668): say so explicitly.
  "${pip[@]}" 2>/dev/null || $SUDO "${pip[@]}" --break-system-packages
fi
