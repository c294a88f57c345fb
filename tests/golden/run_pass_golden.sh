#!/bin/sh
# One golden pass file (tests/golden/passes/*.txt), as LLVM's lit runs one
# test: its first line "# RUN: kiln-cli opt ARGS" is run on the file, and the
# output is checked by FileCheck against the file's CHECK lines.
# Usage: run_pass_golden.sh KILN_CLI FILECHECK FILE
set -eu
cli=$1 filecheck=$2 file=$3
run=$(head -n 1 "$file")
case "$run" in
  "# RUN: kiln-cli opt "*) args=${run#"# RUN: kiln-cli opt "} ;;
  *) echo "$file:1: the first line must be '# RUN: kiln-cli opt ARGS'" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086  # ARGS are words, as lit splits them
"$cli" opt "$file" $args > "${TMPDIR:-/tmp}/kiln-golden-$$.out" || { status=$?; cat "${TMPDIR:-/tmp}/kiln-golden-$$.out"; rm -f "${TMPDIR:-/tmp}/kiln-golden-$$.out"; echo "$file: kiln-cli opt exited $status" >&2; exit 1; }
"$filecheck" "$file" --input-file "${TMPDIR:-/tmp}/kiln-golden-$$.out" || { rm -f "${TMPDIR:-/tmp}/kiln-golden-$$.out"; exit 1; }
rm -f "${TMPDIR:-/tmp}/kiln-golden-$$.out"
