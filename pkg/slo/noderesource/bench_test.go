package noderesource

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/slo/config"
)

// BenchmarkCalculate is one node's batch resources with 110 pods (the
// kubelet's default maximum), 100 of them measured.
func BenchmarkCalculate(b *testing.B) {
	c := config.DefaultColocation()
	c.Enable = true
	n := node("64", "256Gi")
	var pods []*corev1.Pod
	var usages []*slov1alpha1.PodMetricInfo
	for i := range 110 {
		name := fmt.Sprintf("p%d", i)
		q := extension.QoSLS
		if i%3 == 0 {
			q = extension.QoSBE
		}
		pods = append(pods, pod(name, 9000, q, res("500m", "1Gi")))
		if i < 100 {
			usages = append(usages, usage(name, "200m", "512Mi"))
		}
	}
	m := metric(now.Add(-time.Minute), res("2", "4Gi"), usages...)
	b.ReportAllocs()
	for b.Loop() {
		if got := Calculate(n, m, pods, c, now); got.BatchMilliCPU == 0 {
			b.Fatal(got.Reason)
		}
	}
}
