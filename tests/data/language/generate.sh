#!/bin/sh
# Writes what CPython printed for each program here: NAME.stdout, and
# NAME.stderr (the traceback, with the folder and CPython 3.11's caret lines
# taken out, as Kiln prints neither) with NAME.exit when it did not exit 0.
# CPython is the oracle of the language; these programs use no torch.
# Run from anywhere: sh tests/data/language/generate.sh
cd "$(dirname "$0")" || exit 1
dir=$(pwd)
for p in *.py; do
  n=${p%.py}
  python3 "$p" > "$n.stdout" 2> "$n.stderr.raw"
  code=$?
  if [ "$code" -ne 0 ]; then
    echo "$code" > "$n.exit"
    sed -e "s|$dir/||" -e '/^ *[~^][~^]*$/d' "$n.stderr.raw" > "$n.stderr"
  else
    rm -f "$n.exit" "$n.stderr"
  fi
  rm -f "$n.stderr.raw"
done
