package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupLabel on a pod names the PodGroup it belongs to.
const PodGroupLabel = "pod-group." + GroupName

// PodGroupPhase is where a gang is in its life.
// +kubebuilder:validation:Enum=Pending;PreScheduling;Scheduling;Scheduled;Running;Finished;Failed;Unknown
type PodGroupPhase string

const (
	PodGroupPending       PodGroupPhase = "Pending"
	PodGroupPreScheduling PodGroupPhase = "PreScheduling"
	PodGroupScheduling    PodGroupPhase = "Scheduling"
	PodGroupScheduled     PodGroupPhase = "Scheduled"
	PodGroupRunning       PodGroupPhase = "Running"
	PodGroupFinished      PodGroupPhase = "Finished"
	PodGroupFailed        PodGroupPhase = "Failed"
	PodGroupUnknown       PodGroupPhase = "Unknown"
)

// PodGroupSpec is what the gang needs before any of it runs.
type PodGroupSpec struct {
	// MinMember is how many pods must be placeable together.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinMember int32 `json:"minMember,omitempty"`
	// MinResources is the least the gang needs in all.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`
	// ScheduleTimeoutSeconds bounds how long members wait for each other.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// PodGroupStatus counts the gang's members.
type PodGroupStatus struct {
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`
	// OccupiedBy is the workload that owns the gang.
	// +optional
	OccupiedBy string `json:"occupiedBy,omitempty"`
	// +optional
	Scheduled int32 `json:"scheduled,omitempty"`
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	ScheduleStartTime metav1.Time `json:"scheduleStartTime,omitempty"`
}

// PodGroup is a gang: pods scheduled all together or not at all.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=pg
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PodGroupSpec `json:"spec,omitempty"`
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupList is a list of PodGroup.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

// ElasticQuotaSpec bounds a namespace's (or quota tree node's) resources:
// min is guaranteed, max is the ceiling when the cluster has room.
type ElasticQuotaSpec struct {
	// +optional
	Min corev1.ResourceList `json:"min,omitempty"`
	// +optional
	Max corev1.ResourceList `json:"max,omitempty"`
}

// ElasticQuotaStatus is what the quota's pods use.
type ElasticQuotaStatus struct {
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
}

// ElasticQuota is an elastic resource quota.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=eq;eqs
// +kubebuilder:subresource:status
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"
type ElasticQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ElasticQuotaSpec `json:"spec,omitempty"`
	// +optional
	Status ElasticQuotaStatus `json:"status,omitempty"`
}

// ElasticQuotaList is a list of ElasticQuota.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ElasticQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ElasticQuota `json:"items"`
}
