# hack/lib/image-base.sh, sourced by hack/image.sh: a Python 3.11 base image bootstrapped from
# Debian's packages, for machines that cannot pull the Dockerfile's PYTHON_IMAGE (the official
# python:3.11-slim-bookworm). The same Debian release and Python minor version, a comparable
# footprint: Debian's essential set plus python3.11, its venv module, passwd (groupadd, useradd)
# and ca-certificates, without documentation or translations. mmdebstrap writes the root
# filesystem; buildah commits it as one layer, tagged with a digest of the recipe
# (localhost/fabricfit-base:<digest>), so a changed recipe or pin builds a new base.
# Expects from hack/image.sh: bah (buildah argv on the store), say, die, logged, work.

# Debian's python3.11 in bookworm (pinned: the Python patch release the operator runs on).
PYTHON_DEB_VERSION=${PYTHON_DEB_VERSION:-3.11.2-6+deb12u9}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

debian_base_recipe() {
  recipe=(
    --variant=essential
    # merged /usr by directory symlinks, as Debian's own images have (without it apt picks
    # usrmerge, which pulls in perl: about 50 MB more)
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --include="python3.11=$PYTHON_DEB_VERSION,python3.11-venv=$PYTHON_DEB_VERSION,passwd,ca-certificates"
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    # an image has no device nodes: the runtime mounts /dev
    --skip=output/dev
    bookworm
  )
  sources=(
    "deb $DEBIAN_MIRROR bookworm main"
    "deb $DEBIAN_MIRROR bookworm-updates main"
    "deb $DEBIAN_SECURITY_MIRROR bookworm-security main"
  )
  config=(
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --env LANG=C.UTF-8
    --cmd '["python3"]'
    --label "org.opencontainers.image.description=Debian bookworm with python3.11 $PYTHON_DEB_VERSION (hack/lib/image-base.sh)"
  )
}

# The base's reference: its recipe's digest. The mirrors are not part of it (any mirror serves
# the same pinned python3.11; the other packages are bookworm's current ones).
debian_base_ref() {
  local recipe sources config
  debian_base_recipe
  printf 'localhost/fabricfit-base:%s\n' \
    "$(printf '%s\n' "${recipe[@]}" "${config[@]}" | sha256sum | cut -c1-16)"
}

bootstrap_debian_base() {
  local recipe sources config ref rootfs ctr mnt old started=$SECONDS
  command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap is missing (hack/image.sh installs it with apt-get)"
  debian_base_recipe
  ref=$(debian_base_ref)
  rootfs="$work/rootfs.tar"
  say "mmdebstrap: Debian bookworm, python3.11 $PYTHON_DEB_VERSION (about a minute)"
  logged "mmdebstrap (if python3.11 $PYTHON_DEB_VERSION is gone from the mirror, set PYTHON_DEB_VERSION to the version it has: apt-cache policy python3.11 on a bookworm host)" \
    mmdebstrap "${recipe[@]}" "$rootfs" "${sources[@]}"
  ctr=$("${bah[@]}" from scratch)
  mnt=$("${bah[@]}" mount "$ctr")
  tar -C "$mnt" -xf "$rootfs" || { "${bah[@]}" rm "$ctr" >/dev/null; die "unpacking the base failed"; }
  rm -f "$rootfs"
  "${bah[@]}" umount "$ctr" >/dev/null
  "${bah[@]}" config "${config[@]}" "$ctr"
  "${bah[@]}" commit --quiet --rm "$ctr" "$ref" >/dev/null
  # Earlier recipes' bases are no longer reachable by any key.
  for old in $("${bah[@]}" images --format '{{.Name}}:{{.Tag}}' | grep '^localhost/fabricfit-base:' || true); do
    [ "$old" = "$ref" ] || "${bah[@]}" rmi "$old" >/dev/null 2>&1 || true
  done
  say "bootstrapped $ref in $((SECONDS - started)) s"
}
