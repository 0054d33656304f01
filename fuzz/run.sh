#!/usr/bin/env bash
# Fuzzes studioflow's front door and its calendars: each target in turn (all four unless named),
# for FUZZ_SECONDS each (default 600), from the hand-written inputs in fuzz/seeds/TARGET and the
# corpus kept in fuzz/corpus/TARGET. Afterwards the corpus is cut to the FUZZ_KEEP inputs (default
# 300) that cover the most code (keep.py), to keep the repository small; a rerun finds the rest
# quickly.
# A crash, hang or panic stops the run with the input in fuzz/artifacts/TARGET; replay it with
# `cargo fuzz run -s none TARGET FILE`.
#
# Stable Rust is enough: `-s none` asks for libFuzzer's coverage without a sanitizer (which would
# need nightly). Runs at nice 10 so a machine shared with builds stays usable.
#
#   fuzz/run.sh                      # all targets, 10 minutes each
#   FUZZ_SECONDS=60 fuzz/run.sh http_request
set -euo pipefail
cd "$(dirname "$0")"

seconds="${FUZZ_SECONDS:-600}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(stdio_line http_request tool_arguments calendar)
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "seeds/$target"
    echo "== $target: $seconds s" >&2
    # -timeout: one input taking 30 s is a hang; -rss_limit_mb: growth past 4 GiB is a leak.
    nice -n 10 cargo fuzz run -s none "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
    # Keep the inputs that cover the most code, FUZZ_KEEP at most (keep.py reads libFuzzer's
    # per-input coverage from a merge control file).
    work="$(mktemp -d)"
    mkdir "$work/merged"
    nice -n 10 cargo fuzz run -s none "$target" "$work/merged" "corpus/$target" -- \
        -merge=1 -merge_control_file="$work/control" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
    mkdir "$work/kept"
    python3 keep.py "$work/control" "${FUZZ_KEEP:-300}" | while read -r input; do cp "$input" "$work/kept/"; done
    rm -rf "corpus/$target"
    mv "$work/kept" "corpus/$target"
    rm -rf "$work"
    echo "== $target: $(find "corpus/$target" -type f | wc -l) inputs kept in corpus/$target" >&2
done
