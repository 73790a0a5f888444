#!/usr/bin/env bash
# hack/render-deploy.sh: render deploy/fabricfit.yaml (plain manifests for users without helm)
# from charts/fabricfit with its default values, release "fabricfit" in namespace "fabricfit".
#   hack/render-deploy.sh           write deploy/fabricfit.yaml
#   hack/render-deploy.sh --check   exit 1 when deploy/fabricfit.yaml differs from the chart
# Uses the helm binary `hack/cluster build` caches (version pinned in hack/versions.env), or $HELM.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=/dev/null
. "$root/hack/versions.env"
helm=${HELM:-${FABRICFIT_CACHE:-$HOME/.cache/fabricfit}/helm-${HELM_VERSION}/bin/helm}
if [ ! -x "$helm" ]; then
  echo "hack/render-deploy.sh: helm not found at $helm (run: hack/cluster build)" >&2
  exit 2
fi
out="$root/deploy/fabricfit.yaml"

render() {
  cat <<'HEADER'
# fabricfit operator: plain manifests rendered from charts/fabricfit (default values) by
# hack/render-deploy.sh. Do not edit; change the chart and re-render. Install:
#   kubectl apply -f crds/
#   kubectl apply -f deploy/fabricfit.yaml
---
apiVersion: v1
kind: Namespace
metadata:
  name: fabricfit
  labels:
    pod-security.kubernetes.io/enforce: restricted
HEADER
  # The CRD comes from crds/ and plain manifests have no hooks (kubectl would run the
  # uninstall Job at once): run `fabricfit release --all` by hand before deleting these.
  "$helm" template fabricfit "$root/charts/fabricfit" --namespace fabricfit \
    --kube-version "$KUBERNETES_VERSION" --set crds.install=false --set cleanup.enabled=false
}

case "${1:-}" in
  --check)
    tmp=$(mktemp)
    trap 'rm -f "$tmp"' EXIT
    render >"$tmp"
    if ! diff -u "$out" "$tmp"; then
      echo "hack/render-deploy.sh: deploy/fabricfit.yaml is out of date; run hack/render-deploy.sh" >&2
      exit 1
    fi ;;
  "")
    render >"$out" ;;
  *)
    echo "usage: hack/render-deploy.sh [--check]" >&2; exit 2 ;;
esac
