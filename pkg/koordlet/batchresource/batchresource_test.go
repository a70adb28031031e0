package batchresource

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
)

// Koordinator's example: a BE pod asking batch-cpu 500 (milli-cores) gets
// 512 shares and, with a 1000 limit, 100 ms of every 100 ms.
func TestPlan(t *testing.T) {
	l := cgroup.Layout{Version: cgroup.V1, Driver: cgroup.Cgroupfs}
	be := cgrouptest.Pod("spark", "BE",
		cgrouptest.Container{Name: "a", Requests: map[string]string{"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"},
			Limits: map[string]string{"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "2Gi"}},
		cgrouptest.Container{Name: "b", Requests: map[string]string{"kubernetes.io/batch-cpu": "250"},
			Limits: map[string]string{"kubernetes.io/batch-cpu": "500"}})
	plain := cgrouptest.Pod("plain-be", "BE", cgrouptest.Container{Name: "a"})
	// Labelled LS but on batch capacity (admitted while the admission
	// rules were off): held to its batch limits all the same.
	ls := cgrouptest.Pod("ls", "LS", cgrouptest.Container{Name: "a", Requests: map[string]string{"kubernetes.io/batch-cpu": "500", "cpu": "1"},
		Limits: map[string]string{"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"}})
	noBatch := cgrouptest.Pod("web", "LS", cgrouptest.Container{Name: "a", Requests: map[string]string{"cpu": "1"}})
	pods := l.Pods([]*corev1.Pod{be, plain, ls, noBatch})
	podDir, lsDir := "kubepods/besteffort/poduid-spark", "kubepods/burstable/poduid-ls"
	got := cgrouptest.Values(Plan(pods, 100000, true))
	want := map[string]int64{
		podDir + " cpu.shares": 768, podDir + " cpu.cfs_quota_us": 150000,
		// b has no batch-memory limit: the pod has none either.
		podDir + " memory.limit_in_bytes": cgroup.Unlimited,
		podDir + "/spark-a cpu.shares":    512, podDir + "/spark-a cpu.cfs_quota_us": 100000, podDir + "/spark-a memory.limit_in_bytes": 2 << 30,
		podDir + "/spark-b cpu.shares": 256, podDir + "/spark-b cpu.cfs_quota_us": 50000, podDir + "/spark-b memory.limit_in_bytes": cgroup.Unlimited,
		lsDir + " cpu.shares": 512, lsDir + " cpu.cfs_quota_us": 50000, lsDir + " memory.limit_in_bytes": 1 << 30,
		lsDir + "/ls-a cpu.shares": 512, lsDir + "/ls-a cpu.cfs_quota_us": 50000, lsDir + "/ls-a memory.limit_in_bytes": 1 << 30,
	}
	if len(got) != len(want) {
		t.Errorf("settings %v, want only the batch pods' %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	// Off: back to what kubelet set for a BestEffort pod.
	off := cgrouptest.Values(Plan(pods, 100000, false))
	for k, v := range map[string]int64{podDir + " cpu.shares": 2, podDir + " cpu.cfs_quota_us": cgroup.Unlimited, podDir + "/spark-a memory.limit_in_bytes": cgroup.Unlimited} {
		if off[k] != v {
			t.Errorf("off: %s = %d, want kubelet's %d", k, off[k], v)
		}
	}
}
