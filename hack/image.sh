#!/usr/bin/env bash
# hack/image.sh (make image): build the operator image from the Dockerfile with buildah (no
# Docker daemon) and write it as an OCI archive, which `kind load image-archive`,
# `ctr images import` and `podman load` read:
#   dist/fabricfit-<version>.oci.tar   image docker.io/library/fabricfit:<version>, the chart's
#                                      default image (<version> from pyproject.toml)
# The archive is rebuilt only when its inputs (the Dockerfile, the build context .dockerignore
# lets through, the base image, these scripts) differ from its last build's, recorded in
# <archive>.inputs; otherwise this takes a fraction of a second.
#
# The base is the Dockerfile's PYTHON_IMAGE; FABRICFIT_IMAGE_BASE says where it comes from:
#   auto (default)  a base already in the store, else pull PYTHON_IMAGE, else bootstrap one
#   pull            pull PYTHON_IMAGE, or fail
#   debian          Debian bookworm + Python 3.11 from Debian's packages (hack/lib/image-base.sh),
#                   kept in the store under a digest of its recipe
#   <reference>     that image instead of PYTHON_IMAGE
# buildah's store: ${FABRICFIT_CACHE:-~/.cache/fabricfit}/containers (overlay, else vfs).
# The builder's pip index and CA (PIP_INDEX_URL, PIP_CERT, or pip's global.index-url and
# global.cert) reach pip in the build as build secrets, never as a layer.
# Needs root (buildah's chroot isolation, mmdebstrap); --skip-unless-root: without root, say so
# and succeed (make test). Installs buildah, mmdebstrap, umoci and runc with apt-get when
# missing, at the versions pinned below (override them on another Debian release).
set -euo pipefail

BUILDAH_DEB_VERSION=${BUILDAH_DEB_VERSION:-1.28.2+ds1-3+deb12u1+b3}
MMDEBSTRAP_DEB_VERSION=${MMDEBSTRAP_DEB_VERSION:-1.3.5-7}
# umoci and runc are not needed to build: the e2e test tests/e2e/test_image.py unpacks the
# archive with umoci and runs the operator with runc.
UMOCI_DEB_VERSION=${UMOCI_DEB_VERSION:-0.4.7+ds-3+b7}
RUNC_DEB_VERSION=${RUNC_DEB_VERSION:-1.1.5+ds1-1+deb12u1}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${FABRICFIT_CACHE:-$HOME/.cache/fabricfit}
store=$cache/containers
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml" | head -n 1)
image="docker.io/library/fabricfit:$version"
build_stage="localhost/fabricfit-build-stage:latest"
archive="$root/dist/fabricfit-$version.oci.tar"
started=$SECONDS

say() { printf '[image] %s\n' "$*" >&2; }
die() { printf 'hack/image.sh: %s\n' "$*" >&2; exit 1; }

# logged <what> <command>...: run quietly; on failure show the end of its output and stop.
logged() {
  local what=$1 log; shift
  log=$(mktemp "$work/log.XXXXXX")
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "$what failed (output above)"
  fi
}

case ${1:-} in
  "" | --skip-unless-root) ;;
  -h | --help) sed -n '2,/^set /s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) die "unknown argument '$1' (expected none, or --skip-unless-root)" ;;
esac
[ -n "$version" ] || die "no version = \"...\" line in $root/pyproject.toml"
if [ "$(id -u)" != 0 ]; then
  # make test: the image's e2e test skips without root too.
  if [ "${1:-}" = --skip-unless-root ]; then say "skipped: building the image needs root"; exit 0; fi
  die "run as root (e.g. sudo make image): buildah's chroot isolation and mmdebstrap need it"
fi

