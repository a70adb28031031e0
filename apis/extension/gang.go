package extension

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

// Koordinator's gang keys: a pod joins the gang its annotations (or a
// PodGroup, by label) name, and the gang is scheduled all together or not
// at all.
const (
	gangPrefix = "gang.scheduling.koordinator.sh/"
	// AnnotationGangName names the pod's gang (in its namespace).
	AnnotationGangName = gangPrefix + "name"
	// AnnotationGangMinNum is how many members must be placed together.
	AnnotationGangMinNum = gangPrefix + "min-available"
	// AnnotationGangTotalNum is how many members the gang has in all
	// (informational; default min-available).
	AnnotationGangTotalNum = gangPrefix + "total-number"
	// AnnotationGangWaitTime bounds how long placed members wait for the
	// others (a Go duration, "300s").
	AnnotationGangWaitTime = gangPrefix + "waiting-time"
	// AnnotationGangMode is Strict (a member's failure releases every
	// member) or NonStrict (the others keep waiting until the timeout).
	AnnotationGangMode = gangPrefix + "mode"
	// AnnotationGangGroups lists gangs ("namespace/name", JSON) that must
	// all be satisfied before any of them binds.
	AnnotationGangGroups = gangPrefix + "groups"
	// AnnotationGangMatchPolicy says which members count towards
	// min-available: once-satisfied (default), only-waiting,
	// waiting-and-running.
	AnnotationGangMatchPolicy = gangPrefix + "match-policy"

	// LabelPodGroup names the pod's PodGroup (scheduling.sigs.k8s.io).
	LabelPodGroup = schedulingsigsv1alpha1.PodGroupLabel
	// LabelLightweightPodGroupName and LabelLightweightPodGroupMinAvailable
	// are Koordinator's PodGroup-less gang labels.
	LabelLightweightPodGroupName         = "pod-group.scheduling.sigs.k8s.io/name"
	LabelLightweightPodGroupMinAvailable = "pod-group.scheduling.sigs.k8s.io/min-available"
)

// Gang modes and match policies.
const (
	GangModeStrict    = "Strict"
	GangModeNonStrict = "NonStrict"

	GangMatchOnceSatisfied     = "once-satisfied"
	GangMatchOnlyWaiting       = "only-waiting"
	GangMatchWaitingAndRunning = "waiting-and-running"
)

// GangSpec is what a pod's labels and annotations say of its gang. Fields
// left zero were not given: a PodGroup or the plugin's args decide them.
type GangSpec struct {
	// Name is the gang's name in the pod's namespace ("" for none).
	Name string
	// FromPodGroup: Name is a PodGroup's (label pod-group.scheduling.sigs.k8s.io).
	FromPodGroup bool
	MinMember    int32
	TotalMember  int32
	WaitTime     time.Duration
	Mode         string
	MatchPolicy  string
	// Groups are the gangs ("namespace/name") that succeed together.
	Groups []string
}

