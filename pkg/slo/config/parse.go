package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kjson "sigs.k8s.io/json"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/compat"
)

// strategyKey is how one strategy key of the ConfigMap maps to the NodeSLO
// spec: overlay decodes a strategy (strictly) over the spec's current one,
// copy takes that part from one spec into another.
type strategyKey struct {
	overlay func(spec *slov1alpha1.NodeSLOSpec, raw []byte) ([]string, error)
	copy    func(dst, src *slov1alpha1.NodeSLOSpec)
}

// field makes the strategyKey of a plain spec field.
func field[T any](get func(*slov1alpha1.NodeSLOSpec) **T) strategyKey {
	return strategyKey{
		overlay: func(spec *slov1alpha1.NodeSLOSpec, raw []byte) ([]string, error) { return decodeOver(raw, get(spec)) },
		copy:    func(dst, src *slov1alpha1.NodeSLOSpec) { *get(dst) = *get(src) },
	}
}

var strategyKeys = map[string]strategyKey{
	ResourceThresholdKey: field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.ResourceThresholdStrategy {
		return &s.ResourceUsedThresholdWithBE
	}),
	ResourceQOSKey: field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.ResourceQOSStrategy { return &s.ResourceQOSStrategy }),
	CPUBurstKey:    field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.CPUBurstStrategy { return &s.CPUBurstStrategy }),
	SystemKey:      field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.SystemStrategy { return &s.SystemStrategy }),
	InterferenceGuardKey: {
		overlay: func(spec *slov1alpha1.NodeSLOSpec, raw []byte) ([]string, error) {
			g, err := spec.GetInterferenceGuard()
			if err != nil {
				return nil, err
			}
			if g == nil {
				g = &slov1alpha1.InterferenceGuardStrategy{}
			}
			unknown, err := decodeOver(raw, &g)
			if err != nil {
				return nil, err
			}
			return unknown, spec.SetInterferenceGuard(g)
		},
		copy: func(dst, src *slov1alpha1.NodeSLOSpec) {
			g, _ := src.GetInterferenceGuard()
			_ = dst.SetInterferenceGuard(g)
		},
	},
}

// strategyOrder is the order keys are read in (errors name the first bad one).
var strategyOrder = []string{ResourceThresholdKey, ResourceQOSKey, CPUBurstKey, SystemKey, InterferenceGuardKey}

// otherKeys are Koordinator's keys Koord accepts and keeps but does not act
// on (compat.Fields says why); any other key is reported as unknown.
var otherKeys = []string{"host-application-config", "cpu-normalization-config", "resource-amplification-config"}

// Parse resolves a ConfigMap; nil means it does not exist. Fields no
// Koordinator version knows are not errors: they are listed in Warnings.
// A key that does not parse or validate is an error naming it; see
// ParseOver for what the other keys do then.
func Parse(cm *corev1.ConfigMap) (Config, error) { return ParseOver(cm, Default()) }