install_tools() {
  local want=() pkg cmd
  for pkg in buildah:buildah:$BUILDAH_DEB_VERSION mmdebstrap:mmdebstrap:$MMDEBSTRAP_DEB_VERSION \
             umoci:umoci:$UMOCI_DEB_VERSION runc:runc:$RUNC_DEB_VERSION; do
    cmd=${pkg%%:*}
    command -v "$cmd" >/dev/null 2>&1 || want+=("${pkg#*:}")
  done
  [ ${#want[@]} -gt 0 ] || return 0
  command -v apt-get >/dev/null 2>&1 ||
    die "missing ${want[*]%%:*} and no apt-get: install buildah, mmdebstrap, umoci and runc by hand"
  local specs=("${want[@]/:/=}")
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-cache show "${specs[@]}" >/dev/null 2>&1; then apt-get update -qq; fi
  apt-cache show "${specs[@]}" >/dev/null 2>&1 ||
    die "apt has not got ${specs[*]}; on another Debian release set BUILDAH_DEB_VERSION, MMDEBSTRAP_DEB_VERSION, UMOCI_DEB_VERSION, RUNC_DEB_VERSION to its versions"
  say "installing ${specs[*]}"
  apt-get install -y -qq --no-install-recommends "${specs[@]}" >/dev/null
}

# buildah on our own store. overlay where the kernel mounts it, else vfs (a full copy per layer).
choose_driver() {
  local driver=${FABRICFIT_STORAGE_DRIVER:-}
  if [ -z "$driver" ]; then
    driver=vfs
    if buildah --root "$store/overlay" --runroot "$store/run-overlay" --storage-driver overlay \
         images >/dev/null 2>&1; then driver=overlay; fi
  fi
  bah=(buildah --root "$store/$driver" --runroot "$store/run-$driver" --storage-driver "$driver")
  say "image store: $store/$driver"
}

has_image() { "${bah[@]}" inspect --type image "$1" >/dev/null 2>&1; }

# The Dockerfile's default base: one place says which Python image the operator runs on.
dockerfile_base() {
  sed -n 's/^ARG PYTHON_IMAGE=\(.*\)$/\1/p' "$root/Dockerfile" | head -n 1
}

# Sets `base` to the image reference to build on, pulled or bootstrapped as needed.
resolve_base() {
  local choice=${FABRICFIT_IMAGE_BASE:-auto} official
  official=$(dockerfile_base)
  [ -n "$official" ] || die "no ARG PYTHON_IMAGE=... line in $root/Dockerfile"
  # shellcheck source=hack/lib/image-base.sh
  source "$root/hack/lib/image-base.sh"
  case $choice in
    auto)
      if has_image "$official"; then base=$official
      elif has_image "$(debian_base_ref)"; then base=$(debian_base_ref)
      elif "${bah[@]}" pull --quiet "$official" >/dev/null 2>&1; then base=$official
      else
        say "cannot pull $official; bootstrapping a base from Debian's packages"
        bootstrap_debian_base; base=$(debian_base_ref)
      fi ;;
    pull) "${bah[@]}" pull --quiet "$official" >/dev/null || die "cannot pull $official"; base=$official ;;
    debian) has_image "$(debian_base_ref)" || bootstrap_debian_base; base=$(debian_base_ref) ;;
    *) has_image "$choice" || "${bah[@]}" pull --quiet "$choice" >/dev/null || die "cannot pull $choice"
       base=$choice ;;
  esac
  say "base: $base"
}

# The commit the image records for `fabricfit version` (-dirty with uncommitted changes to
# tracked files); empty outside a git checkout.
source_commit() {
  local head
  head=$(git -C "$root" rev-parse HEAD 2>/dev/null) || return 0
  if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    head="$head-dirty"
  fi
  printf '%s' "$head"
}

# Everything the archive depends on, as one digest: a changed input rebuilds it.
inputs_key() {
  local paths=() line
  while IFS= read -r line; do
    case $line in '!'*) paths+=("${line#!}") ;; esac
  done < "$root/.dockerignore"
  (
    printf '%s\n' "$image" "$base" "$commit" "$("${bah[@]}" inspect --type image --format '{{.FromImageID}}' "$base")"
    cd "$root"
    find "${paths[@]%/}" -type f ! -path '*/__pycache__/*' ! -path '*.egg-info/*' -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum
    sha256sum Dockerfile .dockerignore hack/image.sh hack/lib/image-base.sh
  ) | sha256sum | cut -c1-64
}

