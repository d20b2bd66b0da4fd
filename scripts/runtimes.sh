#!/usr/bin/env bash
# Runs the runtime smoke test (test/runtime-smoke.cjs) and a set of the tape test
# files (dist/test/*.test.js) under node, bun and deno, and prints a table of
# runtime / version / result. Bun and Deno come from the npm registry through
# `npx -y` (the `bun` and `deno` packages ship prebuilt binaries). Not part of
# `npm test`.
#
#   scripts/runtimes.sh                      # every dist/test/*.test.js
#   scripts/runtimes.sh engine memtable      # only these tape files (names as for dist/test/run.js)
#   TAPE=none scripts/runtimes.sh            # smoke test only
#   RUNTIMES="node bun" scripts/runtimes.sh  # a subset of runtimes
#
# Needs a build first (npx tsc -p tsconfig.json). Logs go to $LOG_DIR
# (default: a fresh temp dir), one file per runtime and test.
#
# Memory: engine.test.js measures memory after a full GC: node and Deno get
# --expose-gc (global.gc()); Bun has no such flag, and the test calls
# Bun.gc(true) there. Deno needs no --unstable-detect-cjs: package.json says
# "type": "commonjs", so Deno loads dist/*.js, and the compaction worker
# (new Worker(__filename)), as CommonJS.
set -u
cd "$(dirname "$0")/.."

DEFAULT_TAPE="$(ls dist/test/*.test.js 2>/dev/null | sed 's#.*/##; s#\.test\.js$##' | tr '\n' ' ')"
if [ "$#" -gt 0 ]; then TAPE_FILES="$*"; else TAPE_FILES="${TAPE:-$DEFAULT_TAPE}"; fi
[ "$TAPE_FILES" = none ] && TAPE_FILES=""
RUNTIMES="${RUNTIMES:-node bun deno}"
LOG_DIR="${LOG_DIR:-$(mktemp -d -t lsm-runtimes-XXXXXX)}"
PER_FILE_TIMEOUT="${PER_FILE_TIMEOUT:-600}"
export NO_COLOR=1
export LSM_PARANOID="${LSM_PARANOID:-1}"

if [ ! -f dist/index.js ]; then
  echo "dist/index.js missing: run npx tsc -p tsconfig.json first" >&2
  exit 2
fi

# The command line of a runtime, as an array in CMD.
runtime_cmd () {
  case "$1" in
    node) CMD=(node --expose-gc) ;;
    bun) CMD=(npx -y bun) ;;
    deno) CMD=(npx -y deno run -A --v8-flags=--expose-gc) ;;
    *) echo "unknown runtime $1" >&2; return 1 ;;
  esac
}

runtime_version () {
  case "$1" in
    node) node --version 2>/dev/null ;;
    bun) npx -y bun --version 2>/dev/null | head -1 ;;
    deno) npx -y deno --version 2>/dev/null | head -1 | awk '{print $2}' ;;
  esac
}

# Pass/fail counts of a tape log: "pass fail" (tape's "# pass  N" / "# fail  N").
tape_counts () {
  local p f
  p=$(grep -E -m1 '^# pass +[0-9]+$' "$1" | awk '{print $3}')
  f=$(grep -E -m1 '^# fail +[0-9]+$' "$1" | awk '{print $3}')
  echo "${p:-0} ${f:-0}"
}

ROWS=()
overall=0
for rt in $RUNTIMES; do
  runtime_cmd "$rt" || { overall=1; continue; }
  version=$(runtime_version "$rt")
  if [ -z "$version" ]; then
    ROWS+=("$rt|unavailable|-|-|npx -y $rt failed (no registry access?)")
    overall=1
    continue
  fi
  echo "== $rt $version" >&2

  log="$LOG_DIR/$rt-runtime-smoke.log"
  if timeout "$PER_FILE_TIMEOUT" "${CMD[@]}" test/runtime-smoke.cjs >"$log" 2>&1; then
    smoke=$(grep -o 'runtime-smoke: [0-9]* checks passed' "$log" | awk '{print "ok (" $2 " checks)"}')
  else
    smoke="FAIL (see $log)"
    overall=1
  fi
  echo "   smoke: $smoke" >&2

  files_ok=0; files_bad=0; asserts_ok=0; asserts_bad=0; bad_names=""
  for name in $TAPE_FILES; do
    file="dist/test/$name.test.js"
    [ -f "$file" ] || { echo "   $name: no $file" >&2; continue; }
    log="$LOG_DIR/$rt-$name.log"
    timeout "$PER_FILE_TIMEOUT" "${CMD[@]}" "$file" >"$log" 2>&1
    rc=$?
    read -r p f < <(tape_counts "$log")
    asserts_ok=$((asserts_ok + p)); asserts_bad=$((asserts_bad + f))
    if [ "$rc" -eq 0 ] && [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
      files_ok=$((files_ok + 1)); status=ok
    else
      files_bad=$((files_bad + 1)); bad_names="$bad_names $name"; status="FAIL rc=$rc"; overall=1
    fi
    echo "   $name: $status ($p passed, $f failed)" >&2
  done
  if [ -n "$TAPE_FILES" ]; then
    tape="$files_ok/$((files_ok + files_bad)) files, $asserts_ok asserts ok, $asserts_bad failed"
  else
    tape="-"
  fi
  ROWS+=("$rt|$version|$smoke|$tape|${bad_names# }")
done

echo
printf '%-6s | %-10s | %-20s | %-46s | %s\n' runtime version smoke tape 'failed files'
printf '%s\n' "-------+------------+----------------------+------------------------------------------------+-------------"
for row in "${ROWS[@]}"; do
  IFS='|' read -r a b c d e <<<"$row"
  printf '%-6s | %-10s | %-20s | %-46s | %s\n' "$a" "$b" "$c" "$d" "${e:--}"
done
echo "logs: $LOG_DIR"
exit $overall