// ParseOver resolves a ConfigMap key by key, as Koordinator does: a key that
// does not parse or validate keeps its part of prev (the configuration in
// force), the others take effect, and the error names every failed key.
func ParseOver(cm *corev1.ConfigMap, prev Config) (Config, error) {
	cfg := Default()
	if cm == nil {
		return cfg, nil
	}
	where := func(key string, err error) error {
		return fmt.Errorf("configmap %s/%s key %s: %w", cm.Namespace, cm.Name, key, err)
	}
	warn := func(key string, fields []string) {
		for _, f := range fields {
			cfg.Warnings = append(cfg.Warnings, key+": "+f)
		}
	}
	var errs []error
	if raw, ok := cm.Data[ColocationKey]; ok {
		unknown, err := parseColocation(raw, &cfg)
		if err != nil {
			errs = append(errs, where(ColocationKey, err))
			cfg.Colocation, cfg.nodeColocations = prev.Colocation, prev.nodeColocations
		} else {
			warn(ColocationKey, unknown)
		}
	}
	// Each strategy key is Koordinator's {"clusterStrategy": {...},
	// "nodeStrategies": [{"name": ..., "nodeSelector": {...}, <fields>}]}.
	failed := map[string]bool{}
	fail := func(key string, err error) {
		errs = append(errs, where(key, err))
		failed[key] = true
		strategyKeys[key].copy(&cfg.NodeSLO, &prev.NodeSLO)
	}
	nodeRaw := map[string][]json.RawMessage{}
	for _, key := range strategyOrder {
		raw, ok := cm.Data[key]
		if !ok {
			continue
		}
		var wrapper struct {
			ClusterStrategy json.RawMessage   `json:"clusterStrategy"`
			NodeStrategies  []json.RawMessage `json:"nodeStrategies"`
		}
		unknown, err := decode(raw, &wrapper)
		if err != nil {
			fail(key, err)
			continue
		}
		if len(wrapper.ClusterStrategy) > 0 && string(wrapper.ClusterStrategy) != "null" {
			spec := *cfg.NodeSLO.DeepCopy()
			clusterUnknown, err := strategyKeys[key].overlay(&spec, wrapper.ClusterStrategy)
			if err == nil {
				// The keys before this one passed or kept their valid
				// part: an error is this key's.
				err = spec.Validate()
			}
			if err != nil {
				fail(key, fmt.Errorf("clusterStrategy: %w", err))
				continue
			}
			cfg.NodeSLO = spec
			unknown = append(unknown, prefixed("clusterStrategy: ", clusterUnknown)...)
		}
		warn(key, unknown)
		nodeRaw[key] = wrapper.NodeStrategies
	}
	for _, key := range strategyOrder {
		var strategies []nodeStrategy
		var unknown []string
		var err error
		for i, raw := range nodeRaw[key] {
			ns, u, e := parseNodeStrategy(key, raw, cfg.NodeSLO)
			if e != nil {
				err = fmt.Errorf("nodeStrategies[%d]: %w", i, e)
				break
			}
			unknown = append(unknown, prefixed(fmt.Sprintf("nodeStrategies[%d]: ", i), u)...)
			strategies = append(strategies, ns)
		}
		if err != nil {
			fail(key, err)
		}
		if failed[key] {
			for _, ns := range prev.nodeStrategies {
				if ns.key == key {
					strategies = append(strategies, ns)
				}
			}
		} else {
			warn(key, unknown)
		}
		cfg.nodeStrategies = append(cfg.nodeStrategies, strategies...)
	}
	cfg.NotActedOn = notActedOn(cm, cfg)
	for key := range cm.Data {
		if !knownKey(key) {
			cfg.Warnings = append(cfg.Warnings, key+": not a key of slo-controller-config")
		}
	}
	slices.Sort(cfg.Warnings)
	return cfg, errors.Join(errs...)
}

func knownKey(key string) bool {
	return key == ColocationKey || slices.Contains(strategyOrder, key) || slices.Contains(otherKeys, key)
}

