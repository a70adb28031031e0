// Package v1alpha1 holds the scheduling.sigs.k8s.io/v1alpha1 API that
// Koordinator serves and its users' manifests name: PodGroup (gang
// scheduling) and ElasticQuota (namespace quotas). The shape is the one
// Koordinator ships (scheduler-plugins' before it moved to
// scheduling.x-k8s.io), so those manifests apply unchanged.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=scheduling.sigs.k8s.io
// +groupGoName=SchedulingSigs
package v1alpha1
