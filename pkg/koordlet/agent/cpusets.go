package agent

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/qos"
	"github.com/koord-project/koord/pkg/koordlet/topology"
)

// vetClaims drops from bound the CPU claims koordlet refuses
// (qos.VetClaims), reporting each once, as an Event on the pod naming the
// conflict: those pods run on the shared pool.
func (a *Agent) vetClaims(logger klog.Logger, k *topology.Kubelet, pods []*corev1.Pod, bound map[types.UID]cpuset.CPUSet) {
	ids := make([]int, 0, len(a.machine.CPUTopology.Detail))
	for _, c := range a.machine.CPUTopology.Detail {
		ids = append(ids, int(c.ID))
	}
	reserved, _ := extension.ParseCPUSet(k.Policy.ReservedCPUs) // validated by ReadKubelet
	refused := qos.VetClaims(pods, bound, qos.Claims{Schedulers: a.opts.SchedulerNames, All: cpuset.New(ids...), Reserved: reserved, KubeletPinned: k.Pinned})
	for _, p := range pods {
		cause := "claim/" + string(p.UID)
		err, bad := refused[p.UID]
		if !bad {
			a.faults.clear(logger, cause)
			continue
		}
		delete(bound, p.UID)
		if a.faults.report(logger, cause, err) {
			a.recorder.Eventf(p, corev1.EventTypeWarning, "CPUClaimRefused", "%v", err)
		}
	}
}

// pinCPUs writes every pod's cpuset (qos.PlanCPUSets) to its cgroups, and
// the BE CPUs to kubelet's besteffort cgroup, then the other QoS knobs
// (applyQoS). Until kubelet's pod cgroups exist under the cgroup root, it
// only looks for them.
func (a *Agent) pinCPUs(ctx context.Context, m *topology.Machine, k *topology.Kubelet, pods []*corev1.Pod, bound map[types.UID]cpuset.CPUSet, malformed map[types.UID]error) {
	logger := klog.FromContext(ctx)
	if a.layout == nil {
		l, err := cgroup.Detect(a.opts.CgroupRoot, a.opts.KubeletCgroupRoot)
		if err != nil {
			a.faults.report(logger, "cgroup", err)
			return
		}
		a.faults.clear(logger, "cgroup")
		logger.Info("Found kubelet's pod cgroups", "root", l.Root, "version", l.Version, "driver", l.Driver)
		a.layout = &l
	}
	ids := make([]int, 0, len(m.CPUTopology.Detail))
	for _, c := range m.CPUTopology.Detail {
		ids = append(ids, int(c.ID))
	}
	all := cpuset.New(ids...)
	reserved, _ := extension.ParseCPUSet(k.Policy.ReservedCPUs) // validated by ReadKubelet
	a.shared = all.Difference(qos.Exclusive(bound, k.Pinned, a.reservationCPUs(logger))).Difference(reserved)
	s := a.strategy(logger)
	known := a.sloKnown(logger)
	be, beDecided := a.beCPUs(s, a.shared)
	beDecided = beDecided && known
	plan := qos.PlanCPUSets(pods, bound, malformed, a.shared, be, k.Pinned)
	if !beDecided {
		// Until BE suppression has decided, BE pods keep what they have.
		for _, p := range pods {
			if extension.EnforcedQoSClass(p) == extension.QoSBE {
				delete(plan, p.UID)
			}
		}
	}
	// Every cgroup is re-read each FullCheckEvery reconciles, to undo
	// changes made behind koordlet's back; in between only pods whose plan
	// or containers changed are touched.
	full := time.Since(a.lastChecked) >= fullCheckEvery*a.opts.ReconcileInterval
	if full {
		a.lastChecked = time.Now()
	}
	if a.applied == nil {
		a.applied = map[types.UID]string{}
	}
	// The besteffort cgroup first: when BE CPUs grow, its pods may then grow
	// into them; when they shrink, SetCPUSetTree narrows children first.
	if beDecided {
		a.pinBestEffort(logger, be, full)
	}
	present := map[types.UID]bool{}
	for _, p := range pods {
		present[p.UID] = true
		cpus, ok := plan[p.UID]
		if !ok {
			continue
		}
		key := cpus.String()
		for _, c := range p.Status.ContainerStatuses {
			key += " " + c.ContainerID
		}
		if !full && a.applied[p.UID] == key {
			continue
		}
		n, err := qos.ApplyCPUSet(*a.layout, p, cpus)
		a.metrics.cpusetWrites.Add(float64(n))
		cause := "cgroup/" + string(p.UID)
		switch {
		case errors.Is(err, qos.ErrCgroupMissing):
			// Pods' cgroups appear after they are bound and vanish when they
			// end; the next pass sees them.
		case err != nil:
			a.faults.report(logger, cause, err)
		default:
			a.faults.clear(logger, cause)
			a.applied[p.UID] = key
		}
	}
	for uid := range a.applied {
		if !present[uid] {
			delete(a.applied, uid)
		}
	}
	if known {
		a.applyQoS(ctx, pods, full)
	}
}

// fullCheckEvery is how many reconciles pass between reads of every pod's
// cgroups (10 s with the default 1 s interval).
const fullCheckEvery = 10
