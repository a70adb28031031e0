package coscheduling

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
)

// Permit lets a member bind once its gang (and every gang of its group)
// has minMember members placed: then all waiting members are let go. Until
// then it waits, for the gang's timeout.
func (p *Plugin) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	g, st := p.gangOf(pod)
	if st != nil {
		return st, 0
	}
	if g == nil || p.isSatisfied(g) {
		return nil, 0
	}
	// This member found a node: a failure it made itself is over, and the
	// members Permit turned away for it come back to wait with it.
	p.mu.Lock()
	f := p.failed[g.key]
	cleared := f != nil && f.UID == pod.UID
	if cleared {
		delete(p.failed, g.key)
	}
	p.mu.Unlock()
	if cleared {
		p.activateSiblings(pod)
	}
	if f := p.strictFailure(g, pod); f != nil {
		return fwk.NewStatus(fwk.Unschedulable, strictMessage(g, f)), 0
	}
	waiting := map[string]int32{}
	p.h.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		wpod := wp.GetPod()
		if wpod.UID != pod.UID {
			waiting[wpod.Namespace+"/"+extension.GangName(wpod.Labels, wpod.Annotations)]++
		}
	})
	waiting[g.key]++ // this member
	var short []string
	for _, key := range g.groups {
		have, need, err := p.placed(key, g, waiting[key])
		if err != nil {
			return fwk.AsStatus(err), 0
		}
		if have < need {
			short = append(short, fmt.Sprintf("%s has %d of %d", key, have, need))
		}
	}
	if len(short) > 0 {
		return fwk.NewStatus(fwk.Wait, "waiting for the gang: "+strings.Join(short, ", ")), g.timeout
	}
	p.markSatisfied(g)
	p.h.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		wpod := wp.GetPod()
		if slices.Contains(g.groups, wpod.Namespace+"/"+extension.GangName(wpod.Labels, wpod.Annotations)) {
			wp.Allow(Name)
		}
	})
	return nil, 0
}

// placed counts a gang's members that count towards its minMember under
// its match policy: those waiting at Permit, plus (but for only-waiting)
// those bound.
func (p *Plugin) placed(key string, self *gang, waiting int32) (have, need int32, err error) {
	g := self
	if key != self.key {
		// Another gang of the group: read it from any of its pods.
		members, err := p.members(key)
		if err != nil {
			return 0, 0, err
		}
		if len(members) == 0 {
			return 0, 1, nil
		}
		var st *fwk.Status
		if g, st = p.gangOf(members[0]); st != nil || g == nil {
			return 0, 1, nil
		}
	}
	have = waiting
	if g.matchPolicy != extension.GangMatchOnlyWaiting {
		members, err := p.members(key)
		if err != nil {
			return 0, 0, err
		}
		for _, m := range members {
			if m.Spec.NodeName != "" {
				have++
			}
		}
	}
	return have, g.minMember, nil
}

func satisfiedKey(g *gang) string { return g.key + "/" + g.uid }

func (p *Plugin) isSatisfied(g *gang) bool {
	if g.matchPolicy != extension.GangMatchOnceSatisfied {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.satisfied[satisfiedKey(g)]
}

func (p *Plugin) markSatisfied(g *gang) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.satisfied[satisfiedKey(g)] = true
}
