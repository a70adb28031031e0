package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodMigrationJobSpec says which pod to move and how.
type PodMigrationJobSpec struct {
	// Paused keeps the job from starting or going on until it is unset.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// TTL fails the job if it has not succeeded this long after creation
	// (koord-descheduler's defaultJobTTL when unset, 5 minutes).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
	// Mode is ReservationFirst (default: a Reservation for the replacement
	// must be Available on another node before the pod is evicted) or
	// EvictDirectly.
	// +kubebuilder:validation:Enum=ReservationFirst;EvictDirectly;""
	// +optional
	Mode PodMigrationJobMode `json:"mode,omitempty"`
	// PodRef is the pod to move.
	PodRef *corev1.ObjectReference `json:"podRef"`
	// ReservationOptions say which Reservation holds the replacement's place.
	// +optional
	ReservationOptions *PodMigrateReservationOptions `json:"reservationOptions,omitempty"`
	// DeleteOptions are passed to the eviction of the pod.
	// +optional
	DeleteOptions *metav1.DeleteOptions `json:"deleteOptions,omitempty"`
}

// PodMigrationJobMode is how a job moves its pod.
type PodMigrationJobMode string

const (
	PodMigrationJobModeReservationFirst PodMigrationJobMode = "ReservationFirst"
	PodMigrationJobModeEvictionDirectly PodMigrationJobMode = "EvictDirectly"
)

// PodMigrateReservationOptions name an existing Reservation or describe the
// one the job creates.
type PodMigrateReservationOptions struct {
	// ReservationRef is the Reservation the replacement uses: set by the
	// user to use an existing one, or by the controller once it created one.
	// +optional
	ReservationRef *corev1.ObjectReference `json:"reservationRef,omitempty"`
	// Template, when set, is the Reservation the controller creates (its
	// owners and template default to the pod's controller and the pod).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Template *ReservationTemplateSpec `json:"template,omitempty"`
	// PreemptionOptions are Koordinator's, reserved and empty.
	// +optional
	PreemptionOptions *PodMigrationJobPreemptionOptions `json:"preemptionOptions,omitempty"`
}

// ReservationTemplateSpec is a Reservation to create: its metadata and spec.
type ReservationTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec ReservationSpec `json:"spec,omitempty"`
}

// PodMigrationJobPreemptionOptions is reserved (Koordinator's, empty).
type PodMigrationJobPreemptionOptions struct{}

// PodMigrationJobStatus is where the job stands.
type PodMigrationJobStatus struct {
	// Phase is Pending, Running, Succeeded, Failed or Aborted.
	// +optional
	Phase PodMigrationJobPhase `json:"phase,omitempty"`
	// Status is the step in progress (e.g. ReservationCreated).
	// +optional
	Status string `json:"status,omitempty"`
	// Reason is why the job is in its phase, in CamelCase.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says it for people.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions are the steps the job went through.
	// +optional
	Conditions []PodMigrationJobCondition `json:"conditions,omitempty"`
	// NodeName is the node the replacement was given.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// PodRef is the replacement pod.
	// +optional
	PodRef *corev1.ObjectReference `json:"podRef,omitempty"`
	// PreemptedPodsRef are Koordinator's (preemption is not done by Koord).
	// +optional
	PreemptedPodsRef []corev1.ObjectReference `json:"preemptedPodsRef,omitempty"`
	// PreemptedPodsReservations are Koordinator's (as above).
	// +optional
	PreemptedPodsReservations []PodMigrationJobPreemptedReservation `json:"preemptedPodsReservation,omitempty"`
}

// PodMigrationJobPreemptedReservation is Koordinator's record of a
// Reservation made for a preempted pod.
type PodMigrationJobPreemptedReservation struct {
	Namespace       string                   `json:"namespace,omitempty"`
	Name            string                   `json:"name,omitempty"`
	NodeName        string                   `json:"nodeName,omitempty"`
	Phase           string                   `json:"phase,omitempty"`
	PreemptedPodRef *corev1.ObjectReference  `json:"preemptedPodRef,omitempty"`
	PodsRef         []corev1.ObjectReference `json:"podsRef,omitempty"`
}

