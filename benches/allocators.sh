#!/usr/bin/env bash
# The core's allocator, side by side in one run: builds the surgery bench with mimalloc v2 (what
# ships), mimalloc v3 and the system allocator, then runs the clearing-plan benches of each in
# alternating rounds, so that load from elsewhere on the machine falls on all three alike.
#
#     bash benches/allocators.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
out=$(mktemp -d)
trap 'cp Cargo.toml.allocators Cargo.toml 2>/dev/null; rm -f Cargo.toml.allocators; rm -rf "$out"' EXIT
cp Cargo.toml Cargo.toml.allocators

build() { # LABEL CARGO-ARGS...: build the surgery bench and keep its binary as $out/LABEL
    local label=$1
    shift
    local exe
    exe=$(cargo bench --bench surgery --no-run --quiet --message-format=json "$@" |
        python3 -c 'import json, sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable")][-1])')
    cp "$exe" "$out/$label"
}

build mimalloc-v2
sed -i 's/features = \["v2"\], optional = true/optional = true/' Cargo.toml
build mimalloc-v3
build system --no-default-features
cp Cargo.toml.allocators Cargo.toml

filter='clear: plan \(changed|all, with the clearing plan'
for round in $(seq "$rounds"); do
    for label in mimalloc-v2 mimalloc-v3 system; do
        echo "== $label, round $round"
        "$out/$label" --bench --warm-up-time 1 --measurement-time 4 --noplot "$filter" 2>&1 | grep -E '^(clear|all)|time:'
    done
done
