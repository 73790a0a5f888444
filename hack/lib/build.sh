#!/usr/bin/env bash
# Builds the control-plane binaries from Go modules at the versions pinned in hack/versions.env
# and caches them under $FABRICFIT_CACHE/<component>-<version>/bin. A component whose binaries
# are already cached is skipped, so a second run costs seconds.
#   build.sh                      etcd, kwok, helm, kubernetes
#   build.sh prometheus           the same, plus the Prometheus server the e2e scrape runs (hack/tools.sh)
#   build.sh kueue jobset lws trainer   the same, plus these optional controllers
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=/dev/null
source "$here/versions.env"
cache=${FABRICFIT_CACHE:-$HOME/.cache/fabricfit}
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=0

say() { printf '[build] %s\n' "$*" >&2; }
die() { printf 'hack/cluster build: %s\n' "$*" >&2; exit 1; }

need_go() {
  command -v go >/dev/null 2>&1 || die "no Go toolchain on PATH (Go 1.26+ is needed to build the control plane: kwok v0.8.0 and helm v3.22.0 require it)"
}

have() { # have <dir> <binary>...
  local dir=$1; shift
  for b in "$@"; do [ -x "$dir/bin/$b" ] || return 1; done
}

finish() { # finish <tmpdir> <dir>: atomically publish a finished build
  rm -rf "$2"; mv "$1" "$2"
}

