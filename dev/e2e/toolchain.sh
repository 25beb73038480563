#!/usr/bin/env bash
# Provides the e2e toolchain in a cache keyed by the pinned versions: the Pulumi CLI, the Kubernetes
# provider plugin, etcd, kube-apiserver, kube-controller-manager.
# 1. A complete cache whose binaries report the pinned versions: nothing to do.
# 2. Else a prebuilt archive for this exact key (see ARCHIVE_DIRS): its SHA-256 sums are checked, it is
#    unpacked beside the cache (never inside the repository), each binary is checked against the archive's
#    BINARIES.sha256 and its version against the pins, then moved into place. A corrupt archive falls back to 3.
# 3. Else everything missing is built from Go modules (about an hour cold on two cores), except with CI=true
#    or --no-build: then it fails at once, naming what is missing and how to restore it (toolchain_no_build.sh).
# Extras (--extra NAME) go the same way in a key of their own: cached and of the pinned version; else the
# prebuilt archive <archive dir>/extras/extra-<name>-<version>.tar.zst (SHA-256 against extras/SHA256SUMS, the
# unpacked binary against extras/BINARIES.sha256, its version from the binary itself); else built.
# Usage: dev/e2e/toolchain.sh [--no-build] [--print-bin | --check | --has-archive | --verify | --extra NAME |
#                             --extra-bin NAME | --charts | --pko-crds]
#   --no-build     never build (as with CI=true): a missing toolchain or extra is a failure
#   --print-bin    print the bin dir; build nothing
#   --check        exit 0 when every binary is in the cache (nothing to build)
#   --has-archive  exit 0 when a prebuilt archive for the current key is found; print its directory
#   --verify       check the cached binaries' versions against the pins; exit 1 on a mismatch
#   --charts       the real cert-manager charts: cached, else downloaded from cert-manager's Go module and
#                  packaged (dev/e2e/cert_manager_chart.py; a download, never a build); print their paths
#   --pko-crds     the Pulumi Kubernetes Operator's CRDs: cached, else copied, checked, from ML_DIAG_PKO_CRDS or
#                  ../shared/pko (dev/e2e/pko_crds.py); print their directory
# One script (about 450 lines): CI, the Makefile and the e2e tier's conftest call this one entry; its parts
# that are not the cache's own logic live beside it (toolchain_no_build.sh, plugin_version.py, cert_manager_chart.py).
set -euo pipefail
NO_BUILD_FLAG=0
if [[ "${1:-}" == --no-build ]]; then NO_BUILD_FLAG=1; shift; fi

PULUMI_VERSION=v3.274.0                                   # first CLI the proxy serves past the SDK's 3.272.0
K8S_PROVIDER_VERSION=v4.0.0-20260115033456-f47bc2d6f199   # the only provider/v4 version the proxy serves
ETCD_VERSION=v3.6.16
KUBE_VERSION=v1.35.4

KEY="pulumi-${PULUMI_VERSION}_k8sprov-${K8S_PROVIDER_VERSION##*-}_etcd-${ETCD_VERSION}_kube-${KUBE_VERSION}"
CACHE_ROOT="${ML_DIAG_E2E_CACHE:-$HOME/.cache/ml-diagnostics-e2e}"
CACHE="$CACHE_ROOT/$KEY"
BIN="$CACHE/bin"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Where a prebuilt archive may be: ML_DIAG_E2E_ARCHIVE (a directory), else the workplace's shared folder
# beside the checkout. No machine-specific path: a clone elsewhere sets ML_DIAG_E2E_ARCHIVE.
ARCHIVE_DIRS=("${ML_DIAG_E2E_ARCHIVE:-}" "$REPO/../shared/e2e-toolchain")

REQUIRED=(pulumi pulumi-resource-kubernetes pulumi-resource-pulumi-python pulumi-language-python-exec
          etcd kube-apiserver kube-controller-manager)
# shellcheck source=dev/e2e/toolchain_no_build.sh
source "$(dirname "${BASH_SOURCE[0]}")/toolchain_no_build.sh"

