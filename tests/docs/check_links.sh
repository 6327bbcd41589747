#!/usr/bin/env bash
# The README stays a short manual (at most 350 lines), and every relative link of README.md and
# docs/*.md (images included) names a file that exists and, with a #anchor into a Markdown file,
# a heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens,
# -1, -2, ... after a repeated heading) or an <a id="..."> in it.
#   check_links.sh SOURCE_DIR
set -uo pipefail
src=$1
failures=0
lines=$(wc -l < "$src/README.md")
if [ "$lines" -gt 350 ]; then
  echo "FAIL README.md has $lines lines (at most 350: move details to docs/)"
  failures=$((failures + 1))
fi
# anchors FILE: the anchors of a Markdown file's headings (outside code fences) and <a id>s.
anchors() {
  perl -CSD -ne '
    if (/^(```|~~~)/) { $fence = !$fence; next }
    next if $fence;
    print "$1\n" while /<a (?:id|name)="([^"]+)"/g;
    next unless /^#{1,6}\s+(.*?)\s*#*\s*$/;
    my $slug = lc $1;
    $slug =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
    $slug =~ s/[^\p{L}\p{N}\p{Mn} _-]//g;
    $slug =~ s/ /-/g;
    my $n = $seen{$slug}++;
    print $n ? "$slug-$n\n" : "$slug\n";
  ' "$1"
}

for file in "$src/README.md" "$src"/docs/*.md; do
  dir=$(dirname "$file")
  while IFS= read -r target; do
    case "$target" in http://* | https://* | mailto:*) continue ;; esac
    path=${target%%#*}
    anchor=""
    [ "$path" != "$target" ] && anchor=${target#*#}
    linked="$dir/$path"
    [ -z "$path" ] && linked=$file
    if [ ! -e "$linked" ]; then
      echo "FAIL ${file#"$src"/}: link to $target, which does not exist"
      failures=$((failures + 1))
    elif [ -n "$anchor" ] && [[ "$linked" == *.md ]] && ! anchors "$linked" | grep -qxF -- "$anchor"; then
      echo "FAIL ${file#"$src"/}: link to $target: ${path:-this file} has no heading with that anchor"
      failures=$((failures + 1))
    fi
  done < <(grep -oE '\]\([^) ]+\)' "$file" | sed -E 's/^\]\(//; s/\)$//')
done
echo "links: $failures failure(s)"
[ "$failures" -eq 0 ]
