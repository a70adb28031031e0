#!/usr/bin/env bash
# make e2e-kind: the e2e suite on a kind cluster, for machines with Docker.
# Not run in CI (its machine has no Docker engine). Same steps as hack/e2e.sh:
# cluster, images, helm install, suite, helm uninstall, uninstall checks,
# cluster deleted (also on failure).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
: "${HELM:?set HELM to the helm binary (make helm)}"
: "${IMAGE_TAG:?set IMAGE_TAG to the tag of the images in _output/images}"
KIND=${KIND:-go run sigs.k8s.io/kind@v0.33.0}
NAME=${KIND_CLUSTER:-koord-e2e}
NS=koord-system
OUT=_output
export KUBECONFIG=$ROOT/$OUT/kind.kubeconfig

command -v docker >/dev/null || { echo "e2e-kind needs Docker (kind runs its nodes as containers)" >&2; exit 1; }
go test -c -o "$OUT/e2e.test" ./test/e2e
$KIND create cluster --name "$NAME" --config hack/kind/config.yaml --kubeconfig "$KUBECONFIG" --wait 3m
trap '$KIND delete cluster --name "$NAME"' EXIT
for img in koord-scheduler koordlet koord-manager koord-descheduler sleeper burner ticker; do
	$KIND load image-archive --name "$NAME" "$OUT/images/$img.tar"
done
"$HELM" install koord deploy/charts/koord --namespace "$NS" --create-namespace --wait --timeout 5m \
	--values test/e2e/values.yaml --set-string imageTag="$IMAGE_TAG"
(cd test/e2e && E2E_NAMESPACE=$NS E2E_IMAGE_TAG=$IMAGE_TAG "$ROOT/$OUT/e2e.test" -ginkgo.label-filter='!uninstall' -ginkgo.timeout=30m)
"$HELM" uninstall koord --namespace "$NS" --wait --timeout 5m
(cd test/e2e && E2E_PHASE=uninstall E2E_NAMESPACE=$NS "$ROOT/$OUT/e2e.test" -ginkgo.label-filter='uninstall')
