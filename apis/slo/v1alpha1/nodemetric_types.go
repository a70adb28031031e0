package v1alpha1

import (
	"github.com/koord-project/koord/apis/extension"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AggregationType names a statistic over a window of samples.
// +kubebuilder:validation:Enum=avg;p50;p90;p95;p99
type AggregationType string

const (
	AVG AggregationType = "avg"
	P50 AggregationType = "p50"
	P90 AggregationType = "p90"
	P95 AggregationType = "p95"
	P99 AggregationType = "p99"
)

// AggregationTypes lists every AggregationType, in increasing severity.
var AggregationTypes = []AggregationType{AVG, P50, P90, P95, P99}

// ResourceMap is a usage sample: {"resources": {"cpu": "1500m", "memory": "2Gi"}}.
type ResourceMap struct {
	// +optional
	corev1.ResourceList `json:"resources,omitempty"`
}

// AggregatePolicy lists the windows koordlet aggregates node usage over.
type AggregatePolicy struct {
	// +kubebuilder:validation:items:Type=string
	// +kubebuilder:validation:items:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	Durations []metav1.Duration `json:"durations,omitempty"`
}

// NodeMetricCollectPolicy tells koordlet how often to report and how to aggregate.
type NodeMetricCollectPolicy struct {
	// AggregateDurationSeconds is the window each reported usage averages over.
	// +kubebuilder:validation:Minimum=1
	// +optional
	AggregateDurationSeconds *int64 `json:"aggregateDurationSeconds,omitempty"`
	// ReportIntervalSeconds is how often koordlet updates the status.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ReportIntervalSeconds *int64 `json:"reportIntervalSeconds,omitempty"`
	// NodeAggregatePolicy lists the windows of aggregatedNodeUsages.
	// +optional
	NodeAggregatePolicy *AggregatePolicy `json:"nodeAggregatePolicy,omitempty"`
	// NodeMemoryCollectPolicy is whether memory usage counts page cache.
	// +optional
	NodeMemoryCollectPolicy *NodeMemoryCollectPolicy `json:"nodeMemoryCollectPolicy,omitempty"`
}

// NodeMemoryCollectPolicy is how koordlet counts a node's memory usage.
// +kubebuilder:validation:Enum=usageWithoutPageCache;usageWithHotPageCache;usageWithPageCache
type NodeMemoryCollectPolicy string

const (
	UsageWithoutPageCache NodeMemoryCollectPolicy = "usageWithoutPageCache"
	UsageWithHotPageCache NodeMemoryCollectPolicy = "usageWithHotPageCache"
	UsageWithPageCache    NodeMemoryCollectPolicy = "usageWithPageCache"
)

// NodeMetricSpec is the collection policy for one node.
type NodeMetricSpec struct {
	// +optional
	CollectPolicy *NodeMetricCollectPolicy `json:"metricCollectPolicy,omitempty"`
}

// AggregatedUsage is the node usage over one window, per statistic.
type AggregatedUsage struct {
	// +optional
	Usage map[AggregationType]ResourceMap `json:"usage,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	// +optional
	Duration metav1.Duration `json:"duration,omitempty"`
}

// NUMANodeUsage is the usage of the CPUs and memory of one NUMA node.
type NUMANodeUsage struct {
	// +kubebuilder:validation:Minimum=0
	NUMANodeID int32 `json:"numaNodeID"`
	// +optional
	NodeUsage ResourceMap `json:"nodeUsage,omitempty"`
	// +optional
	SystemUsage ResourceMap `json:"systemUsage,omitempty"`
}

// NodeMetricInfo is the usage of the whole node.
type NodeMetricInfo struct {
	// NodeUsage is the latest usage of the node, pods and system together.
	// +optional
	NodeUsage ResourceMap `json:"nodeUsage,omitempty"`
	// AggregatedNodeUsages are statistics of node usage over longer windows.
	// +optional
	AggregatedNodeUsages []AggregatedUsage `json:"aggregatedNodeUsages,omitempty"`
	// SystemUsage is what the node uses outside pods (kernel, kubelet, daemons).
	// +optional
	SystemUsage ResourceMap `json:"systemUsage,omitempty"`
	// AggregatedSystemUsages are statistics of system usage over longer windows.
	// +optional
	AggregatedSystemUsages []AggregatedUsage `json:"aggregatedSystemUsages,omitempty"`
	// NUMAUsages splits NodeUsage by NUMA node.
	// +optional
	NUMAUsages []NUMANodeUsage `json:"numaUsages,omitempty"`
}

// PodMetricInfo is the usage of one pod on the node.
type PodMetricInfo struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// +optional
	PodUsage ResourceMap `json:"podUsage,omitempty"`
	// Priority is the pod's priority band (koord-prod, koord-mid, koord-batch, koord-free).
	// +optional
	Priority extension.PriorityClass `json:"priority,omitempty"`
	// QoS is the pod's Koordinator QoS class (LSE, LSR, LS, BE, SYSTEM).
	// +optional
	QoS extension.QoSClass `json:"qos,omitempty"`
	// ContainersMetric (Koord) is each running container's usage over the
	// last report interval: cpu is the average, memory the peak working set.
	// koord-manager's recommender learns each container's needs from it.
	// +optional
	ContainersMetric []ContainerMetricInfo `json:"containersMetric,omitempty"`
	// Extensions carries measurements beyond CPU and memory, such as run-queue latency.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Extensions *runtime.RawExtension `json:"extensions,omitempty"`
}

// ContainerMetricInfo is one container's usage.
type ContainerMetricInfo struct {
	// Name is the container's name in the pod spec.
	Name string `json:"name"`
	// +optional
	ContainerUsage ResourceMap `json:"containerUsage,omitempty"`
}

// NodeMetricStatus is what koordlet measured.
type NodeMetricStatus struct {
	// UpdateTime is when koordlet last reported.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
	// +optional
	NodeMetric *NodeMetricInfo `json:"nodeMetric,omitempty"`
	// +optional
	PodsMetric []*PodMetricInfo `json:"podsMetric,omitempty"`
	// HostApplicationMetric is the usage of applications outside pods.
	// +optional
	HostApplicationMetric []*HostApplicationMetricInfo `json:"hostApplicationMetric,omitempty"`
	// ProdReclaimableMetric is what prod pods requested but are predicted
	// not to use: the source of mid resources.
	// +optional
	ProdReclaimableMetric *ReclaimableMetric `json:"prodReclaimableMetric,omitempty"`
	// ProdPeakMetric is the predicted peak usage of prod pods.
	// +optional
	ProdPeakMetric *PeakMetric `json:"prodPeakMetric,omitempty"`
}

// HostApplicationMetricInfo is the usage of one application outside pods.
type HostApplicationMetricInfo struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Usage ResourceMap `json:"usage,omitempty"`
	// +optional
	Priority extension.PriorityClass `json:"priority,omitempty"`
	// +optional
	QoS extension.QoSClass `json:"qos,omitempty"`
}

// ReclaimableMetric is an amount of resources that can be reclaimed.
type ReclaimableMetric struct {
	// +optional
	Resource ResourceMap `json:"resource,omitempty"`
}

// PeakMetric is a predicted peak usage.
type PeakMetric struct {
	// +optional
	Resource ResourceMap `json:"resource,omitempty"`
}

// NodeMetric is the measured usage of one node and its pods; its name is the node's.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=".status.updateTime"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type NodeMetric struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NodeMetricSpec `json:"spec,omitempty"`
	// +optional
	Status NodeMetricStatus `json:"status,omitempty"`
}

// NodeMetricList is a list of NodeMetric.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type NodeMetricList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeMetric `json:"items"`
}
