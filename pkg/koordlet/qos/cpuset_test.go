package qos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
)

// pod builds a pod with one running container; guaranteed sets limits.
func pod(name, qos string, guaranteed bool, status string) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	c := corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Requests: res}}
	if guaranteed {
		c.Resources.Limits = res
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{extension.LabelPodQoS: qos}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "main", ContainerID: "containerd://" + name + "-c"}}},
	}
	if status != "" {
		p.Annotations = map[string]string{extension.AnnotationResourceStatus: status}
	}
	return p
}

func TestPlanCPUSets(t *testing.T) {
	all := cpuset.New(0, 1, 2, 3, 4, 5, 6, 7)
	bestEffort := pod("besteffort", "BE", false, "")
	bestEffort.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	pods := []*corev1.Pod{
		pod("lse", "LSE", true, `{"cpuset":"2-3"}`),
		pod("ls", "LS", false, ""),
		pod("be", "BE", false, ""),
		pod("kubelet-static", "LSR", true, ""),
		pod("broken", "LSR", true, `{"cpuset":"x"}`),
		bestEffort,
	}
	bound, malformed := Bound(pods)
	if len(malformed) != 1 || !strings.Contains(malformed["uid-broken"].Error(), "pod default/broken: annotation scheduling.koordinator.sh/resource-status") {
		t.Errorf("malformed %v", malformed)
	}
	pinned := map[types.UID]cpuset.CPUSet{"uid-kubelet-static": cpuset.New(7)}
	// A reservation pins 1: it leaves the shared pool like a bound pod's CPUs.
	shared := all.Difference(Exclusive(bound, pinned, []cpuset.CPUSet{cpuset.New(1)})).Difference(cpuset.New(0))
	plan := PlanCPUSets(pods, bound, malformed, shared, cpuset.New(5, 6), pinned)
	want := map[types.UID]string{"uid-lse": "2-3", "uid-ls": "4-6", "uid-be": "5-6"}
	if len(plan) != len(want) {
		t.Errorf("plan %v, want only %v (kubelet-pinned, besteffort-cgroup and malformed pods are left alone)", plan, want)
	}
	for uid, cpus := range want {
		if plan[uid].String() != cpus {
			t.Errorf("%s: %s, want %s", uid, plan[uid], cpus)
		}
	}
}

