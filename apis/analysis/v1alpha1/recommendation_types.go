package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RecommendationTargetType is what a Recommendation profiles.
type RecommendationTargetType string

const (
	// RecommendationTargetWorkload profiles the pods of one workload.
	RecommendationTargetWorkload RecommendationTargetType = "workload"
	// RecommendationPodSelector profiles the pods a selector selects.
	RecommendationPodSelector RecommendationTargetType = "podSelector"
)

// RecommendationTarget is a workload or a set of pods.
type RecommendationTarget struct {
	// Type is workload or podSelector.
	// +kubebuilder:validation:Enum=workload;podSelector
	Type RecommendationTargetType `json:"type"`
	// Workload is the workload (Type workload) whose pods are profiled: a
	// Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, or any
	// kind that owns its pods directly or through a ReplicaSet or a Job.
	// +optional
	Workload *CrossVersionObjectReference `json:"workload,omitempty"`
	// PodSelector selects the pods (Type podSelector), in the
	// Recommendation's namespace.
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
}

// CrossVersionObjectReference names an object of any version.
type CrossVersionObjectReference struct {
	// Kind of the workload, such as Deployment.
	Kind string `json:"kind"`
	// Name of the workload, in the Recommendation's namespace.
	Name string `json:"name"`
	// APIVersion of the workload, such as apps/v1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
}

// UpdateMode says whether Koord changes the target's pods.
type UpdateMode string

const (
	// UpdateModeOff only recommends (the default).
	UpdateModeOff UpdateMode = "Off"
	// UpdateModeInPlace resizes running pods to the recommendation through
	// the pods/resize subresource, without restarting them.
	UpdateModeInPlace UpdateMode = "InPlace"
)

// RecommendationUpdatePolicy is Koord's opt-in to act on the recommendation.
type RecommendationUpdatePolicy struct {
	// UpdateMode is Off (default) or InPlace.
	// +kubebuilder:validation:Enum=Off;InPlace
	// +optional
	UpdateMode UpdateMode `json:"updateMode,omitempty"`
	// MinAllowed is the least a container's requests are resized to.
	// +optional
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`
	// MaxAllowed is the most a container's requests are resized to.
	// +optional
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`
}

// RecommendationSpec is what to profile.
type RecommendationSpec struct {
	// Target is the workload or the pods to profile.
	Target RecommendationTarget `json:"target"`
	// UpdatePolicy (Koord) resizes the target's pods to the recommendation
	// when its updateMode is InPlace.
	// +optional
	UpdatePolicy *RecommendationUpdatePolicy `json:"updatePolicy,omitempty"`
}

// RecommendedPodStatus is the recommendation for each container of the
// target's pods.
type RecommendedPodStatus struct {
	// ContainerStatuses holds one recommendation per container name.
	// +optional
	ContainerStatuses []RecommendedContainerStatus `json:"containerStatuses,omitempty"`
}

// RecommendedContainerStatus is one container's recommendation.
type RecommendedContainerStatus struct {
	// ContainerName is the container's name in the pod spec.
	// +optional
	ContainerName string `json:"containerName,omitempty"`
	// Resources are the recommended requests (the target).
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// LowerBound (Koord): requests below it are likely to starve the
	// container.
	// +optional
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`
	// UpperBound (Koord): requests above it are likely wasted. It is wide
	// while the history is short.
	// +optional
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`
	// CurrentRequests (Koord) are the requests of the target's newest pod.
	// +optional
	CurrentRequests corev1.ResourceList `json:"currentRequests,omitempty"`
	// RequestsPercentOfTarget (Koord) is CurrentRequests as a percentage of
	// Resources: above 100 the container is over-provisioned, below 100
	// under-provisioned.
	// +optional
	RequestsPercentOfTarget map[corev1.ResourceName]int64 `json:"requestsPercentOfTarget,omitempty"`
}

// HistogramCheckpoint is a decaying histogram, serialised: the weights of
// the non-empty buckets scaled to integers.
type HistogramCheckpoint struct {
	// ReferenceTimestamp is the time the weights are decayed to.
	// +optional
	ReferenceTimestamp metav1.Time `json:"referenceTimestamp,omitempty"`
	// BucketWeights maps a bucket's index to its scaled weight.
	// +optional
	BucketWeights map[string]uint32 `json:"bucketWeights,omitempty"`
	// TotalWeight is the sum of the weights before scaling, a decimal
	// number (a string: CRDs keep clear of floats).
	// +optional
	TotalWeight string `json:"totalWeight,omitempty"`
}

