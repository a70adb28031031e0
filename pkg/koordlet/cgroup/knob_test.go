package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The same settings land in each hierarchy's own files and units, and a
// value already in place (after the kernel's rounding) is not written again.
func TestKnobsOnFixtures(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			root := t.TempDir()
			l := Layout{Root: root, Version: V1, Driver: Cgroupfs}
			files := map[string]string{"cpu/d/cpu.shares": "2", "cpu/d/cpu.cfs_quota_us": "-1", "cpu/d/cpu.cfs_period_us": "100000",
				"cpu/d/cpu.idle": "0", "memory/d/memory.limit_in_bytes": "9223372036854771712", "cpu/d/cpu.cfs_burst_us": "0"}
			if v2 {
				l.Version = V2
				files = map[string]string{"d/cpu.weight": "1", "d/cpu.max": "max 100000", "d/cpu.idle": "0", "d/memory.max": "max",
					"d/memory.min": "0", "d/memory.low": "0", "d/memory.high": "max", "d/cpu.max.burst": "0"}
			}
			for f, c := range files {
				write(t, filepath.Join(root, f), c+"\n")
			}
			for _, k := range []Knob{CPUQuota, MemoryLimit} {
				if v, err := l.Read(k, "d"); err != nil || v != Unlimited {
					t.Errorf("%v: unset reads %d, %v; want Unlimited", k, v, err)
				}
			}
			page := int64(os.Getpagesize())
			for _, c := range []struct {
				k        Knob
				v        int64
				v1, v2   string
				v1f, v2f string
			}{
				{CPUShares, 1024, "cpu.shares", "cpu.weight", "1024", "39"},
				{CPUQuota, 50000, "cpu.cfs_quota_us", "cpu.max", "50000", "50000"},
				{CPUIdle, 1, "cpu.idle", "cpu.idle", "1", "1"},
				{MemoryLimit, 100*page + 17, "memory.limit_in_bytes", "memory.max", fmt.Sprint(100 * page), fmt.Sprint(100 * page)},
				{CPUBurst, 20000, "cpu.cfs_burst_us", "cpu.max.burst", "20000", "20000"},
			} {
				wrote, err := l.Write(c.k, "d", c.v)
				if err != nil || !wrote {
					t.Fatalf("%v: wrote %v, %v", c.k, wrote, err)
				}
				file, want := filepath.Join(root, knobs[c.k].controller, "d", c.v1), c.v1f
				if v2 {
					file, want = filepath.Join(root, "d", c.v2), c.v2f
				}
				if got := read(t, file); got != want {
					t.Errorf("%v: %s holds %q, want %q", c.k, file, got, want)
				}
				// The kernel would read the memory limit back page-aligned: the
				// fixture holds it so, and the same value is not written again.
				if wrote, err := l.Write(c.k, "d", c.v); err != nil || wrote {
					t.Errorf("%v: rewrote an unchanged value (%v, %v)", c.k, wrote, err)
				}
			}
			if v2 {
				// A quota written alone keeps the period.
				write(t, filepath.Join(root, "d/cpu.max"), "50000 100000\n")
				if p, err := l.CFSPeriod("d"); err != nil || p != 100000 {
					t.Errorf("period %d, %v", p, err)
				}
				if v, _ := l.Read(CPUShares, "d"); v < 990 || v > 1050 {
					t.Errorf("cpu.weight 39 reads back as %d shares, want about 1024", v)
				}
			}
		})
	}
}

// A knob the kernel lacks in an existing cgroup is ErrUnsupported; a
// cgroup that is gone is fs.ErrNotExist.
func TestMissingFiles(t *testing.T) {
	root := t.TempDir()
	l := Layout{Root: root, Version: V1}
	write(t, filepath.Join(root, "memory/d/memory.limit_in_bytes"), "-1\n")
	if _, err := l.Write(MemoryMin, "d", 4096); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "memory.min") {
		t.Errorf("memory.min on v1: %v, want ErrUnsupported naming the file", err)
	}
	if _, err := l.Write(MemoryLimit, "gone", 4096); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUnsupported) {
		t.Errorf("vanished cgroup: %v, want fs.ErrNotExist", err)
	}
}