// ApplyCPUSet on a v1 fixture tree: order of writes keeps every child within
// its parent, and a second pass writes nothing.
func TestApplyCPUSetFixture(t *testing.T) {
	root := t.TempDir()
	p := pod("web", "LSR", true, "")
	l := cgroup.Layout{Root: root, Version: cgroup.V1, Driver: cgroup.Cgroupfs}
	// sandbox-id is the pause container: in no pod status, but a child cgroup all the same.
	for _, d := range []string{"kubepods/poduid-web", "kubepods/poduid-web/web-c", "kubepods/poduid-web/sandbox-id"} {
		if err := os.MkdirAll(filepath.Join(root, "cpuset", d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "cpuset", d, "cpuset.cpus"), []byte("0-3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := ApplyCPUSet(l, p, cpuset.New(2, 3))
	if err != nil || n != 3 {
		t.Fatalf("first apply: %d writes, %v; want 3 (container, sandbox, then pod)", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "cpuset/kubepods/poduid-web/sandbox-id/cpuset.cpus")); strings.TrimSpace(string(b)) != "2-3" {
		t.Errorf("sandbox cgroup left at %q: cgroup v1 then refuses to narrow the pod", b)
	}
	if n, err := ApplyCPUSet(l, p, cpuset.New(2, 3)); err != nil || n != 0 {
		t.Errorf("second apply: %d writes, %v; want none", n, err)
	}
	if _, err := ApplyCPUSet(l, pod("late", "LSR", true, ""), cpuset.New(1)); err == nil || !strings.Contains(err.Error(), "cgroup not found") {
		t.Errorf("a pod whose cgroup is not there yet: %v", err)
	}
}

// On this machine, as root: real cgroup v1 cpusets with a real process in
// each container cgroup. koordlet's plan pins the LSR pod's process to its
// CPU and the LS pod's to the shared pool, as the kernel reports them.
func TestApplyCPUSetRealCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups (CI runs as root)")
	}
	const cpusetRoot = "/sys/fs/cgroup/cpuset"
	rootCPUs, err := os.ReadFile(filepath.Join(cpusetRoot, "cpuset.cpus"))
	if err != nil {
		t.Skipf("no cgroup v1 cpuset controller at %s: %v", cpusetRoot, err)
	}
	all, err := cpuset.Parse(strings.TrimSpace(string(rootCPUs)))
	if err != nil || all.Size() < 2 {
		t.Skipf("needs at least 2 CPUs in the root cpuset, have %q", rootCPUs)
	}
	mems, err := os.ReadFile(filepath.Join(cpusetRoot, "cpuset.mems"))
	if err != nil {
		t.Fatal(err)
	}
	parent := fmt.Sprintf("koord-test-%d", os.Getpid())
	l := cgroup.Layout{Root: "/sys/fs/cgroup", Version: cgroup.V1, Driver: cgroup.Cgroupfs, Parent: parent}
	lsr := pod("lsr", "LSR", true, fmt.Sprintf(`{"cpuset":"%d"}`, all.List()[1]))
	ls := pod("ls", "LS", false, "")

	// The tree kubelet and the runtime would make; removed (deepest first)
	// once the processes are gone.
	var dirs []string
	mk := func(rel string) string {
		dir := filepath.Join(cpusetRoot, rel)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
		for file, v := range map[string]string{"cpuset.mems": string(mems), "cpuset.cpus": all.String()} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(strings.TrimSpace(v)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range procs {
			_ = c.Process.Kill()
			_, _ = c.Process.Wait()
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				t.Errorf("removing %s: %v", dirs[i], err)
			}
		}
	})
	mk(parent)
	mk(filepath.Join(parent, "kubepods"))
	mk(filepath.Join(parent, "kubepods/burstable"))
	run := func(p *corev1.Pod) *exec.Cmd {
		podDir := mk(filepath.Join(parent, strings.TrimPrefix(l.PodDir(qosOf(p), p.UID), parent)))
		cdir := mk(filepath.Join(strings.TrimPrefix(podDir, cpusetRoot), p.Name+"-c"))
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		if err := os.WriteFile(filepath.Join(cdir, "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	lsrProc, lsProc := run(lsr), run(ls)

	bound, malformed := Bound([]*corev1.Pod{lsr, ls})
	if len(malformed) > 0 {
		t.Fatal(malformed)
	}
	shared := all.Difference(Exclusive(bound, nil, nil))
	plan := PlanCPUSets([]*corev1.Pod{lsr, ls}, bound, malformed, shared, shared, nil)
	for _, p := range []*corev1.Pod{lsr, ls} {
		if _, err := ApplyCPUSet(l, p, plan[p.UID]); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		cmd  *exec.Cmd
		want cpuset.CPUSet
	}{{lsrProc, cpuset.New(all.List()[1])}, {lsProc, all.Difference(cpuset.New(all.List()[1]))}} {
		if got := allowedCPUs(t, tc.cmd.Process.Pid); !got.Equals(tc.want) {
			t.Errorf("process %d may run on %s, want %s", tc.cmd.Process.Pid, got, tc.want)
		}
	}
	for _, p := range []*corev1.Pod{lsr, ls} {
		if n, err := ApplyCPUSet(l, p, plan[p.UID]); err != nil || n != 0 {
			t.Errorf("second pass over %s: %d writes, %v", p.Name, n, err)
		}
	}
}

// allowedCPUs is Cpus_allowed_list of /proc/<pid>/status, once it settles.
func allowedCPUs(t *testing.T, pid int) cpuset.CPUSet {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			s, err := cpuset.Parse(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatal("no Cpus_allowed_list")
	return cpuset.New()
}

func qosOf(p *corev1.Pod) corev1.PodQOSClass {
	if p.Spec.Containers[0].Resources.Limits != nil {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
