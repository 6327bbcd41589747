#!/usr/bin/env bash
# The README stays a short manual (at most 350 lines), and every relative link of README.md and
# docs/*.md (images included, #anchors ignored) names a file that exists.
#   check_links.sh SOURCE_DIR
set -uo pipefail
src=$1
failures=0
lines=$(wc -l < "$src/README.md")
if [ "$lines" -gt 350 ]; then
  echo "FAIL README.md has $lines lines (at most 350: move details to docs/)"
  failures=$((failures + 1))
fi
for file in "$src/README.md" "$src"/docs/*.md; do
  dir=$(dirname "$file")
  while IFS= read -r target; do
    path=${target%%#*}
    [ -z "$path" ] && continue
    case "$path" in http://* | https://* | mailto:*) continue ;; esac
    if [ ! -e "$dir/$path" ]; then
      echo "FAIL ${file#"$src"/}: link to $target, which does not exist"
      failures=$((failures + 1))
    fi
  done < <(grep -oE '\]\([^) ]+\)' "$file" | sed -E 's/^\]\(//; s/\)$//')
done
echo "links: $failures failure(s)"
[ "$failures" -eq 0 ]
