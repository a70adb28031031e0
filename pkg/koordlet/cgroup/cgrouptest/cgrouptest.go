// Package cgrouptest builds the pods koordlet's QoS strategy tests plan for.
package cgrouptest

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
)

// Container is one app container: requests and limits as "name=quantity"
// pairs ("cpu=1", "kubernetes.io/batch-cpu=500").
type Container struct {
	Name             string
	Requests, Limits map[string]string
}

// Pod is a running pod with a Koordinator QoS label (none when qos is ""),
// each container running with ID containerd://<pod>-<container>.
func Pod(name, qos string, containers ...Container) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if qos != "" {
		p.Labels[extension.LabelPodQoS] = qos
	}
	list := func(m map[string]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c.Name,
			Resources: corev1.ResourceRequirements{Requests: list(c.Requests), Limits: list(c.Limits)}})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, ContainerID: "containerd://" + name + "-" + c.Name})
	}
	return p
}

// WriteFile writes a fixture file, making its directories.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Values maps "<dir> <file>" (v1 file names) to each setting's value.
func Values(s []cgroup.Setting) map[string]int64 {
	out := map[string]int64{}
	for _, x := range s {
		out[x.Dir+" "+x.Knob.String()] = x.Value
	}
	return out
}

// WriteCgroup is topologytest.WriteCgroup, failing the test on error.
func WriteCgroup(t testing.TB, root string, v2 bool, dir, cpus string) {
	t.Helper()
	if err := topologytest.WriteCgroup(root, v2, dir, cpus); err != nil {
		t.Fatal(err)
	}
}

// EveryStrategy is a NodeSLO spec (JSON) that turns every koordlet strategy
// on, with thresholds a quiet fixture node does not reach (nothing is
// evicted): what the cost benchmarks run with.
const EveryStrategy = `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cpuset",
	"memoryEvictThresholdPercent":95,"cpuEvictBESatisfactionLowerPercent":10,"cpuEvictBESatisfactionUpperPercent":20,"cpuEvictTimeWindowSeconds":10},
	"resourceQOSStrategy":{"lsClass":{"cpuQOS":{"enable":true},"memoryQOS":{"enable":true,"minLimitPercent":50,"lowLimitPercent":80,"throttlingPercent":90}},
	"beClass":{"cpuQOS":{"enable":true},"memoryQOS":{"enable":true}}},
	"cpuBurstStrategy":{"policy":"auto"},
	"extensions":{"koord.sh/interferenceGuard":{"enable":true}}}`
