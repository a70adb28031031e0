package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Fixture trees of the four layouts kubelet makes, with one burstable pod
// and its containerd container in each.
func TestLayouts(t *testing.T) {
	const uid = "0a1b2c3d-0000-4000-8000-000000000001"
	for _, tc := range []struct {
		name                 string
		v2                   bool
		podDir, containerDir string
	}{
		{"v1-cgroupfs", false, "kubepods/burstable/pod" + uid, "kubepods/burstable/pod" + uid + "/abc123"},
		{"v1-systemd", false, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000001.slice",
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000001.slice/cri-containerd-abc123.scope"},
		{"v2-cgroupfs", true, "kubepods/burstable/pod" + uid, "kubepods/burstable/pod" + uid + "/abc123"},
		{"v2-systemd", true, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000001.slice",
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000001.slice/cri-containerd-abc123.scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			hier := func(controller string) string {
				if tc.v2 {
					return root
				}
				return filepath.Join(root, controller)
			}
			if tc.v2 {
				write(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu memory\n")
				write(t, filepath.Join(root, tc.containerDir, "cpu.stat"), "usage_usec 1500\nuser_usec 1000\n")
				write(t, filepath.Join(root, tc.containerDir, "memory.current"), "10000\n")
				write(t, filepath.Join(root, tc.containerDir, "memory.stat"), "anon 6000\ninactive_file 4000\n")
			} else {
				write(t, filepath.Join(hier("cpuacct"), tc.containerDir, "cpuacct.usage"), "1500000\n")
				write(t, filepath.Join(hier("memory"), tc.containerDir, "memory.usage_in_bytes"), "10000\n")
				write(t, filepath.Join(hier("memory"), tc.containerDir, "memory.stat"), "cache 5000\ntotal_inactive_file 4000\n")
			}
			write(t, filepath.Join(hier("cpuset"), tc.podDir, "cpuset.cpus"), "0-7\n")
			write(t, filepath.Join(hier("cpuset"), tc.containerDir, "cpuset.cpus"), "0-7\n")

			l, err := Detect(root, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := l.PodDir(corev1.PodQOSBurstable, uid); got != tc.podDir {
				t.Errorf("pod dir %s, want %s", got, tc.podDir)
			}
			cdir, err := l.ContainerDir(l.PodDir(corev1.PodQOSBurstable, uid), "containerd://abc123")
			if err != nil || cdir != tc.containerDir {
				t.Fatalf("container dir %s (%v), want %s", cdir, err, tc.containerDir)
			}
			if ns, err := l.CPUUsage(cdir); err != nil || ns != 1500000 {
				t.Errorf("cpu usage %d ns (%v), want 1500000", ns, err)
			}
			if ws, err := l.MemoryWorkingSet(cdir); err != nil || ws != 6000 {
				t.Errorf("working set %d (%v), want 6000", ws, err)
			}
			if wrote, err := l.SetCPUSet(cdir, cpuset.New(0, 1, 2, 3, 4, 5, 6, 7)); err != nil || wrote {
				t.Errorf("same cpuset: wrote %v (%v)", wrote, err)
			}
			if wrote, err := l.SetCPUSet(cdir, cpuset.New(2, 3)); err != nil || !wrote {
				t.Errorf("new cpuset: wrote %v (%v)", wrote, err)
			}
			if got, _ := l.CPUSet(cdir); !got.Equals(cpuset.New(2, 3)) {
				t.Errorf("cpuset now %s", got)
			}
			if _, err := l.SetCPUSet(filepath.Join(l.PodDir(corev1.PodQOSBurstable, "gone"), "x"), cpuset.New(1)); !os.IsNotExist(err) {
				t.Errorf("a missing cgroup: %v, want not-exist", err)
			}
			if _, err := os.Stat(filepath.Join(hier("cpuset"), l.PodDir(corev1.PodQOSBurstable, "gone"))); !os.IsNotExist(err) {
				t.Error("writing a missing cgroup created it")
			}
		})
	}
	if _, err := Detect(t.TempDir(), ""); err == nil {
		t.Error("an empty root has no layout")
	}
	if _, err := (Layout{}).ContainerDir("p", "abc"); err == nil {
		t.Error("a container ID without runtime:// is an error")
	}
	if _, err := (Layout{}).ContainerDir("p", "containerd://../../etc"); err == nil {
		t.Error("a container ID with a path is an error")
	}
}
