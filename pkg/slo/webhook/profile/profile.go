// Package profile applies ClusterColocationProfiles to pods at admission:
// which profiles select a pod (namespace and pod selectors, probability),
// what each writes into it, and the move of a batch or mid pod's cpu and
// memory to the batch or mid resources. It is koord-manager's mutating pod
// webhook without the HTTP: the webhook package serves it.
package profile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
)

// Cluster is what applying profiles reads from the cluster: the manager's
// informer cache in koord-manager, maps in tests.
type Cluster interface {
	// Profiles are every ClusterColocationProfile (any order).
	Profiles() ([]*colocationv1alpha1.ClusterColocationProfile, error)
	// NamespaceLabels are the labels of a namespace.
	NamespaceLabels(namespace string) (map[string]string, error)
	// PriorityClass is the PriorityClass of that name.
	PriorityClass(name string) (*schedulingv1.PriorityClass, error)
}

// Mutator applies profiles to pods.
type Mutator struct {
	Cluster Cluster
	// SkipResources never moves cpu and memory to batch or mid resources
	// (Koordinator's gate ColocationProfileSkipMutatingResources).
	SkipResources bool
	// Intn draws the number a profile's probability is checked against
	// (rand.IntN when nil); tests set it.
	Intn func(n int) int
}

// Result says what Apply did.
type Result struct {
	// Profiles are the names of the profiles applied, in order.
	Profiles []string
	// Resources is true when cpu and memory were moved to batch or mid resources.
	Resources bool
}

// Mutated is true when the pod was changed.
func (r Result) Mutated() bool { return len(r.Profiles) > 0 || r.Resources }

// Apply applies every profile that selects the pod, in name order (as
// Koordinator does: a later profile's value wins), to the pod being created,
// then moves a batch or mid pod's cpu and memory to its extended resources.
// A pod no profile selects is not touched. An error names the profile.
func (m *Mutator) Apply(pod *corev1.Pod) (Result, error) {
	var res Result
	profiles, err := m.Cluster.Profiles()
	if err != nil || len(profiles) == 0 {
		return res, err
	}
	var nsLabels map[string]string
	nsRead := false
	var matched []*colocationv1alpha1.ClusterColocationProfile
	for _, p := range profiles {
		if sel := p.Spec.NamespaceSelector; sel != nil && !isEmpty(sel) {
			if !nsRead {
				if nsLabels, err = m.Cluster.NamespaceLabels(pod.Namespace); err != nil {
					return res, fmt.Errorf("namespace %s: %w", pod.Namespace, err)
				}
				nsRead = true
			}
			ok, err := matches(sel, nsLabels)
			if err != nil {
				return res, fmt.Errorf("ClusterColocationProfile %s: spec.namespaceSelector: %w", p.Name, err)
			}
			if !ok {
				continue
			}
		}
		if sel := p.Spec.Selector; sel != nil && !isEmpty(sel) {
			ok, err := matches(sel, pod.Labels)
			if err != nil {
				return res, fmt.Errorf("ClusterColocationProfile %s: spec.selector: %w", p.Name, err)
			}
			if !ok {
				continue
			}
		}
		matched = append(matched, p)
	}
	if len(matched) == 0 {
		return res, nil
	}
	slices.SortFunc(matched, func(a, b *colocationv1alpha1.ClusterColocationProfile) int { return strings.Compare(a.Name, b.Name) })
	skipResources := m.SkipResources
	for _, p := range matched {
		if _, ok := p.Annotations[extension.AnnotationSkipUpdateResources]; ok {
			skipResources = true
		}
		draw, err := m.drawn(p)
		if err != nil {
			return res, err
		}
		if !draw {
			continue
		}
		if err := m.apply(pod, p); err != nil {
			return res, fmt.Errorf("ClusterColocationProfile %s: %w", p.Name, err)
		}
		res.Profiles = append(res.Profiles, p.Name)
	}
	if !skipResources {
		res.Resources = MoveResources(pod)
	}
	return res, nil
}

func isEmpty(s *metav1.LabelSelector) bool {
	return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

func matches(s *metav1.LabelSelector, set map[string]string) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(set)), nil
}

