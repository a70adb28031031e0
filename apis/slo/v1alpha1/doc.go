// Package v1alpha1 holds the slo.koordinator.sh/v1alpha1 API: NodeMetric (what
// koordlet measured on a node) and NodeSLO (what koordlet should enforce there).
// Field names and JSON match Koordinator's so existing objects work unchanged.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=slo.koordinator.sh
package v1alpha1
