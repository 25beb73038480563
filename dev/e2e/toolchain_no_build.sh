# Sourced by dev/e2e/toolchain.sh: what it says, and does, where it may not build (CI=true, or --no-build).
# Building from Go modules takes about an hour on two cores, so there a missing or mismatched toolchain is
# a failure within seconds that names what is missing and how to restore it, never a build.
# shellcheck shell=bash

no_build_reason() { # why building is off, or nothing (exit 1) when it is allowed
  if ((NO_BUILD_FLAG)); then echo "--no-build"; return 0; fi
  case "${CI:-}" in true | TRUE | True | 1) echo "CI=${CI}"; return 0 ;; esac
  return 1
}

archive_places() { # where an archive is looked for, for the messages
  local d out=""
  for d in "${ARCHIVE_DIRS[@]}"; do [[ -z "$d" ]] || out+="${out:+, }$d"; done
  echo "$out"
}

# no_build_main: the main toolchain is missing (or its archive was refused, said above): fail
no_build_main() {
  local why missing=() b
  why=$(no_build_reason)
  for b in "${REQUIRED[@]}"; do [[ -x "$BIN/$b" ]] || missing+=("$b"); done
  echo "toolchain: FAILED: not building ($why): missing in $BIN: ${missing[*]}"
  echo "toolchain: restore it from its prebuilt archive: $KEY.tar.zst.part-* with SHA256SUMS and"
  echo "  BINARIES.sha256, in a directory named by ML_DIAG_E2E_ARCHIVE or in ../shared/e2e-toolchain beside the"
  echo "  checkout (looked in: $(archive_places)); or build it from Go modules (about an hour on two cores):"
  echo "  dev/e2e/toolchain.sh without CI=true or --no-build"
  exit 1
}

# no_build_extra NAME BIN EXE: an extra is missing (or its archive was refused, said above): fail
no_build_extra() {
  local name=$1 bin=$2 exe=$3 why file
  why=$(no_build_reason)
  file="$(basename "$(dirname "$bin")").tar.zst"
  echo "toolchain: extra $name: FAILED: not building ($why): $exe is not in $bin" >&2
  echo "toolchain: extra $name: restore it from the prebuilt archive extras/$file (with extras/SHA256SUMS and" >&2
  echo "  extras/BINARIES.sha256) under ML_DIAG_E2E_ARCHIVE or ../shared/e2e-toolchain (looked in: $(archive_places));" >&2
  echo "  or build it from Go modules: dev/e2e/toolchain.sh --extra $name without CI=true or --no-build" >&2
  return 1
}
