package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ClusterColocationProfileSpec says which pods a profile selects and what
// koord-manager's mutating webhook writes into them when they are created.
type ClusterColocationProfileSpec struct {
	// NamespaceSelector selects the namespaces whose pods the profile
	// applies to; absent or empty, every namespace (but kube-system and
	// Koord's own, which the webhook never intercepts).
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Selector selects pods by their labels; absent or empty, every pod.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Probability applies the profile to that share of the matching pods:
	// an integer percentage (0-100) or a string such as "25%". Absent, 100%.
	// +optional
	Probability *intstr.IntOrString `json:"probability,omitempty"`

	// QoSClass is written as the pod's koordinator.sh/qosClass label.
	// +kubebuilder:validation:Enum=LSE;LSR;LS;BE;SYSTEM;""
	// +optional
	QoSClass string `json:"qosClass,omitempty"`

	// PriorityClassName is written into the pod with the class's value
	// (spec.priority) and preemption policy; the class must exist.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// KoordinatorPriority is written as the pod's koordinator.sh/priority
	// label (the sub-priority within its band).
	// +optional
	KoordinatorPriority *int32 `json:"koordinatorPriority,omitempty"`

	// Labels are set on the pod.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are set on the pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// LabelKeysMapping copies labels: for each key k, the pod's label
	// LabelKeysMapping[k] is set to the value of its label k.
	// +optional
	LabelKeysMapping map[string]string `json:"labelKeysMapping,omitempty"`

	// AnnotationKeysMapping copies annotations the same way.
	// +optional
	AnnotationKeysMapping map[string]string `json:"annotationKeysMapping,omitempty"`

	// LabelSuffixes appends LabelSuffixes[k] to the value of the pod's label
	// k, where the pod has it.
	// +optional
	LabelSuffixes map[string]string `json:"labelSuffixes,omitempty"`

	// SchedulerName is written as the pod's spec.schedulerName.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Patch is a strategic merge patch applied to the pod last.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Patch runtime.RawExtension `json:"patch,omitempty"`
}

// ClusterColocationProfileStatus is empty, as Koordinator's is.
type ClusterColocationProfileStatus struct{}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ccp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="QoS",type=string,JSONPath=`.spec.qosClass`
// +kubebuilder:printcolumn:name="Priority",type=string,JSONPath=`.spec.priorityClassName`
// +kubebuilder:printcolumn:name="Probability",type=string,JSONPath=`.spec.probability`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterColocationProfile opts the pods it selects into co-location: at
// their creation koord-manager's webhook sets their QoS class, priority,
// scheduler, labels and annotations, and moves a BE or mid pod's cpu and
// memory to the batch or mid resources.
type ClusterColocationProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterColocationProfileSpec   `json:"spec,omitempty"`
	Status ClusterColocationProfileStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ClusterColocationProfileList is a list of ClusterColocationProfiles.
type ClusterColocationProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterColocationProfile `json:"items"`
}
