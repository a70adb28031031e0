// Package cpusuppress bounds what BE pods together may use of a node's CPU,
// so that a burst of batch work cannot take the CPUs latency-sensitive pods
// need (Koordinator's BECPUSuppress):
//
//	BE may use = capacity × cpuSuppressThresholdPercent − non-BE pods' usage − max(system usage, kubelet-reserved CPU)
//
// measured at the latest sample. With cpuSuppressPolicy cpuset the
// besteffort cgroup gets that many whole CPUs, rounded down, from the shared pool (never CPUs
// bound to LSE/LSR pods or reservations); with cfsQuota it gets that much CFS
// quota, shared with the BE pods kubelet put in other cgroups (quota.go).
// A floor keeps BE from freezing. The interference guard (guard.go)
// lowers the threshold while LS pods wait too long for a CPU.
package cpusuppress

import (
	"k8s.io/utils/cpuset"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// The floor: whatever the LS load, BE pods keep at least this much (or
// cpuSuppressMinPercent of the node, if more), so that a BE task holding a
// lock, or a batch job's heartbeat, still gets to run. Koordinator keeps 2
// CPUs (cpuset) and 0.02 CPU (quota); one CPU lets a 2-CPU node suppress
// at all, and 0.1 CPU is still enough for a heartbeat.
const (
	FloorCPUs  = 1
	FloorMilli = 100
)

// Input is one decision's facts. CPU amounts are in milli-cores.
type Input struct {
	Policy slov1alpha1.CPUSuppressPolicy
	// ThresholdPercent and MinPercent are the NodeSLO's; GuardSteps is how
	// many steps of GuardStepPercent the interference guard takes off.
	ThresholdPercent, MinPercent int64
	GuardSteps, GuardStepPercent int64
	CapacityMilli, ReservedMilli int64
	// NodeUsedMilli is the node's usage; PodsUsedMilli every pod's together;
	// NonBEUsedMilli the non-BE pods'.
	NodeUsedMilli, PodsUsedMilli, NonBEUsedMilli int64
	// Pool is where BE CPUs may come from (the shared pool); CPUs places them.
	Pool cpuset.CPUSet
	CPUs []CPU
	// Prev is the previous decision (nil at start).
	Prev *Result
}

// CPU places a logical CPU: its physical core and NUMA node.
type CPU struct{ ID, Core, Node int }

// Result is a decision.
type Result struct {
	Policy slov1alpha1.CPUSuppressPolicy
	// TargetMilli is what the formula allows now (floor included);
	// AllowedMilli what BE gets: a rise takes effect only once two decisions
	// in a row ask for it (see Decide).
	TargetMilli, AllowedMilli int64
	// CPUs is the besteffort cpuset (cpuset policy).
	CPUs cpuset.CPUSet
}

// Decide applies the formula. A fall takes effect at once; a rise only up to
// the previous decision's target, so one quiet sample between two busy ones
// does not hand BE the CPUs back (and take them again): BE follows a load
// change within two collect intervals either way.
func Decide(in Input) Result {
	threshold := max(in.ThresholdPercent-in.GuardSteps*in.GuardStepPercent, 0)
	system := max(in.NodeUsedMilli-in.PodsUsedMilli, in.ReservedMilli, 0)
	target := in.CapacityMilli*threshold/100 - in.NonBEUsedMilli - system
	floor := in.CapacityMilli * in.MinPercent / 100
	if in.Policy == slov1alpha1.CPUCfsQuotaPolicy {
		floor = max(floor, FloorMilli)
	} else {
		floor = max(floor, FloorCPUs*1000)
	}
	target = min(max(target, floor), in.CapacityMilli)
	allowed := target
	if p := in.Prev; p != nil && p.Policy == in.Policy && target > p.AllowedMilli {
		allowed = min(target, max(p.AllowedMilli, p.TargetMilli))
	}
	r := Result{Policy: in.Policy, TargetMilli: target, AllowedMilli: allowed}
	if in.Policy != slov1alpha1.CPUCfsQuotaPolicy {
		var prev cpuset.CPUSet
		if in.Prev != nil {
			prev = in.Prev.CPUs
		}
		// Whole CPUs, rounded down: BE never gets more than the formula
		// allows (Koordinator rounds up, which on a small node means no
		// suppression at all).
		r.CPUs = Pick(in.Pool, in.CPUs, int(allowed/1000), prev)
	}
	return r
}
