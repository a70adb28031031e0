#!/usr/bin/env bash
# Fails when generated files are stale, a Go file is not gofmt-clean, go vet
# complains, or go.mod/go.sum are not tidy. Run `make generate` (or gofmt -w,
# go mod tidy) to fix what it reports. It leaves the tree as it found it:
# what it regenerates and tidies is put back, so a failed check changes no
# file (the fix is yours to run and review).
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
generated=(apis pkg/client manifests/crds manifests/thirdparty deploy/charts/koord/files)

# Regenerate into the tree, compare with what was there, put it back.
snapshot=$(mktemp -d) taken=0
restore() {
	# Only a whole snapshot is put back: one cut short holds less than the tree.
	if [ "$taken" = 1 ]; then
		for p in "${generated[@]}"; do rm -rf "$p"; mkdir -p "$p"; cp -a "$snapshot/$p/." "$p/"; done
		cp "$snapshot/go.mod" go.mod; cp "$snapshot/go.sum" go.sum
	fi
	rm -rf "$snapshot"
}
trap restore EXIT
for p in "${generated[@]}"; do mkdir -p "$snapshot/$p"; cp -a "$p/." "$snapshot/$p/"; done
cp go.mod "$snapshot/go.mod"; cp go.sum "$snapshot/go.sum"
taken=1
./hack/update-codegen.sh >/dev/null 2>&1 || { echo "verify: code generation failed; run hack/update-codegen.sh"; exit 1; }
for p in "${generated[@]}"; do
	if ! diff -r "$snapshot/$p" "$p" >/tmp/koord-verify.diff; then
		echo "verify: generated files under $p are stale; run 'make generate':"
		head -40 /tmp/koord-verify.diff
		fail=1
	fi
done
rm -f /tmp/koord-verify.diff

unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^hack/tools/') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "verify: gofmt would change:"; echo "$unformatted"; fail=1
fi

if ! go vet ./...; then
	echo "verify: go vet failed"; fail=1
fi

go mod tidy
if ! diff -q "$snapshot/go.mod" go.mod >/dev/null || ! diff -q "$snapshot/go.sum" go.sum >/dev/null; then
	echo "verify: go.mod/go.sum were not tidy; run 'go mod tidy'"; fail=1
fi

[ "$fail" = 0 ] && echo "verify: ok"
exit "$fail"