// PodMigrationJobCondition is one step of a job.
type PodMigrationJobCondition struct {
	Type   PodMigrationJobConditionType   `json:"type"`
	Status PodMigrationJobConditionStatus `json:"status"`
	// +nullable
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// +nullable
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// PodMigrationJobPhase is a job's phase.
type PodMigrationJobPhase string

const (
	PodMigrationJobPending   PodMigrationJobPhase = "Pending"
	PodMigrationJobRunning   PodMigrationJobPhase = "Running"
	PodMigrationJobSucceeded PodMigrationJobPhase = "Succeeded"
	PodMigrationJobFailed    PodMigrationJobPhase = "Failed"
	PodMigrationJobAborted   PodMigrationJobPhase = "Aborted"
)

// PodMigrationJobConditionType is a step of a job.
type PodMigrationJobConditionType string

const (
	PodMigrationJobConditionReservationCreated             PodMigrationJobConditionType = "ReservationCreated"
	PodMigrationJobConditionReservationScheduled           PodMigrationJobConditionType = "ReservationScheduled"
	PodMigrationJobConditionPreemption                     PodMigrationJobConditionType = "Preemption"
	PodMigrationJobConditionEviction                       PodMigrationJobConditionType = "Eviction"
	PodMigrationJobConditionPodScheduled                   PodMigrationJobConditionType = "PodScheduled"
	PodMigrationJobConditionReservationPodBoundReservation PodMigrationJobConditionType = "PodBoundReservation"
	PodMigrationJobConditionBoundPodReady                  PodMigrationJobConditionType = "BoundPodReady"
	PodMigrationJobConditionReservationBound               PodMigrationJobConditionType = "ReservationBound"
)

// Reasons a job gives (Koordinator's).
const (
	PodMigrationJobReasonTimeout                   = "Timeout"
	PodMigrationJobReasonFailedCreateReservation   = "FailedCreateReservation"
	PodMigrationJobReasonReservationExpired        = "ReservationExpired"
	PodMigrationJobReasonUnschedulable             = "Unschedulable"
	PodMigrationJobReasonForbiddenMigratePod       = "ForbiddenMigratePod"
	PodMigrationJobReasonMissingPod                = "MissingPod"
	PodMigrationJobReasonMissingReservation        = "MissingReservation"
	PodMigrationJobReasonEvicting                  = "Evicting"
	PodMigrationJobReasonFailedEvict               = "FailedEvict"
	PodMigrationJobReasonEvictComplete             = "EvictComplete"
	PodMigrationJobReasonWaitForPodBindReservation = "WaitForPodBindReservation"
)

// PodMigrationJobConditionStatus is True, False or Unknown.
type PodMigrationJobConditionStatus string

const (
	PodMigrationJobConditionStatusTrue    PodMigrationJobConditionStatus = "True"
	PodMigrationJobConditionStatusFalse   PodMigrationJobConditionStatus = "False"
	PodMigrationJobConditionStatusUnknown PodMigrationJobConditionStatus = "Unknown"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=pmj
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="Reservation",type=string,JSONPath=`.spec.reservationOptions.reservationRef.name`
// +kubebuilder:printcolumn:name="PodNamespace",type=string,JSONPath=`.spec.podRef.namespace`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.podRef.name`
// +kubebuilder:printcolumn:name="NewPod",type=string,JSONPath=`.status.podRef.name`
// +kubebuilder:printcolumn:name="TTL",type=string,JSONPath=`.spec.ttl`

// PodMigrationJob moves one pod off its node: in ReservationFirst mode a
// Reservation for its replacement is made Available on another node before
// the pod is evicted (through the Eviction API, so PodDisruptionBudgets
// hold), and nothing is evicted when no node can take it.
type PodMigrationJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodMigrationJobSpec   `json:"spec,omitempty"`
	Status PodMigrationJobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PodMigrationJobList is a list of PodMigrationJobs.
type PodMigrationJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodMigrationJob `json:"items"`
}
