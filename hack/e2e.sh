#!/usr/bin/env bash
# make e2e: a local cluster (hack/cluster), Koord's images imported, the
# chart installed, the suite run, the chart uninstalled and checked, the
# cluster torn down -- the teardown also when anything fails.
#
# Needs root (the cluster's kubelet), $HELM and $IMAGE_TAG (the Makefile
# passes both) and the images in _output/images (make images).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
: "${HELM:?set HELM to the helm binary (make helm)}"
: "${IMAGE_TAG:?set IMAGE_TAG to the tag of the images in _output/images}"
CLUSTER=hack/cluster/cluster.sh
OUT=_output
export KUBECONFIG=$ROOT/$OUT/cluster/kubeconfig
RELEASE=koord
# Koordinator's own chart values file (v1.8) is the base: its
# installation.namespace is where everything goes, and test/e2e/values.yaml
# adds only what this local cluster needs.
KOORDINATOR_VALUES=test/compat/testdata/koordinator-v1.8.0-values.yaml
NS=koordinator-system
E2E_FLAGS=${E2E_FLAGS:-}
# Failed specs with the cluster state each recorded, printed after teardown.
export E2E_FAILURES=$ROOT/$OUT/e2e-failures.txt

log() { printf '[e2e] %s\n' "$*" >&2; }

# STAGE names the step running, for the last lines of a failed run: a CI
# log is read from its end, and its end is what teardown prints last.
STAGE="setting up"
PODS=$ROOT/$OUT/e2e-pods.txt

teardown() {
	rc=$?
	if ((rc != 0)); then
		log "failed (exit $rc) while $STAGE; cluster state before teardown:"
		"$OUT/cluster/bin/kubectl" get pods -A -o wide >"$PODS" 2>&1 || true
		sed 's/^/  /' "$PODS" >&2
		"$OUT/cluster/bin/kubectl" get events -n "$NS" --sort-by=.lastTimestamp 2>&1 | tail -n 25 | sed 's/^/  /' >&2 || true
		for c in koord-scheduler koord-manager koord-descheduler koordlet; do
			log "--- last log lines of $c"
			"$OUT/cluster/bin/kubectl" logs -n "$NS" -l "app.kubernetes.io/name=$c" --tail=30 --prefix 2>&1 | sed 's/^/  /' >&2 || true
		done
	fi
	"$CLUSTER" down || true
	if [[ -s $E2E_FAILURES ]]; then
		log "what failed:"
		sed 's/^/  /' "$E2E_FAILURES" >&2
	fi
	if ((rc != 0)); then
		log "the Koord pods when it failed:"
		grep -E "^NAMESPACE|^$NS " "$PODS" 2>/dev/null | sed 's/^/  /' >&2 || true
		log "FAILED (exit $rc) while $STAGE"
	fi
	exit "$rc"
}

# A cluster left by an interrupted run is taken down first.
"$CLUSTER" down >/dev/null 2>&1 || true
rm -f "$E2E_FAILURES"
log "free disk: $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') (kubelet taints the node DiskPressure under 512Mi)"
log "building the suite"
go test -c -o "$OUT/e2e.test" ./test/e2e
trap teardown EXIT
STAGE="starting the cluster"
"$CLUSTER" up
STAGE="importing the images"
"$CLUSTER" import "$OUT"/images/{koord-scheduler,koordlet,koord-manager,koord-descheduler,sleeper,burner,ticker}.tar
log "helm install $RELEASE (tag $IMAGE_TAG)"
STAGE="installing the chart (helm install --wait)"
"$HELM" install "$RELEASE" deploy/charts/koord --namespace "$NS" --create-namespace --wait --timeout 5m \
	--values "$KOORDINATOR_VALUES" --values test/e2e/values.yaml --set-string imageTag="$IMAGE_TAG" \
	--set koordlet.kubeletRootDir="$ROOT/$OUT/cluster/state/kubelet"
log "running the suite"
STAGE="running the suite"
(cd test/e2e && E2E_NAMESPACE=$NS E2E_IMAGE_TAG=$IMAGE_TAG "$ROOT/$OUT/e2e.test" \
	-ginkgo.label-filter='!uninstall' -ginkgo.timeout=30m -ginkgo.v $E2E_FLAGS)
log "helm uninstall $RELEASE"
STAGE="uninstalling the chart"
"$HELM" uninstall "$RELEASE" --namespace "$NS" --wait --timeout 5m
STAGE="checking the uninstall"
(cd test/e2e && E2E_PHASE=uninstall E2E_NAMESPACE=$NS "$ROOT/$OUT/e2e.test" -ginkgo.label-filter='uninstall' $E2E_FLAGS)
log "passed"