# --secret arguments carrying the builder's pip index and CA certificate, if any.
pip_secrets() {
  local cert=${PIP_CERT:-} index=${PIP_INDEX_URL:-} conf
  [ -n "$cert" ] || cert=$(python3 -m pip config get global.cert 2>/dev/null || true)
  [ -n "$index" ] || index=$(python3 -m pip config get global.index-url 2>/dev/null || true)
  secrets=()
  [ -n "$cert$index" ] || return 0
  conf="$work/pip.conf"
  printf '[global]\n' > "$conf"
  [ -z "$index" ] || printf 'index-url = %s\n' "$index" >> "$conf"
  if [ -n "$cert" ]; then
    [ -r "$cert" ] || die "pip's CA file $cert (PIP_CERT or pip config global.cert) is not readable"
    printf 'cert = /run/secrets/pip-ca.pem\n' >> "$conf"
    secrets+=(--secret "id=pip-ca.pem,src=$cert")
  fi
  secrets+=(--secret "id=pip.conf,src=$conf")
}

build() {
  pip_secrets
  local bud=(bud --isolation chroot --pull-never --layers --file "$root/Dockerfile"
             --build-arg "PYTHON_IMAGE=$base" --build-arg "VERSION=$version"
             --build-arg "FABRICFIT_COMMIT=$commit" "${secrets[@]}")
  say "building $image from the Dockerfile on $base"
  # chroot isolation: RUN needs no namespaces, cgroups or rlimits, so it works inside a
  # container or VM where an OCI runtime's defaults are refused. --layers keeps each step's
  # result; the build stage, tagged, keeps its dependencies' layer from being pruned below,
  # so a change to the operator's code reinstalls only the package.
  logged "buildah bud --target build" "${bah[@]}" "${bud[@]}" --target build --tag "$build_stage" "$root"
  logged "buildah bud" "${bah[@]}" "${bud[@]}" --tag "$image" "$root"
  prune
}

# Earlier builds' layers: images with no name that no named image builds on, until none is left
# (removing one can leave its parent so).
prune() {
  local ids
  while ids=$("${bah[@]}" images --all --quiet --no-trunc --filter dangling=true) && [ -n "$ids" ]; do
    # shellcheck disable=SC2086 # one image ID per word
    "${bah[@]}" rmi $ids >/dev/null 2>&1 || break
  done
}

# The OCI archive, named for both conventions: org.opencontainers.image.ref.name (podman,
# skopeo, umoci) and io.containerd.image.name (ctr and kind, which import with ctr).
export_archive() {
  local layout="$work/layout"
  "${bah[@]}" push --quiet "$image" "oci:$layout:$image" >/dev/null
  python3 - "$layout/index.json" "$image" <<'PY'
import json, sys
path, name = sys.argv[1], sys.argv[2]
index = json.load(open(path))
for manifest in index["manifests"]:
    manifest.setdefault("annotations", {})["io.containerd.image.name"] = name
json.dump(index, open(path, "w"), separators=(",", ":"))
PY
  mkdir -p "$(dirname "$archive")"
  tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -cf "$archive.tmp" oci-layout index.json blobs
  mv "$archive.tmp" "$archive"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fabricfit-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
install_tools
mkdir -p "$store"
# One build at a time per store (worktrees share the cache).
exec 9>"$store/lock"
flock 9
choose_driver
resolve_base
commit=$(source_commit)
key=$(inputs_key)
if [ -f "$archive" ] && [ "$(cat "$archive.inputs" 2>/dev/null)" = "$key" ]; then
  say "$archive is up to date ($image)"
  exit 0
fi
build
export_archive
printf '%s\n' "$key" > "$archive.inputs"
say "wrote $archive ($image, $(du -h "$archive" | cut -f1)) in $((SECONDS - started)) s"