build_kubernetes() {
  local v=$KUBERNETES_VERSION dir="$cache/kubernetes-$KUBERNETES_VERSION"
  if have "$dir" kube-apiserver kube-controller-manager kube-scheduler kubectl; then
    say "kubernetes $v: cached"; return; fi
  need_go
  local minor=${v#v1.}; minor=${minor%%.*}
  local staging="v0.${v#v1.}"
  local src="$cache/src/kubernetes-$v" tmp="$dir.tmp"
  rm -rf "$src" "$tmp"; mkdir -p "$src" "$tmp/bin"
  say "kubernetes $v: resolving modules (staging $staging)"
  (
    cd "$src"
    go mod init local.fabricfit/k8sbin >/dev/null 2>&1
    go mod edit -require="k8s.io/kubernetes@$v"
    # Every k8s.io/* module that k8s.io/kubernetes requires at v0.0.0 is a staging module that
    # its own go.mod replaces with a local path; re-pin each to the published tag instead.
    gomod=$(go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -f "$gomod" ] || die "could not download k8s.io/kubernetes@$v"
    for m in $(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod" | sort -u); do
      go mod edit -replace="$m=$m@$staging"
    done
    cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
    go mod tidy >/dev/null 2>"$src/tidy.log" || { cat "$src/tidy.log" >&2; die "go mod tidy failed for kubernetes $v"; }
    local ld="-s -w -X k8s.io/component-base/version.gitVersion=$v"
    ld="$ld -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
    ld="$ld -X k8s.io/component-base/version.gitTreeState=clean"
    ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$v"
    ld="$ld -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
    say "kubernetes $v: compiling kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (10-25 min cold)"
    go build -trimpath -ldflags "$ld" -o "$tmp/bin/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  )
  finish "$tmp" "$dir"
  say "kubernetes $v: done"
}

build_etcd() {
  local v=$ETCD_VERSION dir="$cache/etcd-$ETCD_VERSION"
  if have "$dir" etcd; then say "etcd $v: cached"; return; fi
  need_go
  local src="$cache/src/etcd-$v" tmp="$dir.tmp"
  rm -rf "$src" "$tmp"; mkdir -p "$src" "$tmp/bin"
  say "etcd $v: compiling"
  (
    cd "$src"
    go mod init local.fabricfit/etcdbin >/dev/null 2>&1
    go mod edit -require="go.etcd.io/etcd/server/v3@$v"
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    go mod tidy >/dev/null 2>"$src/tidy.log" || { cat "$src/tidy.log" >&2; die "go mod tidy failed for etcd $v"; }
    go build -trimpath -ldflags "-s -w" -o "$tmp/bin/etcd" go.etcd.io/etcd/server/v3
  )
  finish "$tmp" "$dir"
  say "etcd $v: done"
}

build_kwok() {
  local v=$KWOK_VERSION dir="$cache/kwok-$KWOK_VERSION"
  if have "$dir" kwok && [ -f "$dir/stages.yaml" ]; then say "kwok $v: cached"; return; fi
  need_go
  local tmp="$dir.tmp"
  rm -rf "$tmp"; mkdir -p "$tmp/bin"
  say "kwok $v: compiling"
  GOBIN="$tmp/bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$v"
  # kwok >= 0.8 ships no built-in stages: assemble the "fast" node and pod stages from the
  # module source (they are not copied into this repository). pod-complete is left out on
  # purpose: it turns Job-owned pods Succeeded at once, and training pods must keep running.
  local modsrc
  modsrc=$(go mod download -json "sigs.k8s.io/kwok@$v" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$modsrc/kustomize/stage" ] || die "kwok $v module has no kustomize/stage directory"
  {
    for f in "$modsrc/kustomize/stage/node/fast/node-initialize.yaml" \
             "$modsrc/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
             "$modsrc/kustomize/stage/pod/fast/pod-ready.yaml" \
             "$modsrc/kustomize/stage/pod/fast/pod-delete.yaml"; do
      [ -f "$f" ] || die "kwok $v: missing stage file $f"
      printf -- '---\n'; grep -v '^---$' "$f"
    done
  } > "$tmp/stages.yaml"
  finish "$tmp" "$dir"
  say "kwok $v: done"
}

# Helm's release builds set the Kubernetes version `helm template` and `helm lint` assume (no
# cluster to ask) to that of the client-go they compile against (helm.sh/helm/v3@v3.22.0
# Makefile:62-69); without those ldflags it is 1.20, older than the chart's kubeVersion.
# kube-version records it: a helm cached without it is rebuilt.
build_helm() {
  local v=$HELM_VERSION dir="$cache/helm-$HELM_VERSION"
  if have "$dir" helm && [ -s "$dir/kube-version" ]; then say "helm $v: cached"; return; fi
  need_go
  local tmp="$dir.tmp" major=${v%%.*} gomod client_go kube_major kube_minor pkg
  rm -rf "$tmp"; mkdir -p "$tmp/bin"
  gomod=$(go mod download -json "helm.sh/helm/$major@$v" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  client_go=$(awk '$1 == "k8s.io/client-go" {print $2}' "$gomod")
  [[ $client_go =~ ^v([0-9]+)\.([0-9]+)\. ]] || die "helm $v: no k8s.io/client-go version in $gomod"
  kube_major=$((BASH_REMATCH[1] + 1)) kube_minor=${BASH_REMATCH[2]}
  local ldflags="-s -w -X helm.sh/helm/$major/internal/version.version=$v"
  for pkg in pkg/chartutil pkg/lint/rules; do
    ldflags+=" -X helm.sh/helm/$major/$pkg.k8sVersionMajor=$kube_major"
    ldflags+=" -X helm.sh/helm/$major/$pkg.k8sVersionMinor=$kube_minor"
  done
  say "helm $v: compiling (default Kubernetes version $kube_major.$kube_minor)"
  GOBIN="$tmp/bin" go install -trimpath -ldflags "$ldflags" "helm.sh/helm/$major/cmd/helm@$v"
  echo "$kube_major.$kube_minor" > "$tmp/kube-version"
  finish "$tmp" "$dir"
  say "helm $v: done"
}

build_prometheus() {
  # Prometheus tags its Go module v0.<minor>.<patch> for release v2.<minor>.<patch>. Built inside
  # the module source with its own go.mod/go.sum; the web UI assets are not embedded (the tests
  # use the HTTP API only). Debian's package lacks kubernetes_sd, which the e2e scrape needs.
  local v=$PROMETHEUS_VERSION dir="$cache/prometheus-$PROMETHEUS_VERSION"
  if have "$dir" prometheus; then say "prometheus $v: cached"; return; fi
  need_go
  local module=github.com/prometheus/prometheus modv="v0.${PROMETHEUS_VERSION#v2.}"
  local tmp="$dir.tmp" started=$SECONDS modsrc
  rm -rf "$tmp"; mkdir -p "$tmp/bin"
  modsrc=$(go mod download -json "$module@$modv" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -f "$modsrc/go.mod" ] || die "prometheus $v: could not download module $module@$modv"
  say "prometheus $v: compiling"
  ( cd "$modsrc" && GOFLAGS="${GOFLAGS/-mod=mod/}" go build -mod=readonly -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${v#v}" \
      -o "$tmp/bin/prometheus" ./cmd/prometheus ) || die "prometheus $v: go build failed"
  finish "$tmp" "$dir"
  say "prometheus $v: done ($((SECONDS - started)) s)"
}

build_controller() { # build_controller <name> <version> <module> <main package dir> <crd dir> <webhook dir>
  # An optional controller (Kueue, JobSet, LeaderWorkerSet), built inside its own module source
  # at the pinned tag with that module's go.mod and go.sum (-mod=readonly; none of them has
  # replace directives). `go install pkg@version` would do the same but asks the proxy for the
  # module's version list, which some proxies refuse. The CRDs and webhook configurations are
  # rendered from the same module's config/ with kubectl's kustomize and kept next to the binary.
  local name=$1 v=$2 module=$3 main=$4 crds=$5 webhooks=$6 dir="$cache/$1-$2"
  if have "$dir" "$name" && [ -f "$dir/crds.yaml" ] && [ -f "$dir/webhooks.yaml" ]; then
    say "$name $v: cached"; return; fi
  need_go
  local tmp="$dir.tmp" started=$SECONDS modsrc
  local kubectl="$cache/kubernetes-$KUBERNETES_VERSION/bin/kubectl"
  rm -rf "$tmp"; mkdir -p "$tmp/bin"
  local fetched
  fetched=$(go mod download -json "$module@$v" 2>&1) || true
  modsrc=$(printf '%s\n' "$fetched" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  if [ ! -f "$modsrc/go.mod" ]; then
    local why
    why=$(printf '%s\n' "$fetched" | sed -n 's/.*"Error": "\([^"\\]*\).*/\1/p')
    die "$name $v: could not download module $module@$v: ${why:-see go mod download}"
  fi
  say "$name $v: compiling $module/$main"
  ( cd "$modsrc" && GOFLAGS="${GOFLAGS/-mod=mod/}" go build -mod=readonly -trimpath \
      -ldflags "-s -w -X $module/pkg/version.GitVersion=$v" -o "$tmp/bin/$name" "./$main" ) \
    || die "$name $v: go build of $module/$main failed"
  for part in "crds:$crds" "webhooks:$webhooks"; do
    [ -f "$modsrc/${part#*:}/kustomization.yaml" ] || die "$name $v: no ${part#*:} in module $module"
    "$kubectl" kustomize "$modsrc/${part#*:}" > "$tmp/${part%%:*}.yaml" \
      || die "$name $v: kubectl kustomize ${part#*:} failed"
  done
  finish "$tmp" "$dir"
  say "$name $v: done ($((SECONDS - started)) s)"
}

build_optional() { # build_optional <component>
  case "$1" in
    kueue) build_controller kueue "$KUEUE_VERSION" sigs.k8s.io/kueue cmd/kueue \
             config/components/crd config/components/webhook ;;
    jobset) build_controller jobset "$JOBSET_VERSION" sigs.k8s.io/jobset . \
              config/components/crd config/components/webhook ;;
    lws) build_controller lws "$LWS_VERSION" sigs.k8s.io/lws cmd config/crd config/webhook ;;
    trainer) build_optional jobset  # a TrainJob runs as a JobSet: `up --with trainer` starts both
             build_controller trainer "$TRAINER_VERSION" github.com/kubeflow/trainer/v2 \
               cmd/trainer-controller-manager manifests/base/crds manifests/base/webhook ;;
    prometheus) build_prometheus ;;
    *) die "unknown component '$1' (expected kueue, jobset, lws or trainer)" ;;
  esac
}

main() {
  local c
  for c in "$@"; do  # check every name before a build that can take minutes
    case "$c" in kueue|jobset|lws|trainer|prometheus) ;; *) die "unknown component '$c' (expected kueue, jobset, lws or trainer)" ;; esac
  done
  mkdir -p "$cache"
  # One build at a time per cache: a second caller waits instead of deleting the first's work.
  exec 9>"$cache/.build.lock"
  if ! flock -n 9; then
    say "another build is running; waiting for it"
    flock 9
  fi
  local started=$SECONDS
  build_etcd
  build_kwok
  build_helm
  build_kubernetes
  for c in "$@"; do build_optional "$c"; done
  say "all binaries ready in $cache ($((SECONDS - started)) s)"
}

main "$@"
