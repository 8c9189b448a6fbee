#!/usr/bin/env bash
# Installs what band-smoke needs (apt on Debian/Ubuntu, brew on macOS),
# then configures and builds into build/. Safe to run again.
#
#   scripts/bootstrap.sh               install + build
#   scripts/bootstrap.sh --test        ... then run the offline tests (ctest -L offline,
#                                      as many at once as there are cores: they mostly wait)
#   scripts/bootstrap.sh --rehearse    ... then run the whole smoke offline (band-smoke rehearse)
#   scripts/bootstrap.sh --no-install  build only
#
# Extra CMake options pass through SMOKE_CMAKE_ARGS, e.g.
#   SMOKE_CMAKE_ARGS="-DSMOKE_WERROR=ON" scripts/bootstrap.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${SMOKE_BUILD_DIR:-$root/build}
install=1 then=""
for arg in "$@"; do
  case $arg in
    --no-install) install=0 ;;
    --test|--rehearse) then=$arg ;;
    *) echo "usage: scripts/bootstrap.sh [--no-install] [--test|--rehearse]" >&2; exit 2 ;;
  esac
done

apt_packages=(build-essential cmake pkg-config libcunit1-dev libcurl4-openssl-dev
              libcjson-dev libwebsockets-dev libssl-dev libxml2-utils python3-junitparser)
brew_packages=(cmake pkg-config cunit curl cjson libwebsockets openssl@3 libxml2)

install_deps() {
  if command -v apt-get >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${apt_packages[@]}"
  elif command -v brew >/dev/null 2>&1; then
    brew install "${brew_packages[@]}"
    # junitparser (ctest junit.consumers' second JUnit reader) has no formula.
    python3 -m pip install --user --quiet junitparser ||
      echo "bootstrap: install the Python package junitparser for ctest junit.consumers" >&2
    # Homebrew's keg-only OpenSSL and libxml2 must be visible to pkg-config.
    export PKG_CONFIG_PATH="$(brew --prefix openssl@3)/lib/pkgconfig:$(brew --prefix libxml2)/lib/pkgconfig:${PKG_CONFIG_PATH:-}"
  else
    echo "bootstrap: neither apt-get nor brew found; install: ${apt_packages[*]}" >&2
    exit 1
  fi
}

[ "$install" = 1 ] && install_deps
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" ${SMOKE_CMAKE_ARGS:-}
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
cmake --build "$build" -j "$cores"
echo "bootstrap: built into $build"
case $then in
  --test)     exec ctest --test-dir "$build" -L offline --output-on-failure -j "$cores" ;;
  --rehearse) exec "$build/band-smoke" rehearse ;;
esac
echo "  offline tests:   ctest --test-dir $build -L offline --output-on-failure"
echo "  the offline run: $build/band-smoke rehearse"
echo "  staging phases:  ctest --test-dir $build -R phase --output-on-failure"
