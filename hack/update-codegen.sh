#!/usr/bin/env bash
# Regenerates deepcopy, conversion and defaulting functions, the clientset,
# listers and informers, and the CRD manifests. The generators are pinned in
# hack/tools/go.mod and run through `go tool`, so nothing is installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

MODULE=github.com/koord-project/koord
HEADER=hack/boilerplate.go.txt
tool() { go tool -modfile=hack/tools/go.mod "$@"; }

CRD_PKGS=("${MODULE}/apis/slo/v1alpha1" "${MODULE}/apis/colocation/v1alpha1" "${MODULE}/apis/analysis/v1alpha1" "${MODULE}/apis/scheduling/v1alpha1" "${MODULE}/apis/schedulingsigs/v1alpha1")
ARGS_PKGS=("${MODULE}/apis/config" "${MODULE}/apis/config/v1" "${MODULE}/apis/descheduler/v1alpha2")

# Stale output can keep the inputs from type-checking; start from none.
find apis -name "zz_generated.*.go" -delete

tool deepcopy-gen --go-header-file "$HEADER" --output-file zz_generated.deepcopy.go "${CRD_PKGS[@]}" "${ARGS_PKGS[@]}"
tool conversion-gen --go-header-file "$HEADER" --output-file zz_generated.conversion.go "${MODULE}/apis/config/v1"
tool defaulter-gen --go-header-file "$HEADER" --output-file zz_generated.defaults.go "${MODULE}/apis/config/v1"

rm -rf pkg/client/clientset pkg/client/listers pkg/client/informers
tool client-gen --go-header-file "$HEADER" --clientset-name versioned --input-base "" \
	$(printf -- '--input %s ' "${CRD_PKGS[@]}") \
	--output-dir pkg/client/clientset --output-pkg "${MODULE}/pkg/client/clientset"
tool lister-gen --go-header-file "$HEADER" \
	--output-dir pkg/client/listers --output-pkg "${MODULE}/pkg/client/listers" "${CRD_PKGS[@]}"
tool informer-gen --go-header-file "$HEADER" \
	--versioned-clientset-package "${MODULE}/pkg/client/clientset/versioned" \
	--listers-package "${MODULE}/pkg/client/listers" \
	--output-dir pkg/client/informers --output-pkg "${MODULE}/pkg/client/informers" "${CRD_PKGS[@]}"

rm -f manifests/crds/*.yaml
tool controller-gen crd:crdVersions=v1 paths=./apis/slo/... paths=./apis/colocation/... paths=./apis/analysis/... output:crd:artifacts:config=manifests/crds
# The Reservation's template is checked against the whole pod template's
# schema; with its field descriptions that CRD alone would be 640 KB, more
# than kubectl's client-side apply can record (256 KB), so it carries none.
# generateEmbeddedObjectMeta: the template's metadata (name, namespace,
# labels, annotations) is kept, as Koordinator's schema keeps it.
tool controller-gen crd:crdVersions=v1,maxDescLen=0,generateEmbeddedObjectMeta=true paths=./apis/scheduling/... output:crd:artifacts:config=manifests/crds
# Koordinator's PodGroup and ElasticQuota, in the group its users' manifests name.
tool controller-gen crd:crdVersions=v1 paths=./apis/schedulingsigs/... output:crd:artifacts:config=manifests/crds

# Third-party CRDs Koord reads when asked (topologySource: NodeResourceTopology),
# generated from the Go types of the module Koord builds against. The NRT CRD
# serves v1alpha1 (what Koordinator's koordlet writes) and v1alpha2.
rm -f manifests/thirdparty/*.yaml
tool controller-gen crd:crdVersions=v1 \
	paths=github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha1 \
	paths=github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2 \
	paths=sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1 \
	output:crd:artifacts:config=manifests/thirdparty

# Every quantity's pattern is bounded (at most 30 digits either side of the
# point, a two-digit exponent): controller-gen's allows any exponent, and
# resource.ParseQuantity spends seconds on one like 1e-9999999 in the watch
# of every component that reads the object. The same bound as
# extension.QuantityPattern (a test holds them equal).
unbounded='^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'
bounded='^(\+|-)?(([0-9]{1,30}(\.[0-9]{0,30})?)|(\.[0-9]{1,30}))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?[0-9]{1,2}))?$'
UNBOUNDED="$unbounded" BOUNDED="$bounded" perl -pi -e 's/\Q$ENV{UNBOUNDED}\E/$ENV{BOUNDED}/g' manifests/crds/*.yaml manifests/thirdparty/*.yaml

# The Helm chart installs exactly the shipped manifests: copy them in (a chart
# cannot read files outside its directory).
chart=deploy/charts/koord/files
rm -rf "$chart" && mkdir -p "$chart/crds" "$chart/rbac" "$chart/policies"
cp manifests/crds/*.yaml manifests/thirdparty/*.yaml "$chart/crds/"
cp manifests/rbac/*.yaml "$chart/rbac/"
cp manifests/policies/*.yaml "$chart/policies/"
cp manifests/priorityclasses.yaml manifests/scheduler/koord-scheduler-config.yaml "$chart/"
