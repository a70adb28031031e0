package v1alpha2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Names of the plugins Koord runs.
const (
	LowNodeLoadName         = "LowNodeLoad"
	MigrationControllerName = "MigrationController"
)

// Job modes and eviction policies (Koordinator's values).
const (
	JobModeReservationFirst = "ReservationFirst"
	JobModeEvictDirectly    = "EvictDirectly"
	EvictionPolicyEviction  = "Eviction"
	EvictionPolicyDelete    = "Delete"
)

// Profile is one profile as koord-descheduler runs it: the plugins enabled
// after defaults, and their decoded, defaulted and validated args.
type Profile struct {
	Name         string
	NodeSelector *metav1.LabelSelector
	// LowNodeLoad is set when the plugin is enabled at balance.
	LowNodeLoad *LowNodeLoadArgs
	// MigrationController is always set: it is the profile's evictor.
	MigrationController *MigrationControllerArgs
}

// Config is a loaded configuration.
type Config struct {
	DeschedulerConfiguration
	Run []Profile
	// NotActedOn lists what the file sets that Koord accepts and does not
	// act on (Koordinator's plugins and fields Koord does not have).
	NotActedOn []string
}

// Load reads a configuration file: strictly (a field no Koordinator version
// has is an error naming it), with Koordinator's defaults, validated.
func Load(data []byte) (*Config, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	c := &Config{}
	if err := strict(js, &c.DeschedulerConfiguration); err != nil {
		return nil, err
	}
	if c.APIVersion != GroupName+"/"+Version || c.Kind != "DeschedulerConfiguration" {
		return nil, fmt.Errorf("apiVersion %q kind %q: want %s/%s DeschedulerConfiguration", c.APIVersion, c.Kind, GroupName, Version)
	}
	if c.DeschedulingInterval.Duration == 0 && !bytes.Contains(js, []byte(`"deschedulingInterval"`)) {
		c.DeschedulingInterval.Duration = 2 * time.Minute
	}
	if c.DeschedulingInterval.Duration < 0 {
		return nil, fmt.Errorf("deschedulingInterval %v: must not be negative", c.DeschedulingInterval.Duration)
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []DeschedulerProfile{{Name: "koord-descheduler"}}
	}
	for _, f := range []struct {
		set  bool
		name string
	}{
		{c.EnableProfiling != nil, "enableProfiling"}, {c.EnableContentionProfiling != nil, "enableContentionProfiling"},
		{c.HealthzBindAddress != nil, "healthzBindAddress (koord-descheduler's --health-addr)"},
		{c.MetricsBindAddress != nil, "metricsBindAddress (koord-descheduler's --metrics-addr)"},
		{c.ClientConnection.Kubeconfig != "", "clientConnection.kubeconfig (koord-descheduler's --kubeconfig)"},
		{c.MaxNoOfPodsToEvictPerNamespace != nil, "maxNoOfPodsToEvictPerNamespace (MigrationController's maxMigratingPerNamespace bounds jobs)"},
	} {
		if f.set {
			c.NotActedOn = append(c.NotActedOn, f.name)
		}
	}
	for i := range c.Profiles {
		p, notActedOn, err := loadProfile(&c.Profiles[i])
		if err != nil {
			return nil, fmt.Errorf("profiles[%d] (%s): %w", i, c.Profiles[i].Name, err)
		}
		for _, n := range notActedOn {
			c.NotActedOn = append(c.NotActedOn, fmt.Sprintf("profiles[%d].%s", i, n))
		}
		c.Run = append(c.Run, p)
	}
	return c, nil
}

// strict decodes JSON as the API server does for kubectl's strict field
// validation: field names match exactly, and a field the type does not have
// is an error naming it. A value that does not decode is named by its
// top-level key.
func strict(js []byte, into any) error {
	strictErrs, err := kjson.UnmarshalStrict(js, into)
	if err != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(js, &obj) == nil {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				one, _ := json.Marshal(map[string]json.RawMessage{k: obj[k]})
				fresh := reflect.New(reflect.TypeOf(into).Elem()).Interface()
				if _, e := kjson.UnmarshalStrict(one, fresh); e != nil {
					return fmt.Errorf("field %s: %w", k, e)
				}
			}
		}
		return err
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("%w (not a field of Koordinator's descheduler/v1alpha2)", errors.Join(strictErrs...))
	}
	return nil
}

