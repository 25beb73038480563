#!/usr/bin/env bash
# Builds the e2e toolchain from Go modules into a cache keyed by the pinned versions:
# the Pulumi CLI, the Kubernetes provider plugin, etcd, kube-apiserver, kube-controller-manager.
# A second run with the same versions builds nothing. Prints each step and its duration.
# Usage: tools/e2e/toolchain.sh [--print-bin]   (--print-bin: print the bin dir, build nothing)
set -euo pipefail

PULUMI_VERSION=v3.274.0                                   # first CLI the proxy serves past the SDK's 3.272.0
K8S_PROVIDER_VERSION=v4.0.0-20260115033456-f47bc2d6f199   # the only provider/v4 version the proxy serves
ETCD_VERSION=v3.6.16
KUBE_VERSION=v1.35.4

KEY="pulumi-${PULUMI_VERSION}_k8sprov-${K8S_PROVIDER_VERSION##*-}_etcd-${ETCD_VERSION}_kube-${KUBE_VERSION}"
CACHE_ROOT="${ML_DIAG_E2E_CACHE:-$HOME/.cache/ml-diagnostics-e2e}"
CACHE="$CACHE_ROOT/$KEY"
BIN="$CACHE/bin"

REQUIRED=(pulumi pulumi-resource-kubernetes pulumi-resource-pulumi-python pulumi-language-python-exec
          etcd kube-apiserver kube-controller-manager)
case "${1:-}" in
  --print-bin) echo "$BIN"; exit 0 ;;
  --check)  # exit 0 when every binary is in the cache (nothing to build)
    for b in "${REQUIRED[@]}"; do [[ -x "$BIN/$b" ]] || exit 1; done
    exit 0 ;;
esac

mkdir -p "$BIN" "$CACHE/work" "$CACHE/logs"
export GOFLAGS="-buildvcs=false -trimpath"
export CGO_ENABLED=0
TOTAL_START=$(date +%s)

ONLY="${ONLY:-}"  # ONLY=etcd,kube-apiserver+kube-controller-manager: build just these steps (parallel runs)
step() { # step NAME CHECK_FILE FUNCTION
  local name=$1 check=$2 fn=$3 t0 t1
  if [[ -n "$ONLY" && ",$ONLY," != *",$name,"* ]]; then
    return 0
  fi
  if [[ -x "$BIN/$check" ]]; then
    echo "toolchain: $name: cached ($BIN/$check)"
    return 0
  fi
  echo "toolchain: $name: building ..."
  t0=$(date +%s)
  if "$fn" >"$CACHE/logs/$name.log" 2>&1; then
    t1=$(date +%s)
    echo "toolchain: $name: built in $((t1 - t0))s"
  else
    t1=$(date +%s)
    echo "toolchain: $name: FAILED after $((t1 - t0))s; last lines of $CACHE/logs/$name.log:"
    tail -n 15 "$CACHE/logs/$name.log" | sed 's/^/    /'
    FAILED+=("$name")
  fi
}
FAILED=()

scratch() { # fresh scratch module dir
  local d="$CACHE/work/$1"
  rm -rf "$d" && mkdir -p "$d" && cd "$d" && go mod init "scratch/$1" >/dev/null 2>&1
}