// ContainerCheckpoint (Koord) is the recommender's state for one container
// name, so that a restarted koord-manager resumes from it.
type ContainerCheckpoint struct {
	ContainerName string `json:"containerName"`
	// Version of the serialisation; a checkpoint of another version is
	// dropped.
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	CPUHistogram HistogramCheckpoint `json:"cpuHistogram,omitempty"`
	// +optional
	MemoryHistogram HistogramCheckpoint `json:"memoryHistogram,omitempty"`
	// +optional
	FirstSampleStart metav1.Time `json:"firstSampleStart,omitempty"`
	// +optional
	LastSampleStart metav1.Time `json:"lastSampleStart,omitempty"`
	// +optional
	TotalSamplesCount int `json:"totalSamplesCount,omitempty"`
}

// RecommendationConditionReady is the condition that says whether there is
// enough history for a recommendation.
const RecommendationConditionReady = "Ready"

// RecommendationStatus is the latest recommendation.
type RecommendationStatus struct {
	// PodStatus holds the recommendation of each container.
	// +optional
	PodStatus *RecommendedPodStatus `json:"podStatus,omitempty"`
	// UpdateTime is when it was computed.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
	// Conditions: Ready says whether there is enough history for a
	// recommendation, and why not.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Checkpoints (Koord) are the recommender's histograms, written every
	// checkpoint interval.
	// +optional
	Checkpoints []ContainerCheckpoint `json:"checkpoints,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=recom
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.target.type`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.target.workload.kind`
// +kubebuilder:printcolumn:name="Name",type=string,JSONPath=`.spec.target.workload.name`
// +kubebuilder:printcolumn:name="LastUpdateTime",type=date,JSONPath=`.status.updateTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Container",type=string,JSONPath=`.status.podStatus.containerStatuses[0].containerName`
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.podStatus.containerStatuses[0].resources.cpu`
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.status.podStatus.containerStatuses[0].resources.memory`
// +kubebuilder:printcolumn:name="CPU-Requested%",type=integer,JSONPath=`.status.podStatus.containerStatuses[0].requestsPercentOfTarget.cpu`,priority=1
// +kubebuilder:printcolumn:name="Memory-Requested%",type=integer,JSONPath=`.status.podStatus.containerStatuses[0].requestsPercentOfTarget.memory`,priority=1

// Recommendation profiles a workload (or a set of pods) and recommends
// each container's requests from what it uses.
type Recommendation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RecommendationSpec   `json:"spec,omitempty"`
	Status RecommendationStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// RecommendationList is a list of Recommendations.
type RecommendationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Recommendation `json:"items"`
}

// RecommendationProfileSpec selects the workloads to profile.
type RecommendationProfileSpec struct {
	// ControllerKinds are the workload kinds profiled: Deployment,
	// StatefulSet, DaemonSet, ReplicaSet (those no Deployment owns), Job
	// (those no CronJob owns) and CronJob.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Enum=Deployment;StatefulSet;DaemonSet;ReplicaSet;Job;CronJob
	ControllerKinds []string `json:"controllerKinds"`
	// EnabledNamespaces limits profiling to these namespaces; empty means
	// every namespace.
	// +optional
	EnabledNamespaces []string `json:"enabledNamespaces,omitempty"`
	// DisabledNamespaces are never profiled.
	// +optional
	DisabledNamespaces []string `json:"disabledNamespaces,omitempty"`
	// NamespaceSelector, when set, also requires the namespace's labels to
	// match.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// UpdatePolicy is given to every Recommendation the profile creates.
	// +optional
	UpdatePolicy *RecommendationUpdatePolicy `json:"updatePolicy,omitempty"`
}

// RecommendationProfileStatus counts what the profile created.
type RecommendationProfileStatus struct {
	// Recommendations is how many Recommendations the profile owns.
	// +optional
	Recommendations int32 `json:"recommendations,omitempty"`
	// ObservedGeneration is the generation they were made for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=recomprofile
// +kubebuilder:printcolumn:name="Kinds",type=string,JSONPath=`.spec.controllerKinds`
// +kubebuilder:printcolumn:name="Recommendations",type=integer,JSONPath=`.status.recommendations`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// RecommendationProfile (Koord) turns profiling on for every workload of
// the given kinds in the selected namespaces: koord-manager creates a
// Recommendation for each and deletes it with its workload, or when the
// profile no longer selects it.
type RecommendationProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RecommendationProfileSpec   `json:"spec,omitempty"`
	Status RecommendationProfileStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// RecommendationProfileList is a list of RecommendationProfiles.
type RecommendationProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RecommendationProfile `json:"items"`
}
