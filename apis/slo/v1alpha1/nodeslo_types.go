package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CPUSuppressPolicy is how koordlet squeezes BE pods when LS load rises.
// +kubebuilder:validation:Enum=cpuset;cfsQuota
type CPUSuppressPolicy string

const (
	CPUSetPolicy      CPUSuppressPolicy = "cpuset"
	CPUCfsQuotaPolicy CPUSuppressPolicy = "cfsQuota"
)

// ResourceThresholdStrategy bounds how much BE pods may take from a node.
type ResourceThresholdStrategy struct {
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// CPUSuppressThresholdPercent is the node CPU usage above which BE pods are suppressed.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CPUSuppressThresholdPercent *int64 `json:"cpuSuppressThresholdPercent,omitempty"`
	// CPUSuppressMinPercent is the share of the node BE pods keep even when suppressed.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CPUSuppressMinPercent *int64 `json:"cpuSuppressMinPercent,omitempty"`
	// +optional
	CPUSuppressPolicy CPUSuppressPolicy `json:"cpuSuppressPolicy,omitempty"`
	// MemoryEvictThresholdPercent is the node memory usage above which BE pods are evicted.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MemoryEvictThresholdPercent *int64 `json:"memoryEvictThresholdPercent,omitempty"`
	// MemoryEvictLowerPercent is where memory eviction stops.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MemoryEvictLowerPercent *int64 `json:"memoryEvictLowerPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CPUEvictBESatisfactionUpperPercent *int64 `json:"cpuEvictBESatisfactionUpperPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CPUEvictBESatisfactionLowerPercent *int64 `json:"cpuEvictBESatisfactionLowerPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CPUEvictBEUsageThresholdPercent *int64 `json:"cpuEvictBEUsageThresholdPercent,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	CPUEvictTimeWindowSeconds *int64 `json:"cpuEvictTimeWindowSeconds,omitempty"`
}

// CPUQOS tunes the kernel CPU scheduler for a QoS class.
type CPUQOS struct {
	// GroupIdentity is the cpu.bvt.us (group identity) value: 2 for LS, -1 for BE.
	// +optional
	GroupIdentity *int64 `json:"groupIdentity,omitempty"`
	// SchedIdle sets cpu.idle for the class's cgroups.
	// +optional
	SchedIdle *int64 `json:"schedIdle,omitempty"`
	// +optional
	CoreExpeller *bool `json:"coreExpeller,omitempty"`
}

// CPUQOSCfg enables CPUQOS for a class.
type CPUQOSCfg struct {
	// +optional
	Enable *bool `json:"enable,omitempty"`
	CPUQOS `json:",inline"`
}

// MemoryQOS tunes memcg for a QoS class.
type MemoryQOS struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinLimitPercent *int64 `json:"minLimitPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	LowLimitPercent *int64 `json:"lowLimitPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ThrottlingPercent *int64 `json:"throttlingPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	WmarkRatio *int64 `json:"wmarkRatio,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	WmarkScalePermill *int64 `json:"wmarkScalePermill,omitempty"`
	// +kubebuilder:validation:Minimum=-25
	// +kubebuilder:validation:Maximum=50
	// +optional
	WmarkMinAdj *int64 `json:"wmarkMinAdj,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	PriorityEnable *int64 `json:"priorityEnable,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=12
	// +optional
	Priority *int64 `json:"priority,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	OomKillGroup *int64 `json:"oomKillGroup,omitempty"`
}

// MemoryQOSCfg enables MemoryQOS for a class.
type MemoryQOSCfg struct {
	// +optional
	Enable    *bool `json:"enable,omitempty"`
	MemoryQOS `json:",inline"`
}

// ResctrlQOS partitions last-level cache and memory bandwidth.
type ResctrlQOS struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CATRangeStartPercent *int64 `json:"catRangeStartPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CATRangeEndPercent *int64 `json:"catRangeEndPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MBAPercent *int64 `json:"mbaPercent,omitempty"`
}

// ResctrlQOSCfg enables ResctrlQOS for a class.
type ResctrlQOSCfg struct {
	// +optional
	Enable     *bool `json:"enable,omitempty"`
	ResctrlQOS `json:",inline"`
}

// ResourceQOS is the QoS configuration of one class.
type ResourceQOS struct {
	// +optional
	CPUQOS *CPUQOSCfg `json:"cpuQOS,omitempty"`
	// +optional
	MemoryQOS *MemoryQOSCfg `json:"memoryQOS,omitempty"`
	// +optional
	ResctrlQOS *ResctrlQOSCfg `json:"resctrlQOS,omitempty"`
}

// CPUQOSPolicy picks the kernel mechanism behind CPUQOS.
// +kubebuilder:validation:Enum=groupIdentity;coreSched
type CPUQOSPolicy string

