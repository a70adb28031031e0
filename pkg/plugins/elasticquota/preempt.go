package elasticquota

import (
	"context"
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/koord-project/koord/pkg/quota"
)

// victims is kube-scheduler's DefaultPreemption with the victims chosen by
// quota: its candidate search, scoring and nomination are kept as they are.
type victims struct {
	*defaultpreemption.DefaultPreemption
	p *Plugin
}

// SelectVictimsOnNode picks the fewest pods on the node whose going lets
// the preemptor fit. Who may be a victim:
//   - a pod of the preemptor's own quota, or of none, with a lower
//     priority (DefaultPreemption's rule);
//   - a pod of another quota only while that quota stays at or above its
//     min without it, and only when the preemptor is within its own min
//     (taking back what was lent: then any priority) or has the higher
//     priority;
//   - never a pod labelled quota.scheduling.koordinator.sh/preemptible=false.
//
// Borrowers' pods are taken lowest priority first (youngest first among
// equals) while their quota stays above its min; then, as DefaultPreemption
// does, the most important are given back while the preemptor still fits.
func (v *victims) SelectVictimsOnNode(ctx context.Context, cs fwk.CycleState, preemptor *corev1.Pod, nodeInfo fwk.NodeInfo,
	possible []*preemption.DomainVictim, pdbs []*policy.PodDisruptionBudget) ([]*corev1.Pod, int, *fwk.Status) {
	logger := klog.FromContext(ctx)
	c := v.cycleOf(cs, preemptor)
	if c.used == nil {
		c.used, _, _ = v.p.ledger.Totals()
	}
	prio := corev1helpers.PodPriority(preemptor)

	// Order: least important first, so that a borrowing quota's budget
	// above its min goes to its least important pods.
	sort.SliceStable(possible, func(i, j int) bool { return v.MoreImportantVictim(possible[j], possible[i]) })
	// Per other quota: what it holds above its min, as victims are taken.
	// Its pods already being deleted are counted as gone, so that
	// preemptions in flight together do not take it below its min.
	above := map[string]quota.Vec{}
	leaving := v.p.ledger.Leaving()
	v.p.mu.RLock()
	preempted := maps.Clone(v.p.preempted)
	v.p.mu.RUnlock()
	var eligible []*preemption.DomainVictim
	for _, dv := range possible {
		if len(dv.Pods()) != 1 || dv.Pods()[0].GetPod().Spec.NodeName != nodeInfo.Node().Name {
			continue // group victims span nodes: not this plugin's (GenericWorkload is off)
		}
		pod := dv.Pods()[0].GetPod()
		if pod.DeletionTimestamp != nil || preempted[pod.UID] {
			// Going anyway: counting it as gone costs nobody anything.
			eligible = append(eligible, dv)
			continue
		}
		if !quota.Preemptible(pod) {
			continue
		}
		e, _ := v.p.ledger.Get(pod.UID)
		lower := dv.Priority() < prio
		if e.Quota == "" || e.Quota == c.quota {
			if lower {
				eligible = append(eligible, dv)
			}
			continue
		}
		if !c.reclaiming && !lower {
			continue
		}
		q := c.tree.Get(e.Quota)
		if q == nil {
			continue
		}
		left, ok := above[e.Quota]
		if !ok {
			left = c.used[e.Quota].Clone()
			left.Sub(leaving[e.Quota])
			left.Sub(q.Min)
			above[e.Quota] = left
		}
		if fitsAbove(left, e.Requests, q.Min) {
			left.Sub(e.Requests)
			eligible = append(eligible, dv)
		}
	}
	if len(eligible) == 0 {
		return nil, 0, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no pod may give way (priorities, quota mins)")
	}

	remove := func(dv *preemption.DomainVictim) error {
		pi := dv.Pods()[0]
		if err := nodeInfo.RemovePod(logger, pi.GetPod()); err != nil {
			return err
		}
		return v.p.h.RunPreFilterExtensionRemovePod(ctx, cs, preemptor, pi, nodeInfo).AsError()
	}
	add := func(dv *preemption.DomainVictim) error {
		pi := dv.Pods()[0]
		nodeInfo.AddPodInfo(pi)
		return v.p.h.RunPreFilterExtensionAddPod(ctx, cs, preemptor, pi, nodeInfo).AsError()
	}
	for _, dv := range eligible {
		if err := remove(dv); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
	}
	if st := v.p.h.RunFilterPluginsWithNominatedPods(ctx, cs, preemptor, nodeInfo); !st.IsSuccess() {
		return nil, 0, st
	}
	// Give back the most important first; those the preemptor cannot do
	// without are the victims. PDB-violating ones are given back first.
	sort.SliceStable(eligible, func(i, j int) bool { return v.MoreImportantVictim(eligible[i], eligible[j]) })
	violating, nonViolating := preemption.FilterVictimsWithPDBViolation(eligible, pdbs)
	var out []*corev1.Pod
	violations := 0
	reprieve := func(dv *preemption.DomainVictim) (bool, error) {
		if err := add(dv); err != nil {
			return false, err
		}
		if v.p.h.RunFilterPluginsWithNominatedPods(ctx, cs, preemptor, nodeInfo).IsSuccess() {
			return true, nil
		}
		out = append(out, dv.Pods()[0].GetPod())
		return false, remove(dv)
	}
	for _, vv := range violating {
		fits, err := reprieve(vv.Victim)
		if err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
		if !fits {
			violations += vv.ViolateCount
		}
	}
	for _, dv := range nonViolating {
		if _, err := reprieve(dv); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
	}
	v.p.mu.Lock()
	if v.p.dryRuns[preemptor.UID] == nil {
		v.p.dryRuns[preemptor.UID] = map[string][]*corev1.Pod{}
	}
	v.p.dryRuns[preemptor.UID][nodeInfo.Node().Name] = out
	v.p.mu.Unlock()
	return out, violations, nil
}

