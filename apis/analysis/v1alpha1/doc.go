// Package v1alpha1 holds the analysis.koordinator.sh/v1alpha1 API:
// Recommendation, what a workload's containers should request, from what
// they use, and RecommendationProfile, which creates Recommendations for
// whole namespaces and workload kinds. Recommendation's schema is
// Koordinator's, so its users' objects apply unchanged; the fields Koord adds
// (bounds, current requests, the checkpoint, the update policy) sit beside
// Koordinator's and are marked so.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=analysis.koordinator.sh
// +groupGoName=Analysis
package v1alpha1
