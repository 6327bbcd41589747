#!/usr/bin/env bash
# Runs every shell command the documentation shows, so that none can go stale.
#   run_doc_commands.sh SOURCE_DIR BINARY_DIR [FILE.md ...]   (default: README.md and docs/*.md)
#
# Convention: a ```sh fence is commands to run; output is shown in ```text (or other) fences,
# which are not run. An HTML comment on the line just before a fence changes how it runs:
#   <!-- doc-test: sed s/--steps 2000/--steps 20/ -->   sed -E expressions applied to the block
#                                                       first (tiny sizes; the text says so)
#   <!-- doc-test: needs mpirun -->                     skipped, with the reason, when missing:
#                                                       mpirun, shared (../shared), python3,
#                                                       torch, node
#   <!-- doc-test: skip run by .ci/run -->              never run here; the reason is printed
# Several directives go in one comment, separated by " ; ".
#
# The blocks of one file run in order, each in a fresh `bash -e` shell, all in one scratch
# folder that holds `build` (a link to this build) and a copy of the tree's sources, so a later
# block can use what an earlier one made (train, then sample). The sources are copied, not
# linked: a documented `train --out runs/demo --force` must land in the scratch folder, never in
# a user's own runs/ (or a picture command in the tree's docs/images). Each file gets its own
# copy, so files run side by side cannot see each other's runs. A failing command fails the test
# with its file, line and the command.
set -uo pipefail
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
shift 2
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$src/README.md" "$src"/docs/*.md)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0 ran=0 skipped=0

have() {  # have THING: whether a `needs` requirement is met
  case "$1" in
    mpirun) command -v mpirun > /dev/null ;;
    shared) [ -d "$src/../shared" ] ;;
    python3) command -v python3 > /dev/null ;;
    torch) [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2> /dev/null ;;
    node) command -v node > /dev/null && [ -d "$bin/browser/node_modules/puppeteer-core" ] ;;
    *) echo "doc-test: unknown requirement '$1'" >&2; return 2 ;;
  esac
}

# copy_sources DEST: the files of the tree the project's sources are, copied into DEST. In a git
# checkout, the files git tracks plus the new ones it does not ignore (a user's runs/ is
# ignored); elsewhere every entry but the build and the folders runs write into.
copy_sources() {
  if git -C "$src" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard |
       while IFS= read -r -d '' path; do [ -e "$path" ] && printf '%s\0' "$path"; done |
       tar --null -T - -cf -) | tar -xf - -C "$1"
  else
    tar -C "$src" --exclude=./build --exclude=./runs --exclude=./out -cf - . | tar -xf - -C "$1"
  fi
}

for file in "${files[@]}"; do
  name=${file#"$src"/}
  work="$scratch/$(echo "$name" | tr '/.' '__')/tree"
  mkdir -p "$work" "$work/../home"
  copy_sources "$work"
  ln -s "$bin" "$work/build"
  [ -d "$src/../shared" ] && ln -s "$(cd "$src/../shared" && pwd)" "$work/../shared"
  blocks="$work/../blocks"
  mkdir -p "$blocks"
  # One file per block: N.sh, with N.meta holding "LINE<TAB>DIRECTIVES".
  awk -v dir="$blocks" '
    /^```sh[[:space:]]*$/ { n++; inside = 1; printf "%d\t%s\n", NR, directive > (dir "/" n ".meta"); next }
    inside && /^```[[:space:]]*$/ { inside = 0; close(dir "/" n ".sh"); next }
    inside { print > (dir "/" n ".sh"); next }
    { directive = ""; if (match($0, /^<!-- doc-test: .* -->$/)) directive = substr($0, 16, length($0) - 19) }
  ' "$file"
  count=$(ls "$blocks"/*.meta 2> /dev/null | wc -l)
  for ((i = 1; i <= count; i++)); do
    IFS=$'\t' read -r line directives < "$blocks/$i.meta"
    script="$blocks/$i.sh"
    [ -f "$script" ] || : > "$script"
    reason=""
    while IFS= read -r part; do
      case "$part" in
        "") ;;
        skip\ *) reason="${part#skip }" ;;
        needs\ *) have "${part#needs }" || reason="needs ${part#needs }, which this machine lacks" ;;
        sed\ *) sed -E -i "${part#sed }" "$script" ;;
        *) echo "FAIL $name:$line: unknown doc-test directive '$part'"; failures=$((failures + 1)) ;;
      esac
    done <<< "${directives// ; /$'\n'}"
    if [ -n "$reason" ]; then
      echo "SKIP $name:$line ($reason)"
      skipped=$((skipped + 1))
      continue
    fi
    echo "RUN  $name:$line"
    sed 's/^/     | /' "$script"
    if ! (cd "$work" && HOME="$work/../home" PATH="$work/build:$PATH" bash -e -o pipefail \
            -c 'trap '\''echo "FAIL at: $BASH_COMMAND" >&2'\'' ERR; source "$0"' "$script" \
            > "$blocks/$i.out" 2>&1); then
      echo "FAIL $name:$line: a command of this block failed; its output:"
      tail -n 30 "$blocks/$i.out" | sed 's/^/     > /'
      failures=$((failures + 1))
    fi
    ran=$((ran + 1))
  done
done
echo "doc commands: $ran blocks run, $skipped skipped, $failures failed"
[ "$failures" -eq 0 ]
