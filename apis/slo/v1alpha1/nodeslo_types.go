package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/koord-project/koord/apis/extension"
)

// CPUSuppressPolicy is how koordlet squeezes BE pods when LS load rises.
// +kubebuilder:validation:Enum=cpuset;cfsQuota
type CPUSuppressPolicy string

const (
	CPUSetPolicy      CPUSuppressPolicy = "cpuset"
	CPUCfsQuotaPolicy CPUSuppressPolicy = "cfsQuota"
)

// CPUEvictPolicy is what BE CPU eviction measures BE satisfaction against.
// +kubebuilder:validation:Enum=evictByRealLimit;evictByAllocatable
type CPUEvictPolicy string

const (
	// EvictByRealLimitPolicy compares BE usage with the CPUs BE pods may
	// really use now (after suppression).
	EvictByRealLimitPolicy CPUEvictPolicy = "evictByRealLimit"
	// EvictByAllocatablePolicy compares BE usage with the node's batch-cpu.
	EvictByAllocatablePolicy CPUEvictPolicy = "evictByAllocatable"
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
	// MemoryAllocatableEvictThresholdPercent and MemoryAllocatableEvictLowerPercent
	// bound BE memory as a share of batch-memory allocatable.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemoryAllocatableEvictThresholdPercent *int64 `json:"memoryAllocatableEvictThresholdPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemoryAllocatableEvictLowerPercent *int64 `json:"memoryAllocatableEvictLowerPercent,omitempty"`
	// CPUEvictThresholdPercent and CPUEvictLowerPercent bound node CPU usage
	// for BE eviction.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CPUEvictThresholdPercent *int64 `json:"cpuEvictThresholdPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CPUEvictLowerPercent *int64 `json:"cpuEvictLowerPercent,omitempty"`
	// CPUAllocatableEvictThresholdPercent and CPUAllocatableEvictLowerPercent
	// bound BE CPU as a share of batch-cpu allocatable.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CPUAllocatableEvictThresholdPercent *int64 `json:"cpuAllocatableEvictThresholdPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	CPUAllocatableEvictLowerPercent *int64 `json:"cpuAllocatableEvictLowerPercent,omitempty"`
	// CPUEvictPolicy is what BE satisfaction is measured against.
	// +optional
	CPUEvictPolicy CPUEvictPolicy `json:"cpuEvictPolicy,omitempty"`
	// EvictEnabledPriorityThreshold: only pods below this priority are evicted.
	// +optional
	EvictEnabledPriorityThreshold *int32 `json:"evictEnabledPriorityThreshold,omitempty"`
	// AllocatableEvictPriorityThreshold: only pods below this priority are
	// evicted by the allocatable-based policies.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=7999
	// +optional
	AllocatableEvictPriorityThreshold *int32 `json:"allocatableEvictPriorityThreshold,omitempty"`
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
	// PageCacheEnable, PageCacheLimitPercent, PageCacheLimitSize and
	// PageCacheReclaimSync limit a class's page cache (Alibaba Cloud Linux).
	// +optional
	PageCacheEnable *bool `json:"pageCacheEnable,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	PageCacheLimitPercent *int64 `json:"pageCacheLimitPercent,omitempty"`
	// +optional
	PageCacheLimitSize *int64 `json:"pageCacheLimitSize,omitempty"`
	// +optional
	PageCacheReclaimSync *bool `json:"pageCacheReclaimSync,omitempty"`
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

// BlockType is what a BlockCfg names: a device, an LVM volume group or a
// pod's volume.
// +kubebuilder:validation:Enum=device;volumegroup;podvolume
type BlockType string

const (
	BlockTypeDevice      BlockType = "device"
	BlockTypeVolumeGroup BlockType = "volumegroup"
	BlockTypePodVolume   BlockType = "podvolume"
)

// IOCfg throttles and weighs one block device for a class (blk-throttle and
// blk-iocost).
type IOCfg struct {
	// +kubebuilder:validation:Minimum=0
	// +optional
	ReadIOPS *int64 `json:"readIOPS,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	WriteIOPS *int64 `json:"writeIOPS,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	ReadBPS *int64 `json:"readBPS,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	WriteBPS *int64 `json:"writeBPS,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	IOWeightPercent *int64 `json:"ioWeightPercent,omitempty"`
	// +optional
	ReadLatency *int64 `json:"readLatency,omitempty"`
	// +optional
	WriteLatency *int64 `json:"writeLatency,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ReadLatencyPercent *int64 `json:"readLatencyPercent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	WriteLatencyPercent *int64 `json:"writeLatencyPercent,omitempty"`
	// +optional
	EnableUserModel *bool `json:"enableUserModel,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	ModelReadBPS *int64 `json:"modelReadBPS,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	ModelWriteBPS *int64 `json:"modelWriteBPS,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	ModelReadSeqIOPS *int64 `json:"modelReadSeqIOPS,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	ModelWriteSeqIOPS *int64 `json:"modelWriteSeqIOPS,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	ModelReadRandIOPS *int64 `json:"modelReadRandIOPS,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	ModelWriteRandIOPS *int64 `json:"modelWriteRandIOPS,omitempty"`
}

