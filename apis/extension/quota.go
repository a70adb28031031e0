package extension

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Koordinator's elastic-quota keys, on ElasticQuota objects
// (scheduling.sigs.k8s.io) and on pods.
const (
	quotaPrefix = "quota.scheduling.koordinator.sh/"
	// LabelQuotaName, on a pod, names the ElasticQuota it is charged to.
	LabelQuotaName = quotaPrefix + "name"
	// LabelQuotaParent, on a quota, names its parent quota ("" or
	// koordinator-root-quota: the top of the tree).
	LabelQuotaParent = quotaPrefix + "parent"
	// LabelQuotaIsParent, on a quota, says it has child quotas and so no
	// pods of its own ("true" or "false").
	LabelQuotaIsParent = quotaPrefix + "is-parent"
	// LabelAllowLentResource, on a quota, says whether the part of its min
	// it does not use may go to other quotas ("false" keeps it; default
	// "true").
	LabelAllowLentResource = quotaPrefix + "allow-lent-resource"
	// LabelPreemptible "false", on a pod, keeps it from being preempted to
	// give a quota back its min.
	LabelPreemptible = quotaPrefix + "preemptible"
	// AnnotationSharedWeight, on a quota, is its share of idle capacity as
	// a ResourceList in JSON (default: its max).
	AnnotationSharedWeight = quotaPrefix + "shared-weight"
	// AnnotationQuotaNamespaces, on a quota, lists (JSON) the namespaces
	// whose pods may be charged to it besides its own.
	AnnotationQuotaNamespaces = quotaPrefix + "namespaces"
	// AnnotationRuntime and AnnotationRequest are written by Koord: the
	// quota's runtime (what it may use now) and request (what its pods
	// ask, capped by max), as ResourceLists in JSON.
	AnnotationRuntime = quotaPrefix + "runtime"
	AnnotationRequest = quotaPrefix + "request"
	// AnnotationNonPreemptibleUsed and AnnotationNonPreemptibleRequest are
	// written by Koord too: what the quota's pods labelled
	// preemptible=false hold and ask (a parent's: its subtree's).
	AnnotationNonPreemptibleUsed    = quotaPrefix + "non-preemptible-used"
	AnnotationNonPreemptibleRequest = quotaPrefix + "non-preemptible-request"

	// RootQuotaName is the tree's root: a quota whose parent is it (or no
	// parent) is at the top.
	RootQuotaName = "koordinator-root-quota"
	// DefaultQuotaName and SystemQuotaName are Koordinator's built-in
	// groups; Koord keeps pods without a quota outside the tree instead.
	DefaultQuotaName = "koordinator-default-quota"
	SystemQuotaName  = "koordinator-system-quota"
)

// maxQuotaValueLen bounds what the quota parsers read of one annotation: an
// ElasticQuota is writable by whoever may create one, and its value is
// decoded on every change.
const maxQuotaValueLen = 64 << 10

// QuotaSpec is what an ElasticQuota's labels and annotations say beyond
// its min and max.
type QuotaSpec struct {
	// Parent is the parent quota's name; "" for the top of the tree.
	Parent     string
	IsParent   bool
	AllowLent  bool
	Namespaces []string
	// SharedWeight is nil when not given (the quota's max is its weight).
	SharedWeight corev1.ResourceList
}

// GetQuotaSpec reads a quota's tree keys. A value that does not parse is
// an error naming its key.
func GetQuotaSpec(labels, annotations map[string]string) (QuotaSpec, error) {
	s := QuotaSpec{AllowLent: true}
	if p := labels[LabelQuotaParent]; p != "" && p != RootQuotaName {
		if errs := validation.IsDNS1123Subdomain(p); len(errs) > 0 {
			return s, labelError(LabelQuotaParent, fmt.Errorf("%q: %s", p, errs[0]))
		}
		s.Parent = p
	}
	var err error
	if s.IsParent, err = boolLabel(labels, LabelQuotaIsParent, false); err != nil {
		return s, err
	}
	if s.AllowLent, err = boolLabel(labels, LabelAllowLentResource, true); err != nil {
		return s, err
	}
	if v, ok := annotations[AnnotationSharedWeight]; ok {
		if len(v) > maxQuotaValueLen {
			return s, annotationError(AnnotationSharedWeight, fmt.Errorf("%d bytes, more than %d", len(v), maxQuotaValueLen))
		}
		if err := decodeJSON(v, &s.SharedWeight); err != nil {
			return s, annotationError(AnnotationSharedWeight, fmt.Errorf("want a ResourceList in JSON ({\"cpu\":\"4\"}): %v", err))
		}
		for name, q := range s.SharedWeight {
			if q.Sign() < 0 {
				return s, annotationError(AnnotationSharedWeight, fmt.Errorf("%s is negative", name))
			}
		}
	}
	if v, ok := annotations[AnnotationQuotaNamespaces]; ok {
		if len(v) > maxQuotaValueLen {
			return s, annotationError(AnnotationQuotaNamespaces, fmt.Errorf("%d bytes, more than %d", len(v), maxQuotaValueLen))
		}
		if err := json.Unmarshal([]byte(v), &s.Namespaces); err != nil {
			return s, annotationError(AnnotationQuotaNamespaces, fmt.Errorf("want a JSON list of namespaces ([\"team-a\"]): %v", err))
		}
		for _, ns := range s.Namespaces {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return s, annotationError(AnnotationQuotaNamespaces, fmt.Errorf("%q: %s", ns, errs[0]))
			}
		}
	}
	return s, nil
}

func boolLabel(labels map[string]string, key string, def bool) (bool, error) {
	switch v, ok := labels[key]; {
	case !ok || v == "":
		return def, nil
	case v == "true":
		return true, nil
	case v == "false":
		return false, nil
	default:
		return def, labelError(key, fmt.Errorf("%q: want true or false", v))
	}
}

// PodQuotaName is the quota a pod's label names ("" for none). A name that
// cannot be a quota's is an error naming the label.
func PodQuotaName(labels map[string]string) (string, error) {
	name := labels[LabelQuotaName]
	if name == "" {
		return "", nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", labelError(LabelQuotaName, fmt.Errorf("%q: %s", name, errs[0]))
	}
	return name, nil
}