// Probability is a profile's probability as a percentage (100 when unset).
func Probability(p *colocationv1alpha1.ClusterColocationProfile) (int, error) {
	if p.Spec.Probability == nil {
		return 100, nil
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(p.Spec.Probability, 100, false)
	if err != nil {
		return 0, fmt.Errorf("ClusterColocationProfile %s: spec.probability: %w", p.Name, err)
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("ClusterColocationProfile %s: spec.probability: %s is not between 0 and 100%%", p.Name, p.Spec.Probability.String())
	}
	return v, nil
}

// drawn is true when the profile applies to this pod: always at 100 %, never
// at 0 %, else with that probability.
func (m *Mutator) drawn(p *colocationv1alpha1.ClusterColocationProfile) (bool, error) {
	percent, err := Probability(p)
	if err != nil || percent == 100 || percent == 0 {
		return percent == 100, err
	}
	intn := m.Intn
	if intn == nil {
		intn = rand.IntN
	}
	return intn(100) < percent, nil
}

func (m *Mutator) apply(pod *corev1.Pod, p *colocationv1alpha1.ClusterColocationProfile) error {
	s := &p.Spec
	for k, v := range s.Labels {
		setLabel(pod, k, v)
	}
	for k, v := range s.Annotations {
		setAnnotation(pod, k, v)
	}
	for from, to := range s.LabelKeysMapping {
		setLabel(pod, to, pod.Labels[from])
	}
	for from, to := range s.AnnotationKeysMapping {
		setAnnotation(pod, to, pod.Annotations[from])
	}
	for k, suffix := range s.LabelSuffixes {
		if v, ok := pod.Labels[k]; ok {
			pod.Labels[k] = v + suffix
		}
	}
	if s.SchedulerName != "" {
		pod.Spec.SchedulerName = s.SchedulerName
	}
	if s.QoSClass != "" {
		setLabel(pod, extension.LabelPodQoS, s.QoSClass)
	}
	if s.PriorityClassName != "" {
		pc, err := m.Cluster.PriorityClass(s.PriorityClassName)
		if err != nil {
			return fmt.Errorf("spec.priorityClassName %s: %w", s.PriorityClassName, err)
		}
		pod.Spec.PriorityClassName = pc.Name
		value := pc.Value
		pod.Spec.Priority = &value
		pod.Spec.PreemptionPolicy = pc.PreemptionPolicy
	}
	if s.KoordinatorPriority != nil {
		setLabel(pod, extension.LabelPodPriority, strconv.FormatInt(int64(*s.KoordinatorPriority), 10))
	}
	if len(s.Patch.Raw) > 0 {
		return Patch(pod, s.Patch.Raw)
	}
	return nil
}

func setLabel(pod *corev1.Pod, k, v string) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[k] = v
}

func setAnnotation(pod *corev1.Pod, k, v string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[k] = v
}

// Patch applies a profile's spec.patch (a strategic merge patch) to the pod.
func Patch(pod *corev1.Pod, raw []byte) error {
	orig, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	out, err := strategicpatch.StrategicMergePatch(orig, raw, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("spec.patch: %w", err)
	}
	patched := &corev1.Pod{}
	if err := json.Unmarshal(out, patched); err != nil {
		return fmt.Errorf("spec.patch: the patched pod does not decode: %w", err)
	}
	*pod = *patched
	return nil
}

// MoveResources moves the cpu and memory requests and limits of a batch or
// mid pod (by PodPriorityClassWithDefault: a BE pod in no band counts as
// batch) to the band's extended resources, in Koordinator's units: cpu in
// milli-cores (2 cores become 2000), memory in bytes. A container with an
// extended limit and no request gets the limit as request, since an
// extended resource's request must equal its limit. It reports a change.
func MoveResources(pod *corev1.Pod) bool {
	band := extension.PodPriorityClassWithDefault(pod)
	if extension.ExtendedResource(band, corev1.ResourceCPU) == "" {
		return false
	}
	moved := false
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				moved = move(band, r.Requests, name) || moved
				moved = move(band, r.Limits, name) || moved
				ext := extension.ExtendedResource(band, name)
				if limit, ok := r.Limits[ext]; ok {
					if _, ok := r.Requests[ext]; !ok {
						if r.Requests == nil {
							r.Requests = corev1.ResourceList{}
						}
						r.Requests[ext] = limit
						moved = true
					}
				}
			}
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		moved = move(band, pod.Spec.Overhead, name) || moved
	}
	return moved
}

func move(band extension.PriorityClass, list corev1.ResourceList, name corev1.ResourceName) bool {
	q, ok := list[name]
	if !ok {
		return false
	}
	if name == corev1.ResourceCPU {
		q = *resource.NewQuantity(q.MilliValue(), resource.DecimalSI)
	}
	list[extension.ExtendedResource(band, name)] = q
	delete(list, name)
	return true
}