build_pulumi() {
  # pkg/v3 replaces its sdk with a local path, so it cannot be `go install`ed; a scratch module
  # requiring both at one version (plus pkg's own non-local replace) builds the CLI.
  scratch pulumi
  go mod download -json "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" >/dev/null
  local pkgdir
  pkgdir=$(go mod download -json "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  # keep pkg's replaces that point at other modules (not at local paths)
  grep -E '^replace .* => [a-z].* v' "$pkgdir/go.mod" | sed 's/^replace //' | while read -r line; do
    go mod edit -replace "$(echo "$line" | awk '{print $1"="$3"@"$4}')"
  done
  go get "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION"
  go get "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@$PULUMI_VERSION"
  go build -p 2 -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
    -o "$BIN/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  # the Python dynamic provider plugin and the language host's exec script ship inside sdk/v3
  local sdkdir
  sdkdir=$(go mod download -json "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  install -m 0755 "$sdkdir/python/dist/pulumi-resource-pulumi-python" "$BIN/"
  install -m 0755 "$sdkdir/python/cmd/pulumi-language-python-exec" "$BIN/"
}

build_k8s_provider() {
  # The module zip lacks the generated schema the main package embeds: copy the module,
  # run its own generate.go, then build with the version ldflag.
  local src d
  src=$(cd /tmp && go mod download -json "github.com/pulumi/pulumi-kubernetes/provider/v4@$K8S_PROVIDER_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  d="$CACHE/work/k8s-provider"
  rm -rf "$d" && mkdir -p "$d" && cp -r "$src/." "$d/" && chmod -R u+w "$d"
  cd "$d"
  go mod edit -dropreplace github.com/pulumi/pulumi-kubernetes/sdk/v4   # ../sdk is not in the zip
  (cd cmd/pulumi-resource-kubernetes && VERSION="${K8S_PROVIDER_VERSION#v}" go run -mod=mod generate.go)
  # -mod=mod: the sdk/v4 the provider required through its local replace needs go.sum lines
  go build -mod=mod -p 2 -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=${K8S_PROVIDER_VERSION#v}" \
    -o "$BIN/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes
}

staging_replaces() { # print go mod edit -replace args for a module whose go.mod replaces X => ./local
  local modfile=$1 ver=$2
  grep -E '=> \./' "$modfile" | sed -E 's/^replace //; s/^[[:space:]]+//' | awk -v v="$ver" '{print "-replace=" $1 "=" $1 "@" v}'
}

build_etcd() {
  scratch etcd
  local moddir
  moddir=$(go mod download -json "go.etcd.io/etcd/server/v3@$ETCD_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  # server/v3 replaces its sibling modules with ../<dir>; use the published ones at the same version
  grep -E '=> \.\./' "$moddir/go.mod" | sed -E 's/^replace //; s/^[[:space:]]+//' | awk '{print $1}' | while read -r m; do
    go mod edit "-replace=$m=$m@$ETCD_VERSION"
  done
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go build -p 2 -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
}

build_kube() {
  scratch kube
  local moddir minor
  moddir=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  local staging_ver="v0.${KUBE_VERSION#v1.}"
  grep -E '=> \./staging' "$moddir/go.mod" | sed -E 's/^replace //; s/^[[:space:]]+//' | awk '{print $1}' | while read -r m; do
    go mod edit "-replace=$m=$m@$staging_ver"
  done
  go get "k8s.io/kubernetes@$KUBE_VERSION"
  local pkgv=k8s.io/component-base/version
  local ld="-s -w -X $pkgv.gitVersion=$KUBE_VERSION -X $pkgv.gitMajor=1 -X $pkgv.gitMinor=$minor -X $pkgv.gitTreeState=clean -X $pkgv.buildDate=1970-01-01T00:00:00Z"
  ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  # -mod=mod: go.sum lines for the rest of k8s.io/kubernetes's dependency graph are added as needed
  go build -mod=mod -p 2 -ldflags "$ld" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
}

echo "toolchain: cache $CACHE"
echo "toolchain: $(go version)"
step pulumi-cli pulumi build_pulumi
step pulumi-resource-kubernetes pulumi-resource-kubernetes build_k8s_provider
step etcd etcd build_etcd
step kube-apiserver+kube-controller-manager kube-controller-manager build_kube
# Not buildable from the module proxy (it answers 403 "This module version is not available"):
#   github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3 (the Python language host)
#   github.com/pulumi/pulumi-gcp/provider/v8, /v9 (the gcp provider plugin)
#   github.com/pulumi/pulumi-azure-native/provider/v3 (the azure-native provider plugin)
# The e2e runner uses tools/e2e/language_host.py in place of the first.
[[ -n "$ONLY" ]] || rm -rf "$CACHE/work"
echo "toolchain: total $(( $(date +%s) - TOTAL_START ))s; $(du -sh "$CACHE" | cut -f1) in $CACHE"
if ((${#FAILED[@]})); then
  echo "toolchain: FAILED: ${FAILED[*]}"
  exit 1
fi