// A pod cgroup caught while the kernel removes it (its directory still
// listed, its files gone) is a vanished cgroup, not a kernel without the
// knob: kubelet's kubepods cgroup has the file. The Applier keeps the knob
// and sets it on the next pod.
func TestCgroupBeingRemovedIsNotUnsupported(t *testing.T) {
	root := t.TempDir()
	l := Layout{Root: root, Version: V1, Driver: Cgroupfs}
	write(t, filepath.Join(root, "memory/kubepods/memory.limit_in_bytes"), "9223372036854771712\n")
	if err := os.MkdirAll(filepath.Join(root, "memory/kubepods/besteffort/pod-going"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(MemoryLimit, "kubepods/besteffort/pod-going"); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUnsupported) {
		t.Errorf("a cgroup being removed: %v, want fs.ErrNotExist", err)
	}
	a := &Applier{Layout: l}
	res := a.Apply([]Setting{{Dir: "kubepods/besteffort/pod-going", Knob: MemoryLimit, Value: 1 << 20, Owner: "going"}}, true)
	if len(res.Unsupported) != 0 || len(res.Errors) != 0 || a.Unsupported(MemoryLimit) {
		t.Fatalf("a cgroup being removed made memory.limit_in_bytes unsupported: %+v", res)
	}
	write(t, filepath.Join(root, "memory/kubepods/besteffort/pod-next/memory.limit_in_bytes"), "9223372036854771712\n")
	if res := a.Apply([]Setting{{Dir: "kubepods/besteffort/pod-next", Knob: MemoryLimit, Value: 1 << 20, Owner: "next"}}, true); res.Writes != 1 {
		t.Errorf("the next pod's memory limit was not written: %+v", res)
	}
	// Where kubepods lacks the file too, the kernel lacks the knob.
	if _, err := l.Read(MemoryMin, "kubepods/besteffort/pod-next"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("memory.min on v1 under kubepods: %v, want ErrUnsupported", err)
	}
}

// The applier reads before it writes, writes in an order the kernel takes,
// reports an unsupported knob once and does not try it again, and between
// full passes leaves confirmed values unread.
func TestApplierFixture(t *testing.T) {
	root := t.TempDir()
	l := Layout{Root: root, Version: V1}
	for _, d := range []string{"be", "be/pod", "be/pod/c"} {
		write(t, filepath.Join(root, "cpu", d, "cpu.cfs_quota_us"), "-1\n")
		write(t, filepath.Join(root, "cpu", d, "cpu.cfs_burst_us"), "0\n")
	}
	write(t, filepath.Join(root, "memory/be/pod/memory.limit_in_bytes"), "9223372036854771712\n")
	a := &Applier{Layout: l}
	settings := []Setting{
		{Dir: "be/pod/c", Knob: CPUQuota, Value: 80000, Owner: "pod"},
		{Dir: "be/pod", Knob: CPUQuota, Value: 100000, Owner: "pod"},
		{Dir: "be", Knob: CPUQuota, Value: 50000, Owner: "be"},
		{Dir: "be/pod/c", Knob: CPUBurst, Value: 90000, Owner: "pod"},
		{Dir: "be/pod", Knob: MemoryMin, Value: 4096, Owner: "pod"},
		{Dir: "be/pod", Knob: MemoryLimit, Value: 1 << 20, Owner: "pod"},
	}
	res := a.Apply(settings, false)
	if len(res.Errors) != 0 {
		t.Fatalf("errors %v", res.Errors)
	}
	// v1: no child above its parent's quota, no burst above the quota.
	for dir, want := range map[string]string{"be": "50000", "be/pod": "50000", "be/pod/c": "50000"} {
		if got := read(t, filepath.Join(root, "cpu", dir, "cpu.cfs_quota_us")); got != want {
			t.Errorf("%s quota %s, want %s", dir, got, want)
		}
	}
	if got := read(t, filepath.Join(root, "cpu/be/pod/c/cpu.cfs_burst_us")); got != "50000" {
		t.Errorf("burst %s, want it capped at the quota 50000", got)
	}
	if _, ok := res.Unsupported[MemoryMin]; !ok || !a.Unsupported(MemoryMin) {
		t.Errorf("memory.min on v1 not reported unsupported: %v", res.Unsupported)
	}
	if res.Writes != 5 {
		t.Errorf("%d writes, want 5", res.Writes)
	}
	// A change behind its back: not seen until a full pass; the
	// unsupported knob is not reported again.
	write(t, filepath.Join(root, "cpu/be/cpu.cfs_quota_us"), "-1\n")
	if res := a.Apply(settings, false); res.Writes != 0 || len(res.Unsupported) != 0 {
		t.Errorf("steady pass wrote %d, reported %v", res.Writes, res.Unsupported)
	}
	if res := a.Apply(settings, true); res.Writes != 1 || read(t, filepath.Join(root, "cpu/be/cpu.cfs_quota_us")) != "50000" {
		t.Errorf("full pass wrote %d, want the one changed file back", res.Writes)
	}
	// A pod that is gone is no error.
	if res := a.Apply([]Setting{{Dir: "gone", Knob: CPUQuota, Value: 1000, Owner: "gone"}}, true); len(res.Errors) != 0 {
		t.Errorf("vanished cgroup reported: %v", res.Errors)
	}
}

// realCgroup makes a v1 cgroup under this host's hierarchy of controller,
// removed (children first) when the test ends.
func realCgroup(t *testing.T, controller string, dirs ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real cgroups need root (CI runs as root)")
	}
	hier := filepath.Join("/sys/fs/cgroup", controller)
	if _, err := os.Stat(filepath.Join(hier, "cgroup.procs")); err != nil {
		t.Skipf("no cgroup v1 %s hierarchy here", controller)
	}
	base := fmt.Sprintf("koord-test-%d", os.Getpid())
	all := append([]string{base}, dirs...)
	for i, d := range all {
		if i > 0 {
			d = filepath.Join(base, d)
		}
		if err := os.Mkdir(filepath.Join(hier, d), 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		if controller == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, _ := os.ReadFile(filepath.Join(hier, filepath.Dir(d), f))
				if err := os.WriteFile(filepath.Join(hier, d, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Cleanup(func() {
		for i := len(all) - 1; i >= 0; i-- {
			d := all[i]
			if i > 0 {
				d = filepath.Join(base, d)
			}
			if err := os.Remove(filepath.Join(hier, d)); err != nil {
				t.Errorf("removing %s: %v", d, err)
			}
		}
	})
	return base
}

// On this host's real cgroup v1 cpu hierarchy: the applier's order is one
// the kernel accepts (it refuses a child's quota above its parent's and a
// burst above the quota), the idle class takes, and shares are dropped for
// an idle cgroup by the caller (the kernel refuses them there).
func TestApplierRealCgroups(t *testing.T) {
	base := realCgroup(t, "cpu", "pod", "pod/c")
	l := Layout{Root: "/sys/fs/cgroup", Version: V1}
	a := &Applier{Layout: l}
	dirs := []string{base, base + "/pod", base + "/pod/c"}
	quotas := func(q ...int64) []Setting {
		var s []Setting
		for i, d := range dirs {
			s = append(s, Setting{Dir: d, Knob: CPUQuota, Value: q[i], Owner: d}, Setting{Dir: d, Knob: CPUBurst, Value: q[i] / 2, Owner: d})
		}
		return s
	}
	for _, step := range [][]int64{
		{200000, 150000, 100000}, // from unlimited, shallowest first
		{20000, 20000, 10000},    // parent below the old children: children first
		{Unlimited, 300000, 300000},
		{50000, Unlimited, 400000}, // the container is capped at the nearest limited ancestor
	} {
		res := a.Apply(quotas(step...), false)
		if len(res.Errors) != 0 {
			t.Fatalf("step %v: the kernel refused: %v", step, res.Errors)
		}
	}
	if got, _ := l.Read(CPUQuota, dirs[2]); got != 50000 {
		t.Errorf("container quota %d, want 50000 (its grandparent's)", got)
	}
	if res := a.Apply([]Setting{{Dir: base, Knob: CPUIdle, Value: 1, Owner: "be"}}, true); len(res.Errors) != 0 {
		t.Fatalf("cpu.idle: %v", res.Errors)
	}
	if got, _ := l.Read(CPUIdle, base); got != 1 {
		t.Errorf("cpu.idle %d", got)
	}
	if res := a.Apply([]Setting{{Dir: base, Knob: CPUIdle, Value: 0, Owner: "be"}, {Dir: dirs[1], Knob: CPUShares, Value: 512, Owner: "pod"}}, true); len(res.Errors) != 0 {
		t.Fatalf("back from idle: %v", res.Errors)
	}
	if got, _ := l.Read(CPUShares, dirs[1]); got != 512 {
		t.Errorf("shares %d", got)
	}
	if _, err := l.Read(MemoryMin, base); err == nil {
		t.Log("this kernel has memory.min in cgroup v1")
	}
}

// The memory limit on a real v1 memory cgroup, page-aligned, and back to none.
func TestMemoryLimitRealCgroup(t *testing.T) {
	base := realCgroup(t, "memory")
	l := Layout{Root: "/sys/fs/cgroup", Version: V1}
	if wrote, err := l.Write(MemoryLimit, base, 64<<20+1); err != nil || !wrote {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
	if wrote, err := l.Write(MemoryLimit, base, 64<<20+1); err != nil || wrote {
		t.Errorf("the same limit again: wrote %v, %v", wrote, err)
	}
	if v, _ := l.Read(MemoryLimit, base); v != 64<<20 {
		t.Errorf("limit %d", v)
	}
	if _, err := l.Write(MemoryLimit, base, Unlimited); err != nil {
		t.Fatal(err)
	}
	if v, _ := l.Read(MemoryLimit, base); v != Unlimited {
		t.Errorf("limit %d, want Unlimited", v)
	}
}

// SetCPUSetTree narrows and widens a real v1 cpuset tree, whose kernel
// refuses a child's CPUs outside its parent's.
func TestSetCPUSetTreeRealCgroups(t *testing.T) {
	base := realCgroup(t, "cpuset", "pod", "pod/c")
	l := Layout{Root: "/sys/fs/cgroup", Version: V1}
	all, err := l.CPUSet(base)
	if err != nil {
		t.Fatal(err)
	}
	if all.Size() < 2 {
		t.Skip("needs 2 CPUs")
	}
	one := cpuset.New(all.List()[all.Size()-1])
	for _, cpus := range []cpuset.CPUSet{one, all, one} {
		if _, err := l.SetCPUSetTree(base, cpus); err != nil {
			t.Fatalf("to %s: %v", cpus, err)
		}
		if got, _ := l.CPUSet(base + "/pod/c"); !got.Equals(cpus) {
			t.Errorf("container on %s, want %s", got, cpus)
		}
	}
}

func TestQoSDirs(t *testing.T) {
	for _, c := range []struct {
		driver Driver
		want   string
	}{{Cgroupfs, "kubepods/besteffort"}, {Systemd, "kubepods.slice/kubepods-besteffort.slice"}} {
		if got := (Layout{Driver: c.driver}).QoSDir(corev1.PodQOSBestEffort); got != c.want {
			t.Errorf("%s: %s, want %s", c.driver, got, c.want)
		}
	}
}