// defaultPlugins are Koordinator's: MigrationController evicts and filters.
var defaultPlugins = Plugins{
	Evict:  PluginSet{Enabled: []Plugin{{Name: MigrationControllerName}}},
	Filter: PluginSet{Enabled: []Plugin{{Name: MigrationControllerName}}},
}

// enabled merges a point's defaults with the profile's set, as Koordinator
// does: defaults first unless disabled (by name, or all with "*"), then the
// profile's own.
func enabled(def, set PluginSet) []string {
	var out []string
	all := slices.ContainsFunc(set.Disabled, func(p Plugin) bool { return p.Name == "*" })
	for _, p := range def.Enabled {
		if !all && !slices.ContainsFunc(set.Disabled, func(d Plugin) bool { return d.Name == p.Name }) {
			out = append(out, p.Name)
		}
	}
	for _, p := range set.Enabled {
		if !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

func loadProfile(p *DeschedulerProfile) (Profile, []string, error) {
	if p.Name == "" {
		p.Name = "koord-descheduler"
	}
	set := Plugins{}
	if p.Plugins != nil {
		set = *p.Plugins
	}
	out := Profile{Name: p.Name, NodeSelector: p.NodeSelector}
	var notActedOn []string
	for _, point := range []struct {
		name string
		def  PluginSet
		set  PluginSet
		ours string
	}{
		{"deschedule", defaultPlugins.Deschedule, set.Deschedule, ""},
		{"balance", defaultPlugins.Balance, set.Balance, LowNodeLoadName},
		{"evict", defaultPlugins.Evict, set.Evict, MigrationControllerName},
		{"filter", defaultPlugins.Filter, set.Filter, MigrationControllerName},
	} {
		for _, name := range enabled(point.def, point.set) {
			if name != point.ours {
				notActedOn = append(notActedOn, fmt.Sprintf("plugins.%s.enabled %s (Koord runs %s)", point.name, name, ours(point.ours)))
				continue
			}
			if name == LowNodeLoadName {
				out.LowNodeLoad = &LowNodeLoadArgs{}
			}
		}
	}
	out.MigrationController = &MigrationControllerArgs{}
	seen := map[string]bool{}
	for j, pc := range p.PluginConfig {
		if seen[pc.Name] {
			return out, nil, fmt.Errorf("pluginConfig[%d]: %s configured twice", j, pc.Name)
		}
		seen[pc.Name] = true
		var into any
		switch pc.Name {
		case LowNodeLoadName:
			args := &LowNodeLoadArgs{}
			into = args
			if out.LowNodeLoad != nil {
				out.LowNodeLoad = args
			} else {
				notActedOn = append(notActedOn, fmt.Sprintf("pluginConfig[%d] LowNodeLoad (not enabled at balance)", j))
			}
		case MigrationControllerName:
			into = out.MigrationController
		default:
			notActedOn = append(notActedOn, fmt.Sprintf("pluginConfig[%d] %s (a plugin Koord does not have)", j, pc.Name))
			continue
		}
		if len(pc.Args) > 0 && string(pc.Args) != "null" {
			if err := strict(pc.Args, into); err != nil {
				return out, nil, fmt.Errorf("pluginConfig[%d] (%s).args: %w", j, pc.Name, err)
			}
		}
	}
	if a := out.LowNodeLoad; a != nil {
		a.Default()
		if err := a.Validate(); err != nil {
			return out, nil, fmt.Errorf("LowNodeLoad args: %w", err)
		}
		notActedOn = append(notActedOn, a.notActedOn()...)
	}
	m := out.MigrationController
	m.Default()
	if err := m.Validate(); err != nil {
		return out, nil, fmt.Errorf("MigrationController args: %w", err)
	}
	notActedOn = append(notActedOn, m.notActedOn()...)
	return out, notActedOn, nil
}

func ours(name string) string {
	if name == "" {
		return "none here"
	}
	return name
}

// Default sets Koordinator's defaults.
func (a *LowNodeLoadArgs) Default() {
	if a.NodeFit == nil {
		a.NodeFit = ptr.To(true)
	}
	if a.AnomalyCondition == nil {
		a.AnomalyCondition = &LoadAnomalyCondition{Timeout: &metav1.Duration{Duration: time.Minute}}
	}
	if a.AnomalyCondition.ConsecutiveAbnormalities == 0 {
		a.AnomalyCondition.ConsecutiveAbnormalities = 5
	}
	if a.AnomalyCondition.ConsecutiveNormalities == 0 {
		a.AnomalyCondition.ConsecutiveNormalities = 3
	}
	if a.DetectorCacheTimeout == nil {
		a.DetectorCacheTimeout = &metav1.Duration{Duration: 5 * time.Minute}
	}
	if a.NodeMetricExpirationSeconds == nil {
		a.NodeMetricExpirationSeconds = ptr.To[int64](180)
	}
	if a.ResourceWeights == nil {
		a.ResourceWeights = map[corev1.ResourceName]int64{}
	}
	for _, t := range []ResourceThresholds{{corev1.ResourceCPU: 0, corev1.ResourceMemory: 0}, a.LowThresholds, a.HighThresholds} {
		for r := range t {
			if a.ResourceWeights[r] <= 0 {
				a.ResourceWeights[r] = 1
			}
		}
	}
	for i := range a.NodePools {
		p := &a.NodePools[i]
		if p.HighThresholds == nil {
			p.HighThresholds = a.HighThresholds
		}
		if p.LowThresholds == nil {
			p.LowThresholds = a.LowThresholds
		}
		if p.ResourceWeights == nil {
			p.ResourceWeights = a.ResourceWeights
		}
		if p.AnomalyCondition == nil {
			p.AnomalyCondition = a.AnomalyCondition
		}
	}
}

// Validate checks the thresholds: each 0-100 (deviations too), a low
// threshold for every high one and not above it.
func (a *LowNodeLoadArgs) Validate() error {
	var errs []error
	check := func(path string, deviation bool, low, high ResourceThresholds) {
		if len(high) == 0 {
			errs = append(errs, fmt.Errorf("%shighThresholds: required", path))
		}
		for _, t := range []struct {
			name string
			t    ResourceThresholds
		}{{"lowThresholds", low}, {"highThresholds", high}} {
			for r, v := range t.t {
				if v < 0 || v > 100 {
					errs = append(errs, fmt.Errorf("%s%s.%s: %v is not a percentage (0-100)", path, t.name, r, v))
				}
			}
		}
		for r, h := range high {
			l, ok := low[r]
			if !ok {
				errs = append(errs, fmt.Errorf("%slowThresholds.%s: required with highThresholds.%s", path, r, r))
			} else if !deviation && l > h {
				errs = append(errs, fmt.Errorf("%slowThresholds.%s: %v is above highThresholds.%s %v", path, r, l, r, h))
			}
		}
		for r := range low {
			if _, ok := high[r]; !ok {
				errs = append(errs, fmt.Errorf("%shighThresholds.%s: required with lowThresholds.%s", path, r, r))
			}
		}
	}
	if len(a.NodePools) == 0 || len(a.HighThresholds) > 0 {
		check("", ptr.Deref(a.UseDeviationThresholds, false), a.LowThresholds, a.HighThresholds)
	}
	for i, p := range a.NodePools {
		check(fmt.Sprintf("nodePools[%d].", i), p.UseDeviationThresholds || ptr.Deref(a.UseDeviationThresholds, false), p.LowThresholds, p.HighThresholds)
	}
	if a.NumberOfNodes != nil && *a.NumberOfNodes < 0 {
		errs = append(errs, fmt.Errorf("numberOfNodes: %d is negative", *a.NumberOfNodes))
	}
	if *a.NodeMetricExpirationSeconds <= 0 {
		errs = append(errs, fmt.Errorf("nodeMetricExpirationSeconds: %d must be positive", *a.NodeMetricExpirationSeconds))
	}
	for i, s := range a.PodSelectors {
		if _, err := metav1.LabelSelectorAsSelector(s.Selector); err != nil {
			errs = append(errs, fmt.Errorf("podSelectors[%d].selector: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

func (a *LowNodeLoadArgs) notActedOn() []string {
	var out []string
	if len(a.ProdHighThresholds) > 0 || len(a.ProdLowThresholds) > 0 {
		out = append(out, "LowNodeLoad prodHighThresholds/prodLowThresholds")
	}
	for i, p := range a.NodePools {
		if len(p.ProdHighThresholds) > 0 || len(p.ProdLowThresholds) > 0 {
			out = append(out, fmt.Sprintf("LowNodeLoad nodePools[%d].prodHighThresholds/prodLowThresholds", i))
		}
	}
	return out
}

// Default sets Koordinator's defaults.
func (m *MigrationControllerArgs) Default() {
	if m.MaxConcurrentReconciles == nil {
		m.MaxConcurrentReconciles = ptr.To[int32](1)
	}
	if m.MaxMigratingPerNode == nil {
		m.MaxMigratingPerNode = ptr.To[int32](2)
	}
	if m.DefaultJobMode == "" {
		m.DefaultJobMode = JobModeReservationFirst
	}
	if len(m.SchedulerNames) == 0 {
		m.SchedulerNames = []string{"koord-scheduler"}
	}
	if m.DefaultJobTTL == nil {
		m.DefaultJobTTL = &metav1.Duration{Duration: 5 * time.Minute}
	}
	if m.EvictionPolicy == "" {
		m.EvictionPolicy = EvictionPolicyEviction
	}
	if m.EvictQPS == nil {
		m.EvictQPS = ptr.To[Float64OrString](10)
	}
	if m.EvictBurst == nil {
		m.EvictBurst = ptr.To[int32](1)
	}
	if len(m.ObjectLimiters) == 0 {
		m.ObjectLimiters = map[string]MigrationObjectLimiter{"workload": {Duration: metav1.Duration{Duration: 5 * time.Minute}}}
	}
}

// EvictionGates are the limits skipEvictionGates may name.
var EvictionGates = []string{"MaxMigratingGlobally", "MaxMigratingPerNode", "MaxMigratingPerNamespace", "MaxMigratingPerWorkload", "MaxUnavailablePerWorkload", "ExpectedReplicas"}

// Validate checks the limits and modes.
func (m *MigrationControllerArgs) Validate() error {
	var errs []error
	for _, l := range []struct {
		name string
		v    *int32
	}{{"maxConcurrentReconciles", m.MaxConcurrentReconciles}, {"maxMigratingGlobally", m.MaxMigratingGlobally},
		{"maxMigratingPerNode", m.MaxMigratingPerNode}, {"maxMigratingPerNamespace", m.MaxMigratingPerNamespace}, {"evictBurst", m.EvictBurst}} {
		if l.v != nil && *l.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %d is negative", l.name, *l.v))
		}
	}
	for _, l := range []struct {
		name string
		v    *intstr.IntOrString
	}{{"maxMigratingPerWorkload", m.MaxMigratingPerWorkload}, {"maxUnavailablePerWorkload", m.MaxUnavailablePerWorkload}} {
		if l.v == nil {
			continue
		}
		if v, err := intstr.GetScaledValueFromIntOrPercent(l.v, 100, true); err != nil || v < 0 {
			errs = append(errs, fmt.Errorf("%s: %s is not a count or a percentage", l.name, l.v.String()))
		}
	}
	if m.DefaultJobMode != JobModeReservationFirst && m.DefaultJobMode != JobModeEvictDirectly {
		errs = append(errs, fmt.Errorf("defaultJobMode: %q (want ReservationFirst or EvictDirectly)", m.DefaultJobMode))
	}
	if m.EvictionPolicy != EvictionPolicyEviction && m.EvictionPolicy != EvictionPolicyDelete {
		errs = append(errs, fmt.Errorf("evictionPolicy: %q (want Eviction or Delete)", m.EvictionPolicy))
	}
	if m.DefaultJobTTL.Duration < 0 {
		errs = append(errs, fmt.Errorf("defaultJobTTL: %v is negative", m.DefaultJobTTL.Duration))
	}
	if *m.EvictQPS <= 0 {
		errs = append(errs, fmt.Errorf("evictQPS: %v must be positive", float64(*m.EvictQPS)))
	}
	for _, g := range m.SkipEvictionGates {
		if !slices.Contains(EvictionGates, g) {
			errs = append(errs, fmt.Errorf("skipEvictionGates: %q is not one of %v", g, EvictionGates))
		}
	}
	for k, l := range m.ObjectLimiters {
		if k != "workload" {
			errs = append(errs, fmt.Errorf("objectLimiters.%s: only workload limiters exist", k))
		}
		if l.Duration.Duration < 0 {
			errs = append(errs, fmt.Errorf("objectLimiters.%s.duration: %v is negative", k, l.Duration.Duration))
		}
	}
	if m.LabelSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(m.LabelSelector); err != nil {
			errs = append(errs, fmt.Errorf("labelSelector: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (m *MigrationControllerArgs) notActedOn() []string {
	var out []string
	if m.NodeFit {
		out = append(out, "MigrationController nodeFit (LowNodeLoad's nodeFit decides)")
	}
	if m.NodeSelector != "" {
		out = append(out, "MigrationController nodeSelector")
	}
	if m.ArbitrationArgs != nil {
		out = append(out, "MigrationController arbitrationArgs")
	}
	if m.EvictAllBarePods {
		out = append(out, "MigrationController evictAllBarePods (bare pods are never moved)")
	}
	return out
}
