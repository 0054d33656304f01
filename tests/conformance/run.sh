#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against `studioflow serve --http`.
# Usage: tests/conformance/run.sh [SCENARIO...]   (default: every server scenario the CLI lists,
#                                                  but the EXCLUDED ones below)
# Env:   STUDIOFLOW_BIN  server binary to test (default: cargo build, then target/debug/studioflow;
#                        CARGO_TARGET_DIR is honoured)
#        SERVE_ARGS      extra arguments for `studioflow serve`
#        SCENARIO_TIMEOUT_MS  per-scenario timeout for the suite (default 60000)
#        REQUIREMENTS    a spec revision (e.g. 2025-11-25): run exactly the scenarios it requires, with
#                        the suite's own summary, instead of the scenario list below (no exclusions)
# Exit:  0 when every scenario passed, 1 when any failed, 2 on a setup error.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SUITE_VERSION="0.2.0-alpha.12"   # keep in step with package.json
SUITE_JS="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

die() { echo "run.sh: $*" >&2; exit 2; }
command -v node >/dev/null || die "node is required (Node 20 works through node20-compat/)"
command -v npm >/dev/null || die "npm is required"

# --- 1. the suite, pinned, installed locally -----------------------------------------------
installed=""
[[ -f "$HERE/node_modules/@modelcontextprotocol/conformance/package.json" ]] &&
  installed="$(node -p "require('$HERE/node_modules/@modelcontextprotocol/conformance/package.json').version")"
if [[ "$installed" != "$SUITE_VERSION" ]]; then
  echo "== installing @modelcontextprotocol/conformance@$SUITE_VERSION"
  t0=$SECONDS
  ( cd "$HERE" && npm install --no-audit --no-fund --loglevel=error --engine-strict=false ) ||
    die "npm install failed"
  echo "== install took $((SECONDS - t0)) s"
fi

# Node < 22 lacks fs.globSync, which the suite imports: add it through a resolve hook.
NODE_FLAGS=()
if ! node -e 'process.exit(typeof require("fs").globSync === "function" ? 0 : 1)'; then
  NODE_FLAGS=(--disable-warning=ExperimentalWarning --import "$HERE/node20-compat/register.mjs")
fi
suite() { node "${NODE_FLAGS[@]}" "$SUITE_JS" "$@"; }

# --- 2. the server binary -------------------------------------------------------------------
if [[ -z "${STUDIOFLOW_BIN:-}" ]]; then
  echo "== cargo build --features testing (the fixture tools)"
  ( cd "$REPO" && cargo build --quiet --features testing ) || die "cargo build failed"
  STUDIOFLOW_BIN="${CARGO_TARGET_DIR:-$REPO/target}/debug/studioflow"
fi
[[ -x "$STUDIOFLOW_BIN" ]] || die "no server binary at $STUDIOFLOW_BIN"

