#!/usr/bin/env bash
# Runs each fuzz target for FUZZ_SECONDS seconds (default 30; or the first argument), starting
# from the committed corpus in fuzz/corpus/<target>. New inputs go to a scratch corpus under
# fuzz/target (gitignored) so that a run never changes the committed one; `cargo fuzz cmin`
# and a copy into fuzz/corpus are how interesting inputs get committed.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain. Exits non-zero on the
# first crash, leaving the input in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-${FUZZ_SECONDS:-30}}"
targets=(line_parser index_pages open_log operations context_edit)

# The checks create temp dirs and redb files (which fsync on commit): tmpfs keeps that cheap.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR=/dev/shm
fi

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
fi

for target in "${targets[@]}"; do
  scratch="target/corpus/$target"
  mkdir -p "$scratch" "artifacts/$target"
  echo "== fuzz $target for ${seconds}s"
  # -s none: no sanitizer (the code under test is safe Rust); coverage guidance only.
  # stderr is kept to the summary lines to keep CI logs short.
  cargo "${toolchain[@]}" fuzz run -s none "$target" "$scratch" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    2> >(grep -E '^(stat::|#[0-9]+.*DONE|==|SUMMARY|INFO: (Loaded|-max_len))|panicked|Test unit written' >&2)
done
echo "== fuzz: all targets ran ${seconds}s without a crash"
