package coscheduling

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
)

// gang is what the scheduler needs of a pod's gang.
type gang struct {
	key         string // namespace/name
	uid         string // the PodGroup's UID, or "" for an annotation gang
	minMember   int32
	timeout     time.Duration
	mode        string
	matchPolicy string
	// groups are the gangs (keys, this one included) that succeed together.
	groups []string
}

// gangOf reads a pod's gang; nil without one. A gang that cannot be read
// is an UnschedulableAndUnresolvable status naming the key or the object.
func (p *Plugin) gangOf(pod *corev1.Pod) (*gang, *fwk.Status) {
	spec, err := extension.GetGangSpec(pod.Labels, pod.Annotations)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if spec.Name == "" {
		return nil, nil
	}
	g := &gang{key: pod.Namespace + "/" + spec.Name, minMember: spec.MinMember, timeout: spec.WaitTime, mode: spec.Mode, matchPolicy: spec.MatchPolicy}
	if spec.FromPodGroup {
		if p.podGroups == nil {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("pod names PodGroup %s (label %s) but the PodGroup CRD is not installed", g.key, extension.LabelPodGroup))
		}
		pg, err := p.podGroups.PodGroups(pod.Namespace).Get(spec.Name)
		if err != nil {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s: %v", g.key, err))
		}
		g.uid, g.minMember = string(pg.UID), pg.Spec.MinMember
		if g.timeout == 0 && pg.Spec.ScheduleTimeoutSeconds != nil && *pg.Spec.ScheduleTimeoutSeconds > 0 {
			g.timeout = time.Duration(*pg.Spec.ScheduleTimeoutSeconds) * time.Second
		}
		// Koordinator reads its gang annotations on the PodGroup too (mode,
		// groups, ...); the pod's own win.
		pgSpec, err := extension.GetGangSpec(map[string]string{extension.LabelPodGroup: pg.Name}, pg.Annotations)
		if err != nil {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s: %v", g.key, err))
		}
		if g.mode == "" {
			g.mode = pgSpec.Mode
		}
		if g.matchPolicy == "" {
			g.matchPolicy = pgSpec.MatchPolicy
		}
		if g.timeout == 0 {
			g.timeout = pgSpec.WaitTime
		}
		if len(spec.Groups) == 0 {
			spec.Groups = pgSpec.Groups
		}
	} else if g.minMember == 0 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gang %s: annotation %s is required (how many members must be placed together)", g.key, extension.AnnotationGangMinNum))
	}
	if g.timeout == 0 {
		g.timeout = p.args.DefaultTimeout.Duration
	}
	if g.mode == "" {
		g.mode = extension.GangModeStrict
	}
	if g.matchPolicy == "" {
		g.matchPolicy = p.args.DefaultMatchPolicy
	}
	// A gang groups only with gangs of its own namespace: a tenant's
	// annotation must not make another namespace's waiting pods bind or be
	// released with its own.
	for _, key := range spec.Groups {
		if ns, _, _ := strings.Cut(key, "/"); ns != pod.Namespace {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gang %s: %s names %s, a gang of another namespace", g.key, extension.AnnotationGangGroups, key))
		}
	}
	g.groups = spec.Groups
	if !slices.Contains(g.groups, g.key) {
		g.groups = append(g.groups, g.key)
	}
	return g, nil
}

const gangIndex = "koord.gang"

// indexByGang is a pod's gang key, for the pod informer's index.
func indexByGang(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if name := extension.GangName(pod.Labels, pod.Annotations); name != "" {
		return []string{pod.Namespace + "/" + name}, nil
	}
	return nil, nil
}

// members are the pods of the gang that are not finished or going.
func (p *Plugin) members(key string) ([]*corev1.Pod, error) {
	objs, err := p.byGang.ByIndex(gangIndex, key)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, pod)
	}
	return out, nil
}
