#!/usr/bin/env bash
# bench-compare.sh BASE REPETITIONS OUT: test/perf's BenchmarkPaired for the
# commit BASE and for the work tree, in one run, their repetitions
# interleaved (base then head, then head then base, ...), so that both meet
# the same machine drift. Stock and Koord profiles only (KOORD_PERF_NO_FLOOR):
# the profiles BASE's harness ran, since a third profile changes what each
# finds in the CPU's caches and with it the ratio. Writes OUT/compare.txt,
# each run's results after a "commit: base|head" line (hack/benchdoc reads it).
set -euo pipefail
base=${1:?base commit} reps=${2:-3} out=${3:?output directory}
root=$(git rev-parse --show-toplevel)
mkdir -p "$out"
out=$(cd "$out" && pwd)
wt=$(mktemp -d)
git -C "$root" worktree add --detach "$wt" "$base" >/dev/null
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
(cd "$wt/test/perf" && go test -c -o "$out/perf-base.test" .)
(cd "$root/test/perf" && go test -c -o "$out/perf-head.test" .)
{
	echo "base: $(git -C "$root" rev-parse --short "$base")"
	echo "head: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo -dirty)"
} > "$out/compare.txt"
for rep in $(seq 1 "$reps"); do
	order="base head"
	if ((rep % 2 == 0)); then order="head base"; fi
	for which in $order; do
		dir=$root
		if [ "$which" = base ]; then dir=$wt; fi
		echo "commit: $which" >> "$out/compare.txt"
		(cd "$dir/test/perf" && KOORD_PERF_NO_FLOOR=1 "$out/perf-$which.test" -test.run XXX \
			-test.bench BenchmarkPaired -test.benchtime 1x) |
			grep -E '^(Benchmark|goos|goarch|pkg|cpu)' | tee -a "$out/compare.txt"
	done
done