// BlockCfg is the IO configuration of one block device.
type BlockCfg struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	BlockType BlockType `json:"type,omitempty"`
	// +optional
	IOCfg IOCfg `json:"ioCfg,omitempty"`
}

// BlkIOQOS is a class's IO configuration, per block device.
type BlkIOQOS struct {
	// +optional
	Blocks []*BlockCfg `json:"blocks,omitempty"`
}

// BlkIOQOSCfg enables BlkIOQOS for a class.
type BlkIOQOSCfg struct {
	// +optional
	Enable   *bool `json:"enable,omitempty"`
	BlkIOQOS `json:",inline"`
}

// NetworkQOS is a class's network bandwidth: a quantity ("50M") or a
// percentage of the node's totalNetworkBandwidth ("30%").
type NetworkQOS struct {
	// +optional
	IngressRequest *intstr.IntOrString `json:"ingressRequest,omitempty"`
	// +optional
	IngressLimit *intstr.IntOrString `json:"ingressLimit,omitempty"`
	// +optional
	EgressRequest *intstr.IntOrString `json:"egressRequest,omitempty"`
	// +optional
	EgressLimit *intstr.IntOrString `json:"egressLimit,omitempty"`
}

// NetworkQOSCfg enables NetworkQOS for a class.
type NetworkQOSCfg struct {
	// +optional
	Enable     *bool `json:"enable,omitempty"`
	NetworkQOS `json:",inline"`
}

// ResourceQOS is the QoS configuration of one class.
type ResourceQOS struct {
	// +optional
	CPUQOS *CPUQOSCfg `json:"cpuQOS,omitempty"`
	// +optional
	MemoryQOS *MemoryQOSCfg `json:"memoryQOS,omitempty"`
	// +optional
	BlkIOQOS *BlkIOQOSCfg `json:"blkioQOS,omitempty"`
	// +optional
	ResctrlQOS *ResctrlQOSCfg `json:"resctrlQOS,omitempty"`
	// +optional
	NetworkQOS *NetworkQOSCfg `json:"networkQOS,omitempty"`
}

// CPUQOSPolicy picks the kernel mechanism behind CPUQOS.
// +kubebuilder:validation:Enum=groupIdentity;coreSched
type CPUQOSPolicy string

const (
	CPUQOSPolicyGroupIdentity CPUQOSPolicy = "groupIdentity"
	CPUQOSPolicyCoreSched     CPUQOSPolicy = "coreSched"
)

// NETQOSPolicy picks the mechanism behind NetworkQOS.
// +kubebuilder:validation:Enum=tc;terway-qos
type NETQOSPolicy string

const (
	NETQOSPolicyTC        NETQOSPolicy = "tc"
	NETQOSPolicyTerwayQos NETQOSPolicy = "terway-qos"
)

// ResourceQOSPolicies chooses mechanisms shared by all classes.
type ResourceQOSPolicies struct {
	// +optional
	CPUPolicy *CPUQOSPolicy `json:"cpuPolicy,omitempty"`
	// +optional
	NETQOSPolicy *NETQOSPolicy `json:"netQOSPolicy,omitempty"`
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
	// SystemClass is the QoS of system pods and host applications.
	// +optional
	SystemClass *ResourceQOS `json:"systemClass,omitempty"`
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
	// SchedGroupIdentityEnabled, SchedIdleSaverWmark and SchedFeatures are
	// Alibaba Cloud Linux scheduler switches.
	// +optional
	SchedGroupIdentityEnabled *int64 `json:"schedGroupIdentityEnabled,omitempty"`
	// +optional
	SchedIdleSaverWmark *int64 `json:"schedIdleSaverWmark,omitempty"`
	// +optional
	SchedFeatures map[string]bool `json:"schedFeatures,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	PageCacheLimitEnabled *int64 `json:"pageCacheLimitEnabled,omitempty"`
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
	// HostApplications are processes outside pods (run by systemd, say) and
	// the QoS class they get.
	// +optional
	HostApplications []HostApplicationSpec `json:"hostApplications,omitempty"`
}

// HostApplicationSpec is one application running outside pods.
type HostApplicationSpec struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Priority extension.PriorityClass `json:"priority,omitempty"`
	// +optional
	QoS extension.QoSClass `json:"qos,omitempty"`
	// +optional
	CgroupPath *CgroupPath `json:"cgroupPath,omitempty"`
	// +optional
	Strategy *HostApplicationStrategy `json:"strategy,omitempty"`
}

// HostApplicationStrategy is reserved (empty in Koordinator too).
type HostApplicationStrategy struct{}

// CgroupBaseType is the cgroup a host application's path is relative to.
// +kubebuilder:validation:Enum=CgroupRoot;Kubepods;KubepodsBurstable;KubepodsBesteffort
type CgroupBaseType string

// CgroupPath locates a host application's cgroup.
type CgroupPath struct {
	// +optional
	Base CgroupBaseType `json:"base,omitempty"`
	// +optional
	ParentDir string `json:"parentDir,omitempty"`
	// +optional
	RelativePath string `json:"relativePath,omitempty"`
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
