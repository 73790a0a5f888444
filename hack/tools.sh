#!/usr/bin/env bash
# hack/tools.sh: install the system tools the test suite runs for real (idempotent, fast when present).
#   promtool (Debian package `prometheus`): `promtool check metrics|rules`;
#   the Prometheus server scraping the operator in e2e, compiled by hack/lib/build.sh: Debian's
#   server is built without Kubernetes service discovery, which the ServiceMonitor job needs;
#   zsh and fish (Debian packages): the completion scripts of `fabricfit completion` run in them.
# Debian versions are pinned; PROMETHEUS_DEB_VERSION, ZSH_DEB_VERSION and FISH_DEB_VERSION
# override them (e.g. on a newer release).
set -euo pipefail

PROMETHEUS_DEB_VERSION=${PROMETHEUS_DEB_VERSION:-2.42.0+ds-5+deb12u1}
ZSH_DEB_VERSION=${ZSH_DEB_VERSION:-5.9-4+b15}
FISH_DEB_VERSION=${FISH_DEB_VERSION:-3.6.0-3.1+deb12u1}

have_prometheus() {
  command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1
}

have_shells() {
  command -v zsh >/dev/null 2>&1 && command -v fish >/dev/null 2>&1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bash "$here/lib/build.sh" prometheus

if have_prometheus && have_shells; then
  exit 0
fi
packages=()
have_prometheus || packages+=("prometheus=${PROMETHEUS_DEB_VERSION}")
have_shells || packages+=("zsh=${ZSH_DEB_VERSION}" "fish=${FISH_DEB_VERSION}")
if ! command -v apt-get >/dev/null 2>&1; then
  echo "hack/tools.sh: no apt-get; install ${packages[*]} by hand" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
for package in "${packages[@]}"; do
  if ! apt-cache show "$package" >/dev/null 2>&1; then
    $sudo apt-get update -qq
    break
  fi
done
# --no-install-recommends: the exporters and the web UI assets are not needed; policy-rc.d keeps
# the package's own service from starting (the tests start Prometheus themselves on loopback).
policy=/usr/sbin/policy-rc.d
created_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  created_policy=1
fi
trap '[ -n "$created_policy" ] && $sudo rm -f "$policy"' EXIT
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
have_prometheus && have_shells
echo "hack/tools.sh: installed ${packages[*]}"
