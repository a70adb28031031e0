package v1alpha2

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	componentbaseconfigv1alpha1 "k8s.io/component-base/config/v1alpha1"
)

// Group and version of the configuration (Koordinator's: no domain).
const (
	GroupName = "descheduler"
	Version   = "v1alpha2"
)

// DeschedulerConfiguration configures koord-descheduler.
type DeschedulerConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	// LeaderElection: one replica deschedules at a time (lease
	// koord-descheduler in the release's namespace by default).
	LeaderElection componentbaseconfigv1alpha1.LeaderElectionConfiguration `json:"leaderElection"`
	// ClientConnection is Koordinator's; Koord uses its qps and burst.
	ClientConnection componentbaseconfigv1alpha1.ClientConnectionConfiguration `json:"clientConnection"`
	// EnableProfiling and EnableContentionProfiling are Koordinator's
	// (pprof); accepted and reported.
	componentbaseconfigv1alpha1.DebuggingConfiguration `json:",inline"`
	// HealthzBindAddress and MetricsBindAddress are Koordinator's; Koord
	// takes both from flags (--health-addr, --metrics-addr) and reports them.
	HealthzBindAddress *string `json:"healthzBindAddress,omitempty"`
	MetricsBindAddress *string `json:"metricsBindAddress,omitempty"`
	// DeschedulingInterval is the time between rounds (default 2m; 0 runs one round and exits).
	DeschedulingInterval metav1.Duration `json:"deschedulingInterval,omitempty"`
	// DryRun logs and records what would be moved and moves nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// Profiles are the descheduling profiles.
	Profiles []DeschedulerProfile `json:"profiles,omitempty"`
	// NodeSelector limits every profile to these nodes.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// MaxNoOfPodsToEvictPerNode, ...PerNamespace and ...Total bound what
	// one round moves.
	MaxNoOfPodsToEvictPerNode      *uint `json:"maxNoOfPodsToEvictPerNode,omitempty"`
	MaxNoOfPodsToEvictPerNamespace *uint `json:"maxNoOfPodsToEvictPerNamespace,omitempty"`
	MaxNoOfPodsToEvictTotal        *uint `json:"maxNoOfPodsToEvictTotal,omitempty"`
}

// DeschedulerProfile is a set of plugins and their args.
type DeschedulerProfile struct {
	Name         string                `json:"name,omitempty"`
	PluginConfig []PluginConfig        `json:"pluginConfig,omitempty"`
	Plugins      *Plugins              `json:"plugins,omitempty"`
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
}

