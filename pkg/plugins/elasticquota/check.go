package elasticquota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/quota"
)

// within says whether used plus requests stays within min for every
// resource min names.
func within(used, requests, min quota.Vec) bool {
	if len(min) == 0 {
		return false
	}
	for r, m := range min {
		if requests[r] > 0 && used[r]+requests[r] > m {
			return false
		}
	}
	return true
}

// pinnedCheck is "" when a non-preemptible pod fits in its quota's min
// beside the quota's other non-preemptible pods, else why not. Preemption
// never takes such a pod, so beyond the min it would hold borrowed
// capacity its lender could never get back: the label is the tenant's to
// write, the min is the operator's. Every resource the quota limits (its
// max names) or guarantees (its min names) is checked; a min that does not
// name a resource the max limits guarantees none of it.
func pinnedCheck(q *quota.Quota, pinned, req quota.Vec) string {
	var over []string
	for _, r := range resourceNames(q.Max, q.Min) {
		if req[r] > 0 && pinned[r]+req[r] > q.Min[r] {
			over = append(over, fmt.Sprintf("%s: non-preemptible pods hold %s + %s asked > min %s", r,
				quota.Show(r, pinned[r]), quota.Show(r, req[r]), quota.Show(r, q.Min[r])))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("quota %s: a pod labelled %s=false must fit in the quota's min: %s", q.Name, extension.LabelPreemptible, strings.Join(over, "; "))
}

// check is "" when the quota takes the pod, else why not: every resource
// the quota's max names is checked against its runtime (or, with
// enableRuntimeQuota off, its max).
func (p *Plugin) check(q *quota.Quota, runtime, used, req quota.Vec) string {
	var over []string
	for _, r := range resourceNames(q.Max) {
		if req[r] == 0 {
			continue
		}
		limit, what := runtime[r], "runtime"
		if !p.args.EnableRuntimeQuota {
			limit, what = q.Max[r], "max"
		}
		if used[r]+req[r] > limit {
			over = append(over, fmt.Sprintf("%s: used %s + %s asked > %s %s (min %s, max %s)", r,
				quota.Show(r, used[r]), quota.Show(r, req[r]), what, quota.Show(r, limit), quota.Show(r, q.Min[r]), quota.Show(r, q.Max[r])))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("quota %s is full: %s", q.Name, strings.Join(over, "; "))
}

// resourceNames are the resources the vectors name, sorted, so that a
// refusal names them in the same order each time.
func resourceNames(vs ...quota.Vec) []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, v := range vs {
		for r := range v {
			if !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	slices.Sort(names)
	return names
}