// notActedOn lists what the ConfigMap sets that Koord does not act on: its
// own entries, and the NodeSLO fields its strategies set (named by key).
func notActedOn(cm *corev1.ConfigMap, cfg Config) []string {
	var out []string
	doc := map[string]json.RawMessage{}
	for key, raw := range cm.Data {
		if key == ColocationKey || slices.Contains(otherKeys, key) {
			doc[key] = json.RawMessage(raw)
		}
	}
	if b, err := json.Marshal(doc); err == nil {
		out = append(out, compat.NotActedOnIn(compat.SLOControllerConfig, b)...)
	}
	specs := []slov1alpha1.NodeSLOSpec{cfg.NodeSLO}
	for _, ns := range cfg.nodeStrategies {
		specs = append(specs, ns.spec)
	}
	for _, spec := range specs {
		for _, f := range compat.NotActedOnIn(compat.NodeSLO, struct {
			Spec slov1alpha1.NodeSLOSpec `json:"spec"`
		}{spec}) {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

func prefixed(prefix string, fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = prefix + f
	}
	return out
}

// parseColocation reads colocation-config: the cluster strategy inline, and
// nodeConfigs, each laid over the cluster strategy.
func parseColocation(raw string, cfg *Config) ([]string, error) {
	var fields map[string]json.RawMessage
	if _, err := decode(raw, &fields); err != nil {
		return nil, err
	}
	nodeConfigs := fields["nodeConfigs"]
	delete(fields, "nodeConfigs")
	rest, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	unknown, err := decodeOver(rest, &cfg.Colocation)
	if err != nil {
		return nil, err
	}
	if err := cfg.Colocation.validate(); err != nil {
		return nil, err
	}
	if len(nodeConfigs) == 0 || string(nodeConfigs) == "null" {
		return unknown, nil
	}
	var entries []json.RawMessage
	if _, err := decode(string(nodeConfigs), &entries); err != nil {
		return nil, fmt.Errorf("nodeConfigs: %w", err)
	}
	for i, e := range entries {
		nc := nodeColocation{colocation: cfg.Colocation.clone()}
		name, selector, rest, err := profile(e)
		if err != nil {
			return nil, fmt.Errorf("nodeConfigs[%d]: %w", i, err)
		}
		nc.name, nc.selector = name, selector
		u, err := decodeOver(rest, &nc.colocation)
		if err != nil {
			return nil, fmt.Errorf("nodeConfigs[%d]: %w", i, err)
		}
		if err := nc.colocation.validate(); err != nil {
			return nil, fmt.Errorf("nodeConfigs[%d]: %w", i, err)
		}
		unknown = append(unknown, prefixed(fmt.Sprintf("nodeConfigs[%d]: ", i), u)...)
		cfg.nodeColocations = append(cfg.nodeColocations, nc)
	}
	return unknown, nil
}

// profile splits a nodeStrategies or nodeConfigs entry into its profile
// (name, nodeSelector; a missing selector matches no node, as in
// Koordinator) and the rest of its fields.
func profile(raw json.RawMessage) (string, labels.Selector, []byte, error) {
	var fields map[string]json.RawMessage
	if _, err := decode(string(raw), &fields); err != nil {
		return "", nil, nil, err
	}
	var name string
	selector := labels.Nothing()
	if v, ok := fields["name"]; ok {
		if err := json.Unmarshal(v, &name); err != nil {
			return "", nil, nil, fmt.Errorf("name: %w", err)
		}
		delete(fields, "name")
	}
	if v, ok := fields["nodeSelector"]; ok {
		var sel *metav1.LabelSelector
		if _, err := decode(string(v), &sel); err != nil {
			return "", nil, nil, fmt.Errorf("nodeSelector: %w", err)
		}
		if sel != nil {
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				return "", nil, nil, fmt.Errorf("nodeSelector: %w", err)
			}
			selector = s
		}
		delete(fields, "nodeSelector")
	}
	rest, err := json.Marshal(fields)
	return name, selector, rest, err
}

// parseNodeStrategy reads one nodeStrategies entry: its profile and, inline,
// the key's strategy fields laid over the cluster strategy.
func parseNodeStrategy(key string, raw json.RawMessage, cluster slov1alpha1.NodeSLOSpec) (nodeStrategy, []string, error) {
	name, selector, rest, err := profile(raw)
	if err != nil {
		return nodeStrategy{}, nil, err
	}
	ns := nodeStrategy{key: key, name: name, selector: selector, spec: *cluster.DeepCopy()}
	unknown, err := strategyKeys[key].overlay(&ns.spec, rest)
	if err != nil {
		return nodeStrategy{}, nil, err
	}
	if err := ns.spec.Validate(); err != nil {
		return nodeStrategy{}, nil, err
	}
	return ns, unknown, nil
}

// decodeOver decodes raw over what into already holds (fields it leaves out
// keep their value). Fields into has no place for are returned by path,
// not refused: an operator hears of a typo without losing the rest.
func decodeOver(raw []byte, into any) ([]string, error) {
	raw = canonical(raw, reflect.TypeOf(into))
	strict, err := kjson.UnmarshalStrict(raw, into, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, e := range strict {
		unknown = append(unknown, e.Error())
	}
	return unknown, nil
}

func decode(raw string, into any) ([]string, error) { return decodeOver([]byte(raw), into) }
