// Package v1alpha1 holds Koordinator's config.koordinator.sh/v1alpha1 API:
// ClusterColocationProfile, the object that opts pods into co-location at
// admission (koord-manager's pod webhook applies it). The schema is
// Koordinator's, so its users' profiles apply unchanged.
//
// The package is named for what the group holds: apis/config is taken by
// koord-scheduler's plugin args (kubescheduler.config.k8s.io).
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=config.koordinator.sh
// +groupGoName=Config
package v1alpha1
