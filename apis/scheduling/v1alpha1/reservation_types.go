package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReservationControllerReference names the controller whose pods own a reservation.
type ReservationControllerReference struct {
	metav1.OwnerReference `json:",inline"`
	// Namespace of the controller's pods; empty matches pods in any namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ReservationOwner says which pods may use a reservation. The fields set in one
// entry must all match; a pod matching any entry is an owner.
type ReservationOwner struct {
	// Object is one specific pod.
	// +optional
	Object *corev1.ObjectReference `json:"object,omitempty"`
	// Controller matches pods controlled by this workload.
	// +optional
	Controller *ReservationControllerReference `json:"controller,omitempty"`
	// LabelSelector matches pods by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// ReservationAllocatePolicy says how owners may consume a reservation.
// +kubebuilder:validation:Enum="";Aligned;Restricted
type ReservationAllocatePolicy string

// IsAligned says whether owners take what the reservation has left and the
// rest of their requests from the node: Aligned, and the empty policy.
func (p ReservationAllocatePolicy) IsAligned() bool {
	return p == ReservationAllocatePolicyAligned || p == ReservationAllocatePolicyDefault
}

const (
	// ReservationAllocatePolicyDefault is Aligned, as Koordinator treats it
	// (it deprecated the empty policy in its favour).
	ReservationAllocatePolicyDefault ReservationAllocatePolicy = ""
	// ReservationAllocatePolicyAligned uses the reservation first, then free node resources.
	ReservationAllocatePolicyAligned ReservationAllocatePolicy = "Aligned"
	// ReservationAllocatePolicyRestricted keeps owners within the reserved resources.
	ReservationAllocatePolicyRestricted ReservationAllocatePolicy = "Restricted"
)

// ReservationSpec is what to reserve and for whom.
type ReservationSpec struct {
	// Template is scheduled like a pod: its requests, affinity and tolerations
	// decide the node and the amount held. The CRD checks it against the
	// pod template's schema, so that a malformed one is refused when written
	// rather than failing every reader's decoding. Fields a pod template
	// does not have are kept, not refused, as in Koordinator's schema (its
	// own sample sets template.namespace).
	// +kubebuilder:pruning:PreserveUnknownFields
	Template *corev1.PodTemplateSpec `json:"template"`
	// Owners are the pods allowed to use the reservation.
	// +kubebuilder:validation:MinItems=1
	Owners []ReservationOwner `json:"owners"`
	// TTL fails an unused reservation this long after creation (default 24h;
	// ignored when expires is set).
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
	// Expires fails an unused reservation at this time.
	// +optional
	Expires *metav1.Time `json:"expires,omitempty"`
	// AllocateOnce makes the first owner consume the whole reservation (default true).
	// +kubebuilder:default=true
	// +optional
	AllocateOnce *bool `json:"allocateOnce,omitempty"`
	// +optional
	AllocatePolicy ReservationAllocatePolicy `json:"allocatePolicy,omitempty"`
	// Unschedulable stops new owners from using the reservation.
	// +optional
	Unschedulable bool `json:"unschedulable,omitempty"`
	// Taints keep owners off unless they tolerate them.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// PreAllocation lets the reservation be placed on resources running pods
	// still hold, taking them over as those pods end (phase Waiting until then).
	// +optional
	PreAllocation bool `json:"preAllocation,omitempty"`
	// PreAllocationPolicy says which running pods may be pre-allocated.
	// +optional
	PreAllocationPolicy *PreAllocationPolicy `json:"preAllocationPolicy,omitempty"`
}

// PreAllocationPolicy says which running pods a reservation may pre-allocate.
type PreAllocationPolicy struct {
	// Mode is Default (the reservation's owners) or Cluster (cluster-wide selectors).
	// +kubebuilder:default="Default"
	// +optional
	Mode PreAllocationMode `json:"mode,omitempty"`
	// EnableMultiple allows pre-allocating more than one pod.
	// +optional
	EnableMultiple bool `json:"enableMultiple,omitempty"`
}

// PreAllocationMode picks the pods a reservation may pre-allocate.
// +kubebuilder:validation:Enum=Default;Cluster
type PreAllocationMode string

const (
	PreAllocationModeDefault PreAllocationMode = "Default"
	PreAllocationModeCluster PreAllocationMode = "Cluster"
)

// ReservationPhase is where a reservation is in its life.
// +kubebuilder:validation:Enum=Pending;Available;Waiting;Succeeded;Failed
type ReservationPhase string

const (
	// ReservationPending has not been scheduled yet.
	ReservationPending ReservationPhase = "Pending"
	// ReservationAvailable holds resources on status.nodeName.
	ReservationAvailable ReservationPhase = "Available"
	// ReservationWaiting is placed, but what it reserves is still held by the
	// pods it pre-allocated (Koordinator's preAllocation).
	ReservationWaiting ReservationPhase = "Waiting"
	// ReservationSucceeded was consumed by its owners.
	ReservationSucceeded ReservationPhase = "Succeeded"
	// ReservationFailed expired or lost its node.
	ReservationFailed ReservationPhase = "Failed"
)

// ReservationConditionType names a condition.
// +kubebuilder:validation:Enum=Scheduled;Ready
type ReservationConditionType string

const (
	ReservationConditionScheduled ReservationConditionType = "Scheduled"
	ReservationConditionReady     ReservationConditionType = "Ready"
)

// Condition reasons written by the scheduler and the lifecycle controller.
const (
	ReasonReservationScheduled     = "Scheduled"
	ReasonReservationUnschedulable = "Unschedulable"
	ReasonReservationAvailable     = "Available"
	ReasonReservationSucceeded     = "Succeeded"
	ReasonReservationExpired       = "Expired"
	ReasonReservationNodeDeleted   = "NodeDeleted"
)

// ReservationCondition is one observation about a reservation.
type ReservationCondition struct {
	Type   ReservationConditionType `json:"type"`
	Status corev1.ConditionStatus   `json:"status"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ReservationStatus is where a reservation stands.
type ReservationStatus struct {
	// +optional
	Phase ReservationPhase `json:"phase,omitempty"`
	// +optional
	Conditions []ReservationCondition `json:"conditions,omitempty"`
	// CurrentOwners are the pods using the reservation now.
	// +optional
	CurrentOwners []corev1.ObjectReference `json:"currentOwners,omitempty"`
	// NodeName is the node the reservation holds resources on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// Allocatable is what the reservation holds.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Allocated is what its owners use of it.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
}

// Reservation holds resources on a node for the pods listed as its owners.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=reserv
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="TTL",type=string,JSONPath=".spec.ttl"
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=".spec.expires"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:selectablefield:JSONPath=".status.nodeName"
type Reservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReservationSpec `json:"spec"`
	// +optional
	Status ReservationStatus `json:"status,omitempty"`
}

// ReservationList is a list of Reservation.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ReservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Reservation `json:"items"`
}
