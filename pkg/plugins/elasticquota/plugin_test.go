package elasticquota

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/pkg/quota"
)

// A non-preemptible pod must fit in its quota's min beside the quota's
// other non-preemptible pods, for every resource the quota limits; a
// resource the max limits and the min does not name is guaranteed none.
func TestPinnedCheck(t *testing.T) {
	const mem = corev1.ResourceMemory // Vec holds thousandths, as for CPU
	cpu := corev1.ResourceCPU
	q := &quota.Quota{Name: "team-a", Min: quota.Vec{cpu: 4000}, Max: quota.Vec{cpu: 8000, mem: 8 << 30 * 1000}}
	for _, tc := range []struct {
		name          string
		pinned, asked quota.Vec
		want          string // "" admitted, else part of the refusal
	}{
		{"within the min", quota.Vec{cpu: 2000}, quota.Vec{cpu: 2000}, ""},
		{"past the min", quota.Vec{cpu: 3000}, quota.Vec{cpu: 2000}, "quota team-a: a pod labelled quota.scheduling.koordinator.sh/preemptible=false must fit in the quota's min: cpu: non-preemptible pods hold 3 + 2 asked > min 4"},
		{"a resource the min does not name", nil, quota.Vec{cpu: 1000, mem: 1000 << 30}, "memory: non-preemptible pods hold 0 + 1Gi asked > min 0"},
		{"a resource the quota does not limit", nil, quota.Vec{cpu: 1000, "nvidia.com/gpu": 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pinnedCheck(q, tc.pinned, tc.asked)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("pinnedCheck = %q, want %q", got, tc.want)
			}
		})
	}
}
