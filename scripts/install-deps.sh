#!/usr/bin/env bash
# Installs the Debian 12 packages Kiln builds against. Idempotent: only what is
# missing is installed, so the README commands can call it every time.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev libqscintilla2-qt6-dev
  libgraphviz-dev
  llvm-19-dev libzstd-dev zlib1g-dev libedit-dev libxml2-dev libffi-dev
  clang-19 libclang-rt-19-dev
  libopenblas-dev libdnnl-dev libtbb-dev libcli11-dev nlohmann-json3-dev
  libsqlite3-dev libicu-dev libre2-dev llvm-19-tools libmimalloc-dev nettle-dev libzip-dev libkainjow-mustache-dev
  xvfb xauth
  python3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