mod_dir() { # mod_dir MODULE@VERSION: the module's directory in the module cache, or fail
  local dir
  dir=$(go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [[ -n "$dir" && -d "$dir" ]] || { echo "toolchain: cannot download $1" >&2; return 1; }
  echo "$dir"
}

all_present() { # all_present DIR
  local b
  for b in "${REQUIRED[@]}"; do [[ -x "$1/$b" ]] || return 1; done
}

find_archive() { # prints the first directory holding this key's archive parts and SHA256SUMS
  local d
  for d in "${ARCHIVE_DIRS[@]}"; do
    [[ -n "$d" && -f "$d/SHA256SUMS" ]] || continue
    compgen -G "$d/$KEY.tar.zst.part-*" >/dev/null || continue
    (cd "$d" && pwd)
    return 0
  done
  return 1
}

first_line() { "$@" 2>&1 | head -n 1 || true; }

# verify_versions DIR: every binary's own version report against the pins; prints each mismatch
verify_versions() {
  local dir=$1 bad=0 got
  got=$(first_line "$dir/pulumi" version)
  [[ "$got" == "$PULUMI_VERSION" ]] || { echo "toolchain: version mismatch: pulumi version says '$got', pinned $PULUMI_VERSION"; bad=1; }
  got=$(first_line "$dir/kube-apiserver" --version)
  [[ "$got" == "Kubernetes $KUBE_VERSION" ]] || { echo "toolchain: version mismatch: kube-apiserver --version says '$got', pinned $KUBE_VERSION"; bad=1; }
  got=$(first_line "$dir/kube-controller-manager" --version)
  [[ "$got" == "Kubernetes $KUBE_VERSION" ]] || { echo "toolchain: version mismatch: kube-controller-manager --version says '$got', pinned $KUBE_VERSION"; bad=1; }
  got=$(first_line "$dir/etcd" --version)
  [[ "$got" == "etcd Version: ${ETCD_VERSION#v}" ]] || { echo "toolchain: version mismatch: etcd --version says '$got', pinned ${ETCD_VERSION#v}"; bad=1; }
  # a provider plugin has no --version: ask it over gRPC as the engine does (GetPluginInfo), with a python that
  # can (grpc and the pulumi SDK: the project's venv, else python3 if it has them). Where none can, the check
  # could not run, which is no mismatch: said, and the binary's SHA-256 (BINARIES.sha256) stands.
  local py err rc=3
  err=$(mktemp)
  for py in "$REPO/.venv/bin/python" "$(command -v python3 || true)"; do
    [[ -n "$py" && -x "$py" ]] || continue
    rc=0
    # the version on stdout; gRPC's own log lines (stderr) are the reason only when there is no answer
    got=$("$py" "$REPO/dev/e2e/plugin_version.py" "$dir/pulumi-resource-kubernetes" 2>"$err") || rc=$?
    ((rc == 3)) || break
  done
  got=$(head -n 1 <<<"$got")
  [[ -n "$got" ]] || got="no answer: $(tail -n 1 "$err")"
  rm -f "$err"
  if ((rc == 3)); then
    echo "toolchain: pulumi-resource-kubernetes: version unchecked: no python here can ask it over gRPC (needs grpc and the pulumi SDK: make venv)"
    return $bad
  fi
  [[ "$got" == "${K8S_PROVIDER_VERSION#v}" ]] || { echo "toolchain: version mismatch: pulumi-resource-kubernetes reports '$got' (GetPluginInfo), pinned ${K8S_PROVIDER_VERSION#v}"; bad=1; }
  return $bad
}

# restore ARCHIVE_DIR: checked unpack into a scratch dir beside the cache, then an atomic move into place
restore() {
  local src=$1 t0 scratch whole
  t0=${EPOCHREALTIME/./}
  echo "toolchain: restoring $KEY from $src"
  command -v zstd >/dev/null || { echo "toolchain: restore: zstd not found (apt-get install zstd)"; return 1; }
  # every part named in SHA256SUMS for this key, and no part missing from it
  local listed
  listed=$(grep -E "  $KEY\.tar\.zst\.part-[0-9]+\$" "$src/SHA256SUMS" | awk '{print $2}' | sort)
  if [[ -z "$listed" || "$listed" != "$(cd "$src" && printf '%s\n' "$KEY".tar.zst.part-* | sort)" ]]; then
    echo "toolchain: restore: the parts in $src do not match its SHA256SUMS"; return 1
  fi
  if ! (cd "$src" && grep -E "  $KEY\.tar\.zst\.part-[0-9]+\$" SHA256SUMS | sha256sum --quiet -c -); then
    echo "toolchain: restore: a part's SHA-256 differs from $src/SHA256SUMS"; return 1
  fi
  whole=$(grep -E "  $KEY\.tar\.zst \(whole" "$src/SHA256SUMS" | awk '{print $1}' || true)
  if [[ -n "$whole" && "$(cat "$src/$KEY".tar.zst.part-* | sha256sum | awk '{print $1}')" != "$whole" ]]; then
    echo "toolchain: restore: the joined archive's SHA-256 differs from $src/SHA256SUMS"; return 1
  fi
  mkdir -p "$CACHE_ROOT"
  scratch=$(mktemp -d "$CACHE_ROOT/.restore-XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$scratch'" RETURN
  if ! cat "$src/$KEY".tar.zst.part-* | zstd -dq | tar -x -C "$scratch"; then
    echo "toolchain: restore: unpacking failed"; return 1
  fi
  local ubin="$scratch/$KEY/bin"
  if [[ -f "$src/BINARIES.sha256" ]] && ! (cd "$ubin" && sha256sum --quiet -c "$src/BINARIES.sha256"); then
    echo "toolchain: restore: an unpacked binary's SHA-256 differs from $src/BINARIES.sha256"; return 1
  fi
  all_present "$ubin" || { echo "toolchain: restore: the archive lacks one of: ${REQUIRED[*]}"; return 1; }
  verify_versions "$ubin" || { echo "toolchain: restore: refusing binaries whose versions differ from the pins"; return 1; }
  mkdir -p "$CACHE"
  rm -rf "$BIN.old" && { [[ ! -e "$BIN" ]] || mv "$BIN" "$BIN.old"; }
  mv "$ubin" "$BIN" && rm -rf "$BIN.old"
  local ms=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
  echo "toolchain: restored in $((ms / 1000)).$(printf '%03d' $((ms % 1000)))s: $(du -sh "$BIN" | cut -f1) in $BIN"
}

kube_build() { # kube_build WORKDIR OUTDIR PACKAGE...: k8s.io/kubernetes commands at KUBE_VERSION
  local work=$1 out=$2 moddir minor
  shift 2
  rm -rf "$work" && mkdir -p "$work" && cd "$work" && go mod init scratch/kube >/dev/null 2>&1
  moddir=$(mod_dir "k8s.io/kubernetes@$KUBE_VERSION")
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
  CGO_ENABLED=0 go build -mod=mod -trimpath -buildvcs=false -p 2 -ldflags "$ld" -o "$out/" "$@"
}

# Extras: tools some e2e tests use, each in a cache of its own key (so the main key, and its prebuilt
# archive, stay as they are). Built with `go install` (their modules carry no local replaces).
#   --extra NAME        build NAME unless cached; print its bin dir
#   --extra-bin NAME    print NAME's bin dir; build nothing
EXTRA_MODULES=(
  "yaml=github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml@v1.25.0"        # the Pulumi YAML language host
  "actionlint=github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"              # GitHub Actions workflow linter
  "sdkgen=dev/e2e/sdkgen@$PULUMI_VERSION"   # Pulumi's Node.js SDK generator over a schema (main.go here)
  "kwok=sigs.k8s.io/kwok/cmd/kwok@v0.8.0"                                      # nodes and pods simulated
  "scheduler=k8s.io/kubernetes/cmd/kube-scheduler@$KUBE_VERSION"   # built as kube-apiserver is (build_kube)
)
extra_module() {
  local e
  for e in "${EXTRA_MODULES[@]}"; do [[ "${e%%=*}" == "$1" ]] && { echo "${e#*=}"; return 0; }; done
  echo "toolchain: unknown extra '$1'; known: ${EXTRA_MODULES[*]%%=*}" >&2
  return 1
}
extra_bin() { # extra_bin NAME: $CACHE_ROOT/extra-<name>-<version>/bin
  local mod
  mod=$(extra_module "$1") || return 1
  echo "$CACHE_ROOT/extra-$1-${mod##*@}/bin"
}
go_install_extra() { # MODULE@VERSION BIN
  GOBIN="$2" CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" go install -ldflags "-s -w" "$1"
}

build_local_extra() { # DIR BIN: a main package of this repository, against pkg/v3 at the CLI's version
  local dir pkgdir
  dir="$CACHE_ROOT/.extra-work-$(basename "$1")"
  rm -rf "$dir" && mkdir -p "$dir" && cp "$REPO/$1"/*.go "$dir/" && cd "$dir"
  go mod init "scratch/$(basename "$1")"
  pkgdir=$(mod_dir "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION")
  # pkg/v3's replaces of other modules, as the CLI's build keeps them (build_pulumi)
  grep -E '^replace .* => [a-z].* v' "$pkgdir/go.mod" | sed 's/^replace //' | while read -r line; do
    go mod edit -replace "$(echo "$line" | awk '{print $1"="$3"@"$4}')"
  done
  go get "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION" "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION"
  go mod tidy
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$2/$(basename "$1")" .
  cd / && rm -rf "$dir"
}

# extra_version_ok NAME EXE: the binary's own report of its version is the pin (actionlint: -version; kwok,
# kube-scheduler: --version; the others: the module versions the Go linker embedded, `go version -m`);
# prints the mismatch
extra_version_ok() {
  local name=$1 exe=$2 mod got want
  mod=$(extra_module "$name") || return 1
  want=${mod##*@}
  if [[ "$name" == actionlint ]]; then
    got=$(first_line "$exe" -version)
    [[ "$got" == "$want" ]] && return 0
    echo "toolchain: extra $name: version mismatch: actionlint -version says '$got', pinned $want"
    return 1
  fi
  if [[ "$name" == kwok || "$name" == scheduler ]]; then
    got=$(first_line "$exe" --version)
    # kwok: "kwok version v0.8.0 go1.26.8 (linux/amd64)"; kube-scheduler: "Kubernetes v1.35.4"
    [[ "$name" == kwok && "$got" == "kwok version $want "* ]] && return 0
    [[ "$name" == scheduler && "$got" == "Kubernetes $want" ]] && return 0
    echo "toolchain: extra $name: version mismatch: $(basename "$exe") --version says '$got', pinned $want"
    return 1
  fi
  command -v go >/dev/null || { echo "toolchain: extra $name: go not found: cannot read the binary's build info"; return 1; }
  local info module=${mod%@*}
  info=$(go version -m "$exe" 2>&1) || { echo "toolchain: extra $name: go version -m: ${info%%$'\n'*}"; return 1; }
  # a module of this repository embeds the Pulumi pkg/v3 it was built against; the others their own module
  [[ "$module" == dev/* ]] && module=github.com/pulumi/pulumi/pkg/v3
  got=$(awk -v m="$module" '($1 == "mod" || $1 == "dep") && index(m, $2) == 1 { print $3; exit }' <<<"$info")
  [[ "$got" == "$want" ]] && return 0
  echo "toolchain: extra $name: version mismatch: the binary was built from ${module} '${got:-none}', pinned $want"
  return 1
}

find_extra_archive() { # NAME: prints the extras directory that holds NAME's archive and SHA256SUMS
  local d file
  file="$(basename "$(dirname "$(extra_bin "$1")")").tar.zst"
  for d in "${ARCHIVE_DIRS[@]}"; do
    [[ -n "$d" && -f "$d/extras/SHA256SUMS" && -f "$d/extras/$file" ]] || continue
    (cd "$d/extras" && pwd)
    return 0
  done
  return 1
}

# restore_extra NAME SRC: checked unpack into a scratch dir beside the cache, then a move into place
restore_extra() {
  local name=$1 src=$2 bin dirname file exe scratch t0 sum
  t0=${EPOCHREALTIME/./}
  bin=$(extra_bin "$name")
  dirname=$(basename "$(dirname "$bin")")
  file="$dirname.tar.zst"
  exe=$(basename "$(extra_module "$name" | sed 's/@.*//')")
  echo "toolchain: extra $name: restoring $dirname from $src" >&2
  command -v zstd >/dev/null || { echo "toolchain: extra $name: zstd not found (apt-get install zstd)"; return 1; }
  sum=$(awk -v f="$file" '$2 == f { print $1 }' "$src/SHA256SUMS")
  [[ -n "$sum" ]] || { echo "toolchain: extra $name: $file is not listed in $src/SHA256SUMS"; return 1; }
  [[ "$(sha256sum "$src/$file" | awk '{print $1}')" == "$sum" ]] \
    || { echo "toolchain: extra $name: the SHA-256 of $file differs from $src/SHA256SUMS"; return 1; }
  mkdir -p "$CACHE_ROOT"
  scratch=$(mktemp -d "$CACHE_ROOT/.restore-extra-XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$scratch'" RETURN
  zstd -dqc "$src/$file" | tar -x -C "$scratch" || { echo "toolchain: extra $name: unpacking failed"; return 1; }
  [[ -x "$scratch/$dirname/bin/$exe" ]] || { echo "toolchain: extra $name: the archive lacks $dirname/bin/$exe"; return 1; }
  if [[ -f "$src/BINARIES.sha256" ]]; then
    sum=$(awk -v f="$dirname/bin/$exe" '$2 == f { print $1 }' "$src/BINARIES.sha256")
    [[ -n "$sum" && "$(sha256sum "$scratch/$dirname/bin/$exe" | awk '{print $1}')" == "$sum" ]] \
      || { echo "toolchain: extra $name: the unpacked $exe differs from $src/BINARIES.sha256"; return 1; }
  fi
  extra_version_ok "$name" "$scratch/$dirname/bin/$exe" || return 1
  mkdir -p "$(dirname "$bin")"
  rm -rf "$bin" && mv "$scratch/$dirname/bin" "$bin"
  local ms=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
  echo "toolchain: extra $name: restored in $((ms / 1000)).$(printf '%03d' $((ms % 1000)))s" >&2
}

build_extra() {
  local name=$1 mod bin t0 exe src
  mod=$(extra_module "$name") || return 1
  bin=$(extra_bin "$name")
  exe=$(basename "${mod%@*}")
  if [[ -x "$bin/$exe" ]]; then
    # a cached binary of another version is a failure, never a silent use
    extra_version_ok "$name" "$bin/$exe" >&2 || { echo "toolchain: extra $name: FAILED: $bin/$exe is not the pinned version; remove $bin and rerun" >&2; return 1; }
    echo "$bin"
    return 0
  fi
  if src=$(find_extra_archive "$name"); then
    if restore_extra "$name" "$src" >&2; then echo "$bin"; return 0; fi
    no_build_reason >/dev/null || echo "toolchain: extra $name: the archive could not be used; building from Go modules instead" >&2
  fi
  if no_build_reason >/dev/null; then no_build_extra "$name" "$bin" "$exe"; return 1; fi
  mkdir -p "$bin"
  t0=$(date +%s)
  echo "toolchain: extra $name: building $mod ..." >&2
  local builder=(go_install_extra "$mod" "$bin")
  [[ "$mod" == dev/* ]] && builder=(build_local_extra "${mod%@*}" "$bin")
  [[ "$mod" == k8s.io/kubernetes/* ]] && builder=(kube_build "$CACHE_ROOT/.extra-work-$name" "$bin" "${mod%@*}")
  # in the background, not as an `if` condition, where bash would ignore errexit (as in `step` below)
  ( set -e; "${builder[@]}" ) >"$bin/../build.log" 2>&1 &
  if ! wait $! || [[ ! -x "$bin/$exe" ]]; then
    echo "toolchain: extra $name: FAILED after $(( $(date +%s) - t0 ))s; last lines of $bin/../build.log:" >&2
    tail -n 15 "$bin/../build.log" | sed 's/^/    /' >&2
    return 1
  fi
  echo "toolchain: extra $name: built in $(( $(date +%s) - t0 ))s" >&2
  echo "$bin"
}

case "${1:-}" in
  --extra) build_extra "${2:?--extra NAME}"; exit $? ;;
  --extra-bin) extra_bin "${2:?--extra-bin NAME}"; exit $? ;;
  --print-bin) echo "$BIN"; exit 0 ;;
  --check) all_present "$BIN" && exit 0 || exit 1 ;;
  --has-archive) find_archive && exit 0 || exit 1 ;;
  --verify) verify_versions "$BIN" && exit 0 || exit 1 ;;
  --charts)
    py="$REPO/.venv/bin/python"
    [[ -x "$py" ]] || py=python3   # the packager needs the standard library only
    exec "$py" "$REPO/dev/e2e/cert_manager_chart.py" --cache-root "$CACHE_ROOT" ;;
  "") ;;
  --pko-crds)
    py="$REPO/.venv/bin/python"
    [[ -x "$py" ]] || py=python3
    exec "$py" "$REPO/dev/e2e/pko_crds.py" --cache-root "$CACHE_ROOT" ;;
  *) echo "usage: dev/e2e/toolchain.sh [--no-build] [--print-bin | --check | --has-archive | --verify | --extra NAME | --extra-bin NAME | --charts | --pko-crds]" >&2; exit 2 ;;
esac

if all_present "$BIN"; then
  # a cache that claims the key but reports other versions is a failure, never a silent use
  verify_versions "$BIN" || { echo "toolchain: FAILED: $BIN holds binaries that are not the pinned versions; remove it and rerun"; exit 1; }
  echo "toolchain: cached ($BIN)"
  exit 0
fi
if ARCHIVE=$(find_archive); then
  if restore "$ARCHIVE"; then exit 0; fi
  no_build_reason >/dev/null || echo "toolchain: the archive could not be used; building from Go modules instead"
fi
if no_build_reason >/dev/null; then no_build_main; fi

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
  # in the background, not as an `if` condition: bash ignores errexit inside a function called as a
  # condition, and a failed step must stop at its first failing command
  ( set -e; "$fn" ) >"$CACHE/logs/$name.log" 2>&1 &
  if wait $!; then
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
  pkgdir=$(mod_dir "github.com/pulumi/pulumi/pkg/v3@$PULUMI_VERSION")
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
  sdkdir=$(mod_dir "github.com/pulumi/pulumi/sdk/v3@$PULUMI_VERSION")
  install -m 0755 "$sdkdir/python/dist/pulumi-resource-pulumi-python" "$BIN/"
  install -m 0755 "$sdkdir/python/cmd/pulumi-language-python-exec" "$BIN/"
}

build_k8s_provider() {
  # The module zip lacks the generated schema the main package embeds: copy the module,
  # run its own generate.go, then build with the version ldflag.
  local src d
  src=$(cd /tmp && mod_dir "github.com/pulumi/pulumi-kubernetes/provider/v4@$K8S_PROVIDER_VERSION")
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
  moddir=$(mod_dir "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
  # server/v3 replaces its sibling modules with ../<dir>; use the published ones at the same version
  grep -E '=> \.\./' "$moddir/go.mod" | sed -E 's/^replace //; s/^[[:space:]]+//' | awk '{print $1}' | while read -r m; do
    go mod edit "-replace=$m=$m@$ETCD_VERSION"
  done
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go build -p 2 -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
}

build_kube() {
  kube_build "$CACHE/work/kube" "$BIN" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
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
# The e2e runner uses dev/e2e/language_host.py in place of the first.
[[ -n "$ONLY" ]] || rm -rf "$CACHE/work"
if ((${#FAILED[@]} == 0)) && [[ -z "$ONLY" ]]; then
  verify_versions "$BIN" || FAILED+=(versions)
fi
echo "toolchain: total $(( $(date +%s) - TOTAL_START ))s; $(du -sh "$CACHE" | cut -f1) in $CACHE"
if ((${#FAILED[@]})); then
  echo "toolchain: FAILED: ${FAILED[*]}"
  exit 1
fi
