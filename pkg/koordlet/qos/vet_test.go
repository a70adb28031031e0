package qos

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"
)

func claimant(name, scheduler string, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))},
		Spec:       corev1.PodSpec{SchedulerName: scheduler, NodeName: "n1"},
	}
}

// The attacks of the trust-boundaries review, as koordlet sees them: a
// tenant pod claiming an LSE pod's CPUs, kubelet's reserved CPU 0, CPUs the
// node does not have, or claiming anything without koord-scheduler having
// bound it. Each is refused naming why; the honest pods keep theirs.
func TestVetClaims(t *testing.T) {
	lse := claimant("lse", "koord-scheduler", time.Hour)
	squatter := claimant("squatter", "koord-scheduler", time.Minute)
	reservedGrab := claimant("reserved", "koord-scheduler", time.Minute)
	offNode := claimant("offnode", "koord-scheduler", time.Minute)
	forged := claimant("forged", "default-scheduler", 2*time.Hour)
	pinnedGrab := claimant("pinned", "koord-scheduler", time.Minute)
	honest := claimant("honest", "koord-scheduler", time.Minute)
	ordinary := claimant("ordinary", "koord-scheduler", time.Minute)
	pods := []*corev1.Pod{squatter, reservedGrab, offNode, forged, pinnedGrab, honest, ordinary, lse}
	bound := map[types.UID]cpuset.CPUSet{
		lse.UID:          cpuset.New(2, 3),
		squatter.UID:     cpuset.New(3, 4),
		reservedGrab.UID: cpuset.New(0),
		offNode.UID:      cpuset.New(7, 8),
		forged.UID:       cpuset.New(5),
		pinnedGrab.UID:   cpuset.New(6),
		honest.UID:       cpuset.New(4, 5),
	}
	got := VetClaims(pods, bound, Claims{
		Schedulers:    []string{"koord-scheduler"},
		All:           cpuset.New(0, 1, 2, 3, 4, 5, 6, 7),
		Reserved:      cpuset.New(0),
		KubeletPinned: map[types.UID]cpuset.CPUSet{"static": cpuset.New(6)},
	})
	want := map[types.UID]string{
		squatter.UID:     "CPU 3 is already pod ns/lse's",
		reservedGrab.UID: "CPUs 0 are kubelet's reserved CPUs",
		offNode.UID:      "CPUs 8 are not on this node",
		forged.UID:       `schedulerName "default-scheduler" is not koord-scheduler's`,
		pinnedGrab.UID:   "pinned by kubelet's static CPU manager policy",
	}
	for uid, msg := range want {
		if err := got[uid]; err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "resource-status cpuset") {
			t.Errorf("%s: %v, want refused with %q", uid, err, msg)
		}
	}
	for _, uid := range []types.UID{lse.UID, honest.UID, ordinary.UID} {
		if err := got[uid]; err != nil {
			t.Errorf("%s refused: %v", uid, err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("refused %d claims, want %d: %v", len(got), len(want), got)
	}
	// The same answer whatever order the pod lister returns them in: the
	// older pod wins the overlap.
	for i := 0; i < 5; i++ {
		pods[0], pods[len(pods)-1] = pods[len(pods)-1], pods[0]
		again := VetClaims(pods, bound, Claims{Schedulers: []string{"koord-scheduler"}, All: cpuset.New(0, 1, 2, 3, 4, 5, 6, 7), Reserved: cpuset.New(0)})
		if again[lse.UID] != nil || again[squatter.UID] == nil {
			t.Fatalf("order-dependent answer: lse %v, squatter %v", again[lse.UID], again[squatter.UID])
		}
	}
}