// PodEligibleToPreemptOthers is DefaultPreemption's rule with the victims'
// priority left out: a pod whose nominated node still has a pod going for
// an earlier preemption waits for it instead of preempting again (a quota
// taking back its min may have preempted pods of higher priority, which
// DefaultPreemption's check would not count).
func (v *victims) PodEligibleToPreemptOthers(_ context.Context, pod *corev1.Pod, nominatedNodeStatus *fwk.Status) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return false, "not eligible due to preemptionPolicy=Never."
	}
	node := pod.Status.NominatedNodeName
	if node == "" || nominatedNodeStatus.Code() == fwk.UnschedulableAndUnresolvable {
		return true, ""
	}
	if nodeInfo, _ := v.p.h.SnapshotSharedLister().NodeInfos().Get(node); nodeInfo != nil {
		for _, pi := range nodeInfo.GetPods() {
			if preemption.PodTerminatingByPreemption(pi.GetPod()) {
				return false, "not eligible due to a terminating pod on the nominated node."
			}
		}
	}
	return true, ""
}

// fitsAbove says whether taking req from what a quota holds above its min
// leaves it at or above its min in every resource min names.
func fitsAbove(left, req, min quota.Vec) bool {
	for r := range min {
		if req[r] > 0 && left[r]-req[r] < 0 {
			return false
		}
	}
	return true
}

// cycleOf is what PreFilter recorded; a pod it did not see (no quota in
// the cluster) is in no quota.
func (v *victims) cycleOf(cs fwk.CycleState, pod *corev1.Pod) *cycle {
	if d, err := cs.Read(stateKey); err == nil {
		if c, ok := d.(*cycle); ok {
			return c
		}
	}
	return &cycle{tree: quota.NewTree(nil), used: map[string]quota.Vec{}, requests: quota.PodRequests(pod)}
}