// Plugins are the plugins of each extension point.
type Plugins struct {
	Deschedule PluginSet `json:"deschedule,omitempty"`
	Balance    PluginSet `json:"balance,omitempty"`
	Evict      PluginSet `json:"evict,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
}

// PluginSet enables and disables plugins ("*" disables every default).
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin.
type Plugin struct {
	Name string `json:"name,omitempty"`
}

// PluginConfig is one plugin's args, decoded by its name
// (LowNodeLoadArgs, MigrationControllerArgs).
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// PriorityThreshold is a priority value or a PriorityClass name.
type PriorityThreshold struct {
	Value *int32 `json:"value,omitempty"`
	Name  string `json:"name,omitempty"`
}

// Namespaces include or exclude namespaces.
type Namespaces struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

type (
	// Percentage is a share of a node's allocatable, 0-100.
	Percentage float64
	// ResourceThresholds are percentages by resource.
	ResourceThresholds map[corev1.ResourceName]Percentage
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LowNodeLoadArgs configure LowNodeLoad: nodes over HighThresholds of
// measured usage (NodeMetric) for AnomalyCondition.ConsecutiveAbnormalities
// rounds lose pods to nodes under LowThresholds.
type LowNodeLoadArgs struct {
	metav1.TypeMeta `json:",inline"`
	// Paused stops the plugin.
	Paused *bool `json:"paused,omitempty"`
	// DryRun: this plugin only says what it would move.
	DryRun *bool `json:"dryRun,omitempty"`
	// NumberOfNodes: act only when more nodes than this are under the low
	// thresholds.
	NumberOfNodes *int32 `json:"numberOfNodes,omitempty"`
	// NodeMetricExpirationSeconds: a node whose NodeMetric is older is
	// neither hot nor a destination (default 180).
	NodeMetricExpirationSeconds *int64 `json:"nodeMetricExpirationSeconds,omitempty"`
	// EvictableNamespaces: pods of other namespaces count in usage but are
	// not moved.
	EvictableNamespaces *Namespaces `json:"evictableNamespaces,omitempty"`
	// NodeSelector limits the plugin to these nodes.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// PodSelectors: when set, only pods one of them selects are moved.
	PodSelectors []LowNodeLoadPodSelector `json:"podSelectors,omitempty"`
	// NodeFit: move a pod only when a node under the low thresholds can
	// take it (affinity, taints, resources, load). Default true.
	NodeFit *bool `json:"nodeFit,omitempty"`
	// UseDeviationThresholds: the thresholds are deviations from the mean
	// usage of the nodes.
	UseDeviationThresholds *bool `json:"useDeviationThresholds,omitempty"`
	// HighThresholds and LowThresholds are percentages of allocatable.
	HighThresholds ResourceThresholds `json:"highThresholds,omitempty"`
	LowThresholds  ResourceThresholds `json:"lowThresholds,omitempty"`
	// ProdHighThresholds and ProdLowThresholds are Koordinator's
	// thresholds on prod pods' usage; accepted and reported.
	ProdHighThresholds ResourceThresholds `json:"prodHighThresholds,omitempty"`
	ProdLowThresholds  ResourceThresholds `json:"prodLowThresholds,omitempty"`
	// ResourceWeights weigh resources when ranking (default 1 each).
	ResourceWeights map[corev1.ResourceName]int64 `json:"resourceWeights,omitempty"`
	// AnomalyCondition: how many rounds over the high thresholds make a
	// node hot (default 5), and under them make it normal again (default 3).
	AnomalyCondition *LoadAnomalyCondition `json:"anomalyCondition,omitempty"`
	// DetectorCacheTimeout: a node's count is forgotten after this long
	// unseen (default 5m).
	DetectorCacheTimeout *metav1.Duration `json:"detectorCacheTimeout,omitempty"`
	// NodePools give groups of nodes their own thresholds.
	NodePools []LowNodeLoadNodePool `json:"nodePools,omitempty"`
}

// LowNodeLoadNodePool is a group of nodes with its own thresholds (unset
// fields come from the args).
type LowNodeLoadNodePool struct {
	Name                   string                        `json:"name,omitempty"`
	NodeSelector           *metav1.LabelSelector         `json:"nodeSelector,omitempty"`
	UseDeviationThresholds bool                          `json:"useDeviationThresholds,omitempty"`
	HighThresholds         ResourceThresholds            `json:"highThresholds,omitempty"`
	LowThresholds          ResourceThresholds            `json:"lowThresholds,omitempty"`
	ProdHighThresholds     ResourceThresholds            `json:"prodHighThresholds,omitempty"`
	ProdLowThresholds      ResourceThresholds            `json:"prodLowThresholds,omitempty"`
	ResourceWeights        map[corev1.ResourceName]int64 `json:"resourceWeights,omitempty"`
	AnomalyCondition       *LoadAnomalyCondition         `json:"anomalyCondition,omitempty"`
}

// LowNodeLoadPodSelector selects pods to move.
type LowNodeLoadPodSelector struct {
	Name     string                `json:"name,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// LoadAnomalyCondition says when a node is hot.
type LoadAnomalyCondition struct {
	// Timeout is Koordinator's expiry of the hot state; accepted and reported.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// ConsecutiveAbnormalities: rounds over the high thresholds before the
	// node is hot.
	ConsecutiveAbnormalities uint32 `json:"consecutiveAbnormalities,omitempty"`
	// ConsecutiveNormalities: rounds under them before it is normal again.
	ConsecutiveNormalities uint32 `json:"consecutiveNormalities,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// MigrationControllerArgs configure the PodMigrationJob controller, and
// which pods may be moved at all (it is the profile's evictor and filter).
type MigrationControllerArgs struct {
	metav1.TypeMeta `json:",inline"`
	// DryRun: jobs create no Reservation and evict nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// MaxConcurrentReconciles is how many jobs progress at once (default 1).
	MaxConcurrentReconciles *int32 `json:"maxConcurrentReconciles,omitempty"`
	// EvictFailedBarePods, EvictAllBarePods, EvictLocalStoragePods,
	// EvictSystemCriticalPods and IgnorePvcPods widen or narrow what may be
	// moved (DaemonSet and mirror pods never are).
	EvictFailedBarePods     bool `json:"evictFailedBarePods"`
	EvictAllBarePods        bool `json:"evictAllBarePods"`
	EvictLocalStoragePods   bool `json:"evictLocalStoragePods"`
	EvictSystemCriticalPods bool `json:"evictSystemCriticalPods"`
	IgnorePvcPods           bool `json:"ignorePvcPods"`
	// PriorityThreshold: only pods below it are moved.
	PriorityThreshold *PriorityThreshold `json:"priorityThreshold,omitempty"`
	// LabelSelector: only pods it selects are moved.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Namespaces: only pods of these (or not of these) namespaces move.
	Namespaces *Namespaces `json:"namespaces,omitempty"`
	// NodeFit and NodeSelector are Koordinator's; accepted and reported
	// (LowNodeLoad's nodeFit decides).
	NodeFit      bool   `json:"nodeFit,omitempty"`
	NodeSelector string `json:"nodeSelector,omitempty"`
	// SkipEvictionGates turns named limits off (MaxMigratingGlobally,
	// MaxMigratingPerNode, MaxMigratingPerNamespace, MaxMigratingPerWorkload,
	// MaxUnavailablePerWorkload, ExpectedReplicas).
	SkipEvictionGates []string `json:"skipEvictionGates,omitempty"`
	// Limits on jobs in progress at once.
	MaxMigratingGlobally      *int32              `json:"maxMigratingGlobally,omitempty"`
	MaxMigratingPerNode       *int32              `json:"maxMigratingPerNode,omitempty"`
	MaxMigratingPerNamespace  *int32              `json:"maxMigratingPerNamespace,omitempty"`
	MaxMigratingPerWorkload   *intstr.IntOrString `json:"maxMigratingPerWorkload,omitempty"`
	MaxUnavailablePerWorkload *intstr.IntOrString `json:"maxUnavailablePerWorkload,omitempty"`
	// SkipCheckExpectedReplicas allows moving a workload's pods when its
	// replicas equal the limits above.
	SkipCheckExpectedReplicas *bool `json:"skipCheckExpectedReplicas,omitempty"`
	// ObjectLimiters bound moves of one workload within a window.
	ObjectLimiters map[string]MigrationObjectLimiter `json:"objectLimiters,omitempty"`
	// DefaultJobMode (ReservationFirst) and DefaultJobTTL (5m) of new jobs.
	DefaultJobMode string           `json:"defaultJobMode,omitempty"`
	DefaultJobTTL  *metav1.Duration `json:"defaultJobTTL,omitempty"`
	// SchedulerNames that place Reservations (default koord-scheduler).
	SchedulerNames []string `json:"schedulerNames,omitempty"`
	// EvictQPS (default 10) and EvictBurst (default 1) pace evictions.
	EvictQPS   *Float64OrString `json:"evictQPS,omitempty"`
	EvictBurst *int32           `json:"evictBurst,omitempty"`
	// EvictionPolicy is Eviction (the Eviction API, default) or Delete.
	EvictionPolicy string `json:"evictionPolicy,omitempty"`
	// DefaultDeleteOptions are passed to the eviction or delete.
	DefaultDeleteOptions *metav1.DeleteOptions `json:"defaultDeleteOptions,omitempty"`
	// ArbitrationArgs are Koordinator's; accepted and reported.
	ArbitrationArgs *ArbitrationArgs `json:"arbitrationArgs,omitempty"`
}

// MigrationObjectLimiter: at most MaxMigrating moves of one object (a
// workload) within Duration.
type MigrationObjectLimiter struct {
	Duration     metav1.Duration     `json:"duration,omitempty"`
	MaxMigrating *intstr.IntOrString `json:"maxMigrating,omitempty"`
	Burst        int                 `json:"burst,omitempty"`
}

// ArbitrationArgs are Koordinator's arbitration settings.
type ArbitrationArgs struct {
	Enabled  bool             `json:"enabled,omitempty"`
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// Float64OrString is a number written as a number or a string ("10").
type Float64OrString float64

// UnmarshalJSON takes 10, 10.5 or "10".
func (f *Float64OrString) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		*f = Float64OrString(v)
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%s is not a number", b)
	}
	*f = Float64OrString(v)
	return nil
}
