package cpusuppress

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
)

// A BE pod that asks for 1m of native CPU runs in kubelet's burstable
// cgroup: cfsQuota suppression holds it to its share at its pod cgroup, so
// that BE pods together stay within what BE may use, wherever they run.
func TestQuotaSettingsCoverBEPodsOutsideBestEffort(t *testing.T) {
	l := cgroup.Layout{Version: cgroup.V1, Driver: cgroup.Cgroupfs}
	inBE := cgrouptest.Pod("spark", "BE", cgrouptest.Container{Name: "a", Requests: map[string]string{"kubernetes.io/batch-cpu": "3000"}})
	escaper := cgrouptest.Pod("escaper", "BE", cgrouptest.Container{Name: "a",
		Requests: map[string]string{"cpu": "1m", "kubernetes.io/batch-cpu": "999"}, Limits: map[string]string{"cpu": "8"}})
	ls := cgrouptest.Pod("web", "LS", cgrouptest.Container{Name: "a", Requests: map[string]string{"cpu": "2"}})
	pods := l.Pods([]*corev1.Pod{inBE, escaper, ls})
	period := int64(100000)
	beDir, escDir := "kubepods/besteffort", "kubepods/burstable/poduid-escaper"

	// BE may use 4 cores: 3 for the besteffort cgroup (weight 3000), 1 for
	// the escaper (weight 1000).
	got := cgrouptest.Values(QuotaSettings(l, pods, &Result{AllowedMilli: 4000}, period, nil))
	want := map[string]int64{
		beDir + " cpu.cfs_quota_us":  300000,
		escDir + " cpu.cfs_quota_us": 100000,
		// Its container keeps its own 8-core limit; the applier caps it at
		// the pod's.
		escDir + "/escaper-a cpu.cfs_quota_us": 800000,
	}
	if len(got) != len(want) {
		t.Errorf("settings %v, want %v (nothing for the LS pod)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	// A batch limit below its share stays.
	planned := []cgroup.Setting{{Dir: escDir, Knob: cgroup.CPUQuota, Value: 50000}}
	if v := cgrouptest.Values(QuotaSettings(l, pods, &Result{AllowedMilli: 4000}, period, planned))[escDir+" cpu.cfs_quota_us"]; v != 50000 {
		t.Errorf("escaper with a 0.5-core batch limit: quota %d, want 50000", v)
	}
	// Suppression off: the besteffort cgroup is unlimited and the escaper
	// gets kubelet's own quota back.
	off := cgrouptest.Values(QuotaSettings(l, pods, nil, period, nil))
	if off[beDir+" cpu.cfs_quota_us"] != cgroup.Unlimited || off[escDir+" cpu.cfs_quota_us"] != 800000 {
		t.Errorf("off: %v, want besteffort unlimited and the escaper at kubelet's 800000", off)
	}
	// Without BE pods outside, the besteffort cgroup has the whole share.
	alone := cgrouptest.Values(QuotaSettings(l, l.Pods([]*corev1.Pod{inBE, ls}), &Result{AllowedMilli: 4000}, period, nil))
	if len(alone) != 1 || alone[beDir+" cpu.cfs_quota_us"] != 400000 {
		t.Errorf("alone: %v, want only besteffort at 400000", alone)
	}
}
