#!/usr/bin/env bash
# Check the whole Agda development from a clean state.
#   bash agda/check.sh
# Needs agda (2.6.2.x) and agda-stdlib (1.7.x) installed, e.g. Debian's
# `apt-get install agda agda-stdlib`; installs nothing itself.
# Set AGDA_STDLIB to the standard library's source directory if it is not
# in /usr/share/agda-stdlib.
set -euo pipefail
cd "$(dirname "$0")"

AGDA=${AGDA:-agda}
if ! command -v "$AGDA" >/dev/null 2>&1; then
  echo "agda/check.sh: agda not found on PATH" >&2
  exit 1
fi

STDLIB=${AGDA_STDLIB:-}
if [ -z "$STDLIB" ]; then
  for d in /usr/share/agda-stdlib /usr/share/agda/lib/stdlib /usr/local/share/agda-stdlib; do
    if [ -f "$d/Data/Nat.agda" ]; then STDLIB=$d; break; fi
  done
fi
if [ -z "$STDLIB" ] || [ ! -f "$STDLIB/Data/Nat.agda" ]; then
  echo "agda/check.sh: agda standard library not found (set AGDA_STDLIB)" >&2
  exit 1
fi

status=0

# 1. forbidden constructs anywhere in the development
mapfile -t files < <(find . -name '*.agda' -not -path './_build/*' | sort)
for pat in 'postulate' '{!' '--with-K' 'TERMINATING' '--type-in-type' \
           '--allow-unsolved-metas' 'NO_POSITIVITY_CHECK' 'NO_UNIVERSE_CHECK' \
           '--cubical' '--rewriting' 'primTrustMe' 'BUILTIN'; do
  if grep -nF -e "$pat" "${files[@]}"; then
    echo "agda/check.sh: forbidden construct '$pat' found" >&2
    status=1
  fi
done

# 2. every module starts with the required options and is imported by All.agda
for f in "${files[@]}"; do
  if [ "$(head -n 1 "$f")" != '{-# OPTIONS --safe --without-K #-}' ]; then
    echo "agda/check.sh: $f does not start with {-# OPTIONS --safe --without-K #-}" >&2
    status=1
  fi
  mod=${f#./}; mod=${mod%.agda}; mod=${mod//\//.}
  if [ "$mod" != All ] && ! grep -qE "^import $mod\$" All.agda; then
    echo "agda/check.sh: module $mod is not imported by All.agda" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] || exit 1

# 3. type-check from a clean state (our interface files removed; the
#    standard library's are used if present and up to date)
rm -rf _build
find . -name '*.agdai' -delete
start=$(date +%s)
"$AGDA" --safe --without-K --no-libraries -i . -i "$STDLIB" All.agda
end=$(date +%s)
rm -rf _build
echo "agda/check.sh: OK, all modules checked in $((end - start)) s (stdlib: $STDLIB)"
