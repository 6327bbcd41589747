#!/usr/bin/env bash
# The test of the tests: the suite never writes in the source tree outside build/. A user's runs/,
# pictures and pages there are theirs (`./setup.sh demo`, then `./setup.sh test`, must leave the
# demo's run as it was), and a test that writes through a link into the tree would replace them.
#   tree_untouched.sh plant SOURCE_DIR STATE_DIR   before the suite (a CTest fixture's setup)
#   tree_untouched.sh check SOURCE_DIR STATE_DIR   after it (the fixture's cleanup)
# plant puts a sentinel file into runs/demo, runs/shakespeare and runs/tinygpt -- the folders the
# documented commands train into -- and records every file, folder and link of the tree but
# build/ and .git/ (files by SHA-256). check records the tree again, removes the sentinels (and
# the folders plant created for them), and fails listing every entry that changed.
set -euo pipefail
mode="$1"
src=$(cd "$2" && pwd)
state="$3"

# Every entry as a line with its path, its type letter and a link's target, and every file as a
# line with its SHA-256 and path; sorted.
snapshot() {
  (cd "$src" &&
     { find . \( -path ./build -o -path ./.git \) -prune -o -printf '%p %y %l\n'
       find . \( -path ./build -o -path ./.git \) -prune -o -type f -print0 | xargs -0 -r sha256sum
     } | LC_ALL=C sort)
}

sentinel_folders=(runs/demo runs/shakespeare runs/tinygpt)
sentinel=tinygpt-test-sentinel

case "$mode" in
  plant)
    rm -rf "$state"
    mkdir -p "$state"
    : > "$state/created"
    for folder in "${sentinel_folders[@]}"; do
      # The folders plant creates, outermost first, so that check removes them innermost first.
      path=""
      for part in ${folder//\// }; do
        path="${path:+$path/}$part"
        [ -e "$src/$path" ] || { mkdir "$src/$path"; echo "$path" >> "$state/created"; }
      done
      head -c 64 /dev/urandom | od -An -tx1 > "$src/$folder/$sentinel"
    done
    snapshot > "$state/before"
    ;;
  check)
    snapshot > "$state/after"
    for folder in "${sentinel_folders[@]}"; do rm -f "$src/$folder/$sentinel"; done
    tac "$state/created" | while IFS= read -r path; do rmdir "$src/$path" 2> /dev/null || true; done
    if ! diff "$state/before" "$state/after" > "$state/changes"; then
      echo "FAIL: the test suite changed the source tree outside build/ ('<' before, '>' after;"
      echo "the first 60 lines of $(wc -l < "$state/changes") in $state/changes):"
      head -n 60 "$state/changes"
      exit 1
    fi
    echo "the source tree outside build/ is as it was before the suite ($(wc -l < "$state/before") entries)"
    ;;
  *)
    echo "usage: tree_untouched.sh plant|check SOURCE_DIR STATE_DIR" >&2
    exit 2
    ;;
esac
