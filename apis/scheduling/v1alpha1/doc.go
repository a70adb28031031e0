// Package v1alpha1 holds the scheduling.koordinator.sh/v1alpha1 API: Reservation,
// capacity held on a node for the pods that own it.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=scheduling.koordinator.sh
package v1alpha1
