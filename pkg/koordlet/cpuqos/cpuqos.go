// Package cpuqos gives BE pods the kernel's lowest CPU priority, so that a
// latency-sensitive task that wakes up runs at once instead of waiting out a
// batch task's time slice (resourceQOSStrategy.<class>.cpuQOS, gate
// GroupIdentity). Where the kernel has Alibaba Cloud Linux's group identity
// (cpu.bvt_warp_ns) each class gets Koordinator's value (LSR and LS 2, BE
// -1); elsewhere BE goes into the idle scheduling class (cpu.idle, Linux
// 5.15+), which is what group identity -1 stands for on such kernels.
package cpuqos

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

// Mechanism is what the kernel offers for CPU priority between classes.
type Mechanism string

const (
	GroupIdentity Mechanism = "groupIdentity"
	SchedIdle     Mechanism = "schedIdle"
	None          Mechanism = "none"
)

// Detect looks at kubelet's top pod cgroup for the knobs: group identity
// first, then cpu.idle.
func Detect(l cgroup.Layout) Mechanism {
	top := l.QoSDir(corev1.PodQOSGuaranteed)
	if _, err := l.Read(cgroup.CPUGroupIdentity, top); err == nil {
		return GroupIdentity
	}
	if _, err := l.Read(cgroup.CPUIdle, top); err == nil {
		return SchedIdle
	}
	return None
}

// Plan returns the settings of the QoS-class cgroups and the pods. Classes
// whose cpuQOS is off (or the gate, with on false) get the kernel default, so
// turning it off undoes it.
//
// With cpu.idle, the besteffort cgroup is made idle rather than each pod in
// it: its pods are then all behind every other task, and their batch-cpu
// weights still order them among themselves (the kernel ignores the weight
// of an idle cgroup). BE pods kubelet put elsewhere are made idle themselves.
func Plan(l cgroup.Layout, pods []cgroup.PodCgroups, s nodeslo.Strategy, m Mechanism, on bool) []cgroup.Setting {
	class := s.Class
	var out []cgroup.Setting
	switch m {
	case GroupIdentity:
		bvt := func(q extension.QoSClass) int64 {
			if c := class(q); on && c.CPUEnable {
				return c.GroupIdentity
			}
			return 0
		}
		for kq, q := range map[corev1.PodQOSClass]extension.QoSClass{
			corev1.PodQOSGuaranteed: extension.QoSLSR, corev1.PodQOSBurstable: extension.QoSLS, corev1.PodQOSBestEffort: extension.QoSBE,
		} {
			out = append(out, cgroup.Setting{Dir: l.QoSDir(kq), Knob: cgroup.CPUGroupIdentity, Value: bvt(q), Owner: "qos " + string(kq)})
		}
		for _, p := range pods {
			out = append(out, cgroup.Setting{Dir: p.Dir, Knob: cgroup.CPUGroupIdentity, Value: bvt(p.QoS), Owner: p.Owner()})
		}
	case SchedIdle:
		idle := int64(0)
		if be := s.BE; on && be.CPUEnable && (be.SchedIdle == 1 || be.GroupIdentity < 0) {
			idle = 1
		}
		out = append(out, cgroup.Setting{Dir: l.QoSDir(corev1.PodQOSBestEffort), Knob: cgroup.CPUIdle, Value: idle, Owner: "qos BestEffort"})
		for _, p := range pods {
			if p.QoS == extension.QoSBE && p.KubeQoS != corev1.PodQOSBestEffort {
				out = append(out, cgroup.Setting{Dir: p.Dir, Knob: cgroup.CPUIdle, Value: idle, Owner: p.Owner()})
			}
		}
	}
	return out
}