// GetGangSpec reads a pod's gang from its labels and annotations. A value
// that does not parse is an error naming its key.
func GetGangSpec(labels, annotations map[string]string) (GangSpec, error) {
	var g GangSpec
	switch {
	case labels[LabelPodGroup] != "":
		g.Name, g.FromPodGroup = labels[LabelPodGroup], true
	case labels[LabelLightweightPodGroupName] != "":
		g.Name = labels[LabelLightweightPodGroupName]
	default:
		g.Name = annotations[AnnotationGangName]
	}
	if g.Name == "" {
		return GangSpec{}, nil
	}
	if errs := validation.IsDNS1123Subdomain(g.Name); len(errs) > 0 {
		err := fmt.Errorf("%q is not a valid name: %s", truncate(g.Name), strings.Join(errs, "; "))
		switch {
		case g.FromPodGroup:
			return GangSpec{}, labelError(LabelPodGroup, err)
		case labels[LabelLightweightPodGroupName] != "":
			return GangSpec{}, labelError(LabelLightweightPodGroupName, err)
		}
		return GangSpec{}, annotationError(AnnotationGangName, err)
	}
	count := func(v string) (int32, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a non-negative int32", truncate(v))
		}
		return int32(n), nil
	}
	var err error
	if v, ok := labels[LabelLightweightPodGroupMinAvailable]; ok {
		if g.MinMember, err = count(v); err != nil {
			return GangSpec{}, labelError(LabelLightweightPodGroupMinAvailable, err)
		}
	}
	if v, ok := annotations[AnnotationGangMinNum]; ok {
		if g.MinMember, err = count(v); err != nil {
			return GangSpec{}, annotationError(AnnotationGangMinNum, err)
		}
	}
	if v, ok := annotations[AnnotationGangTotalNum]; ok {
		if g.TotalMember, err = count(v); err != nil {
			return GangSpec{}, annotationError(AnnotationGangTotalNum, err)
		}
		if g.MinMember > g.TotalMember {
			return GangSpec{}, annotationError(AnnotationGangTotalNum, fmt.Errorf("%d is below min-available %d", g.TotalMember, g.MinMember))
		}
	}
	if v, ok := annotations[AnnotationGangWaitTime]; ok {
		d, perr := time.ParseDuration(strings.TrimSpace(v))
		if perr != nil || d <= 0 {
			return GangSpec{}, annotationError(AnnotationGangWaitTime, fmt.Errorf("%q is not a positive duration (\"300s\")", truncate(v)))
		}
		g.WaitTime = d
	}
	if v, ok := annotations[AnnotationGangMode]; ok {
		switch v {
		case GangModeStrict, GangModeNonStrict:
			g.Mode = v
		default:
			return GangSpec{}, annotationError(AnnotationGangMode, fmt.Errorf("%q: want %s or %s", truncate(v), GangModeStrict, GangModeNonStrict))
		}
	}
	if v, ok := annotations[AnnotationGangMatchPolicy]; ok {
		switch v {
		case GangMatchOnceSatisfied, GangMatchOnlyWaiting, GangMatchWaitingAndRunning:
			g.MatchPolicy = v
		default:
			return GangSpec{}, annotationError(AnnotationGangMatchPolicy, fmt.Errorf("%q: want %s, %s or %s", truncate(v), GangMatchOnceSatisfied, GangMatchOnlyWaiting, GangMatchWaitingAndRunning))
		}
	}
	if v, ok := annotations[AnnotationGangGroups]; ok && strings.TrimSpace(v) != "" {
		var groups []string
		if err := decodeJSON(v, &groups); err != nil {
			return GangSpec{}, annotationError(AnnotationGangGroups, err)
		}
		// A gang group is a few gangs that start together; every member of
		// each is looked up whenever one is scheduled, so a tenant's list of
		// thousands would cost each cycle that many.
		if len(groups) > MaxGangGroups {
			return GangSpec{}, annotationError(AnnotationGangGroups, fmt.Errorf("%d gangs, more than the %d a gang group may have", len(groups), MaxGangGroups))
		}
		seen := make(map[string]bool, len(groups))
		for _, key := range groups {
			if seen[key] {
				return GangSpec{}, annotationError(AnnotationGangGroups, fmt.Errorf("%q is listed twice", truncate(key)))
			}
			seen[key] = true
			ns, name, ok := strings.Cut(key, "/")
			if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
				return GangSpec{}, annotationError(AnnotationGangGroups, fmt.Errorf("%q is not namespace/name", truncate(key)))
			}
		}
		g.Groups = groups
	}
	return g, nil
}

// MaxGangGroups bounds the gangs one gang group names.
const MaxGangGroups = 64

// GangName is the name of the pod's gang ("" for none), without checking
// anything else: the queue compares pods by it often.
func GangName(labels, annotations map[string]string) string {
	if n := labels[LabelPodGroup]; n != "" {
		return n
	}
	if n := labels[LabelLightweightPodGroupName]; n != "" {
		return n
	}
	return annotations[AnnotationGangName]
}
