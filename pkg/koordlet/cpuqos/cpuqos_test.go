package cpuqos

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

func strategy(t *testing.T, beEnable bool) nodeslo.Strategy {
	on := beEnable
	s, err := nodeslo.Resolve(&slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
		LSClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: &on}},
		BEClass: &slov1alpha1.ResourceQOS{CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: &on}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlanSchedIdle(t *testing.T) {
	l := cgroup.Layout{Version: cgroup.V1, Driver: cgroup.Cgroupfs}
	pods := l.Pods([]*corev1.Pod{
		cgrouptest.Pod("batch", "BE", cgrouptest.Container{Name: "a"}),
		cgrouptest.Pod("be-burstable", "BE", cgrouptest.Container{Name: "a", Requests: map[string]string{"cpu": "1"}}),
		cgrouptest.Pod("web", "LS", cgrouptest.Container{Name: "a", Requests: map[string]string{"cpu": "1"}}),
	})
	got := cgrouptest.Values(Plan(l, pods, strategy(t, true), SchedIdle, true))
	want := map[string]int64{
		// The besteffort cgroup is idle, not each pod in it.
		"kubepods/besteffort cpu.idle": 1,
		// A BE pod kubelet put elsewhere is idle itself.
		"kubepods/burstable/poduid-be-burstable cpu.idle": 1,
	}
	if len(got) != len(want) {
		t.Errorf("settings %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	for name, s := range map[string][]cgroup.Setting{
		"class off": Plan(l, pods, strategy(t, false), SchedIdle, true),
		"gate off":  Plan(l, pods, strategy(t, true), SchedIdle, false),
	} {
		for k, v := range cgrouptest.Values(s) {
			if v != 0 {
				t.Errorf("%s: %s = %d, want the kernel default 0", name, k, v)
			}
		}
	}
}

func TestPlanGroupIdentity(t *testing.T) {
	l := cgroup.Layout{Version: cgroup.V2, Driver: cgroup.Systemd}
	pods := l.Pods([]*corev1.Pod{
		cgrouptest.Pod("batch", "BE", cgrouptest.Container{Name: "a"}),
		cgrouptest.Pod("web", "LS", cgrouptest.Container{Name: "a", Requests: map[string]string{"cpu": "1"}}),
	})
	got := cgrouptest.Values(Plan(l, pods, strategy(t, true), GroupIdentity, true))
	for k, v := range map[string]int64{
		"kubepods.slice/kubepods-besteffort.slice cpu.bvt_warp_ns": -1,
		"kubepods.slice/kubepods-burstable.slice cpu.bvt_warp_ns":  2,
		// lsrClass is not enabled: its classes' cgroups keep the default.
		"kubepods.slice cpu.bvt_warp_ns": 0,
		filepath.Join("kubepods.slice/kubepods-besteffort.slice", "kubepods-besteffort-poduid_batch.slice") + " cpu.bvt_warp_ns": -1,
	} {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

func TestDetect(t *testing.T) {
	root := t.TempDir()
	l := cgroup.Layout{Root: root, Version: cgroup.V1, Driver: cgroup.Cgroupfs}
	if m := Detect(l); m != None {
		t.Errorf("no files: %s", m)
	}
	cgrouptest.WriteFile(t, filepath.Join(root, "cpu/kubepods/cpu.idle"), "0\n")
	if m := Detect(l); m != SchedIdle {
		t.Errorf("cpu.idle: %s", m)
	}
	cgrouptest.WriteFile(t, filepath.Join(root, "cpu/kubepods/cpu.bvt_warp_ns"), "0\n")
	if m := Detect(l); m != GroupIdentity {
		t.Errorf("bvt: %s", m)
	}
}