const (
	CPUQOSPolicyGroupIdentity CPUQOSPolicy = "groupIdentity"
	CPUQOSPolicyCoreSched     CPUQOSPolicy = "coreSched"
)

// ResourceQOSPolicies chooses mechanisms shared by all classes.
type ResourceQOSPolicies struct {
	// +optional
	CPUPolicy *CPUQOSPolicy `json:"cpuPolicy,omitempty"`
}

// ResourceQOSStrategy is the per-class QoS configuration of a node.
type ResourceQOSStrategy struct {
	// +optional
	Policies *ResourceQOSPolicies `json:"policies,omitempty"`
	// +optional
	LSRClass *ResourceQOS `json:"lsrClass,omitempty"`
	// +optional
	LSClass *ResourceQOS `json:"lsClass,omitempty"`
	// +optional
	BEClass *ResourceQOS `json:"beClass,omitempty"`
	// +optional
	CgroupRoot *ResourceQOS `json:"cgroupRoot,omitempty"`
}

// CPUBurstPolicy chooses how LS pods may burst above their CPU limit.
// +kubebuilder:validation:Enum=none;cpuBurstOnly;cfsQuotaBurstOnly;auto
type CPUBurstPolicy string

const (
	CPUBurstNone      CPUBurstPolicy = "none"
	CPUBurstOnly      CPUBurstPolicy = "cpuBurstOnly"
	CFSQuotaBurstOnly CPUBurstPolicy = "cfsQuotaBurstOnly"
	CPUBurstAuto      CPUBurstPolicy = "auto"
)

// CPUBurstConfig is the burst budget of a pod or node.
type CPUBurstConfig struct {
	// +optional
	Policy CPUBurstPolicy `json:"policy,omitempty"`
	// CPUBurstPercent is cpu.cfs_burst_us as a percentage of the limit.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CPUBurstPercent *int64 `json:"cpuBurstPercent,omitempty"`
	// CFSQuotaBurstPercent is how far the CFS quota may be raised above the limit.
	// +kubebuilder:validation:Minimum=100
	// +optional
	CFSQuotaBurstPercent *int64 `json:"cfsQuotaBurstPercent,omitempty"`
	// CFSQuotaBurstPeriodSeconds bounds how long a raised quota lasts; -1 is unbounded.
	// +kubebuilder:validation:Minimum=-1
	// +optional
	CFSQuotaBurstPeriodSeconds *int64 `json:"cfsQuotaBurstPeriodSeconds,omitempty"`
}

// CPUBurstStrategy is the node-wide CPU burst configuration.
type CPUBurstStrategy struct {
	CPUBurstConfig `json:",inline"`
	// SharePoolThresholdPercent is the share-pool usage above which bursting stops.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	SharePoolThresholdPercent *int64 `json:"sharePoolThresholdPercent,omitempty"`
}

// SystemStrategy tunes node-wide kernel knobs.
type SystemStrategy struct {
	// +optional
	MinFreeKbytesFactor *int64 `json:"minFreeKbytesFactor,omitempty"`
	// +optional
	WatermarkScaleFactor *int64 `json:"watermarkScaleFactor,omitempty"`
	// +optional
	MemcgReapBackGround *int64 `json:"memcgReapBackGround,omitempty"`
	// +optional
	TotalNetworkBandwidth resource.Quantity `json:"totalNetworkBandwidth,omitempty"`
}

// NodeSLOSpec is the QoS strategy koordlet enforces on one node.
type NodeSLOSpec struct {
	// +optional
	ResourceUsedThresholdWithBE *ResourceThresholdStrategy `json:"resourceUsedThresholdWithBE,omitempty"`
	// +optional
	ResourceQOSStrategy *ResourceQOSStrategy `json:"resourceQOSStrategy,omitempty"`
	// +optional
	CPUBurstStrategy *CPUBurstStrategy `json:"cpuBurstStrategy,omitempty"`
	// +optional
	SystemStrategy *SystemStrategy `json:"systemStrategy,omitempty"`
	// Extensions holds strategies beyond Koordinator's typed fields, each
	// under its own key: {"koord.sh/interferenceGuard": {...}} (see
	// InterferenceGuardStrategy). Keys Koord does not know are kept.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Extensions *runtime.RawExtension `json:"extensions,omitempty"`
}

// NodeSLOStatus is reserved for koordlet's view of what it applied.
type NodeSLOStatus struct{}

// NodeSLO is the QoS strategy for one node; its name is the node's.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type NodeSLO struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NodeSLOSpec `json:"spec,omitempty"`
	// +optional
	Status NodeSLOStatus `json:"status,omitempty"`
}

// NodeSLOList is a list of NodeSLO.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type NodeSLOList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeSLO `json:"items"`
}