# --- 3. scenarios ---------------------------------------------------------------------------
# Scenarios that do not apply to studioflow, each with its reason (README.md says more).
EXCLUDED=(
  tools-call-sampling                  # sampling: deprecated by 2026-07-28 (SEP-2577); the studio asks no model
  input-required-result-basic-sampling # the same, as an input request
)
if [[ $# -gt 0 ]]; then
  SCENARIOS=("$@")
else
  mapfile -t ALL < <(suite list --server | sed -n 's/^ *- \([a-z0-9-]*\) .*/\1/p')
  SCENARIOS=()
  for s in "${ALL[@]}"; do
    [[ " ${EXCLUDED[*]} " == *" $s "* ]] || SCENARIOS+=("$s")
  done
fi
[[ ${#SCENARIOS[@]} -gt 0 ]] || die "the suite listed no server scenario"

# --- 4. start the server on a free port with a temp demo DB -------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/studioflow-conformance.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
URL="http://127.0.0.1:$PORT/mcp"
# shellcheck disable=SC2086
# --conformance-fixtures (hidden, tests only) adds the fixture tools the scenarios call.
"$STUDIOFLOW_BIN" serve --db "$WORK/demo.db" --demo --http "127.0.0.1:$PORT" --conformance-fixtures ${SERVE_ARGS:-} \
  >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "server exited at start"; }
  sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || { cat "$WORK/server.log" >&2; die "server not listening"; }
echo "== server pid $SERVER_PID at $URL (log $WORK/server.log)"

# --- 5a. a requirement set, scored by the suite itself --------------------------------------
if [[ -n "${REQUIREMENTS:-}" ]]; then
  echo "== the $REQUIREMENTS requirement set"
  status=0
  suite server --url "$URL" --requirements "$REQUIREMENTS" --timeout "${SCENARIO_TIMEOUT_MS:-60000}" \
    -o "$HERE/results-$REQUIREMENTS" || status=$?
  exit $status
fi

# --- 5. run each scenario -------------------------------------------------------------------
RESULTS="$HERE/results"
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
t0=$SECONDS
for s in "${SCENARIOS[@]}"; do
  echo "== $s"
  suite server --url "$URL" --scenario "$s" --timeout "${SCENARIO_TIMEOUT_MS:-60000}" \
    -o "$RESULTS/$s" >"$RESULTS/$s.log" 2>&1 || true
done
RUN_SECONDS=$((SECONDS - t0))

# --- 6. table -------------------------------------------------------------------------------
status=0
node - "$RESULTS" "${SCENARIOS[@]}" <<'EOF' || status=$?
const fs = require('fs'), path = require('path');
const [dir, ...scenarios] = process.argv.slice(2);
const find = (d) => fs.existsSync(d)
  ? fs.readdirSync(d, { recursive: true }).map(String).filter((f) => path.basename(f) === 'checks.json').map((f) => path.join(d, f))
  : [];
let pass = 0, fail = 0, skip = 0;
const rows = [], details = [];
for (const s of scenarios) {
  const files = find(path.join(dir, s));
  let checks = null;
  if (files.length) checks = JSON.parse(fs.readFileSync(files[0], 'utf8'));
  if (!checks) {
    fail++; rows.push([s, 'FAIL', '-', '-', '-', '-']);
    const log = fs.existsSync(path.join(dir, s + '.log')) ? fs.readFileSync(path.join(dir, s + '.log'), 'utf8') : '';
    details.push(`${s}: no checks.json (suite crashed?)\n    ${log.trim().split('\n').slice(-5).join('\n    ')}`);
    continue;
  }
  const n = (st) => checks.filter((c) => c.status === st).length;
  const ok = n('FAILURE') === 0;
  // A scenario whose only checks were skipped failed nothing, but is counted as skipped, not passed.
  const shown = !ok ? 'FAIL' : n('SUCCESS') === 0 && n('SKIPPED') > 0 ? 'SKIP' : 'PASS';
  shown === 'FAIL' ? fail++ : shown === 'SKIP' ? skip++ : pass++;
  rows.push([s, shown, n('SUCCESS'), n('FAILURE'), n('WARNING'), n('SKIPPED')]);
  for (const c of checks.filter((c) => c.status !== 'SUCCESS' && c.status !== 'INFO'))
    details.push(`${s}: ${c.status} ${c.id}: ${c.errorMessage ?? ''}`);
}
const head = ['scenario', 'result', 'ok', 'failed', 'warn', 'skip'];
const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const line = (r) => r.map((c, i) => String(c).padEnd(w[i])).join('  ');
console.log('\n' + line(head) + '\n' + w.map((x) => '-'.repeat(x)).join('  '));
rows.forEach((r) => console.log(line(r)));
if (details.length) console.log('\nFailures and warnings:\n  ' + details.join('\n  '));
console.log(`\nconformance: ${pass} passed, ${fail} failed, ${skip} skipped`);
process.exitCode = fail ? 1 : 0;
EOF
echo "== scenarios took ${RUN_SECONDS} s; per-scenario logs and checks.json in $RESULTS"
exit $status
