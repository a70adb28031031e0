// Package cgroup finds pod and container cgroups the way kubelet lays them
// out (cgroup v1 or v2, cgroupfs or systemd driver), reads their usage and
// writes their cpusets.
package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Version is the cgroup hierarchy kubelet uses.
type Version int

const (
	V1 Version = 1
	V2 Version = 2
)

// Driver is kubelet's --cgroup-driver.
type Driver string

const (
	Cgroupfs Driver = "cgroupfs"
	Systemd  Driver = "systemd"
)

// Layout says where kubelet's pod cgroups are under a cgroup mount.
type Layout struct {
	Root    string
	Version Version
	Driver  Driver
	// Parent is kubelet's --cgroup-root, under which kubepods lives ("" for /).
	Parent string
}

// ErrNoKubepods means no kubelet cgroup tree was found under the root.
var ErrNoKubepods = errors.New("no kubepods cgroup found")

// Detect finds kubelet's pod cgroups under root (/sys/fs/cgroup) and parent
// (kubelet's --cgroup-root): v1 if the cpuset controller has its own
// directory there, else v2; systemd if the top is kubepods.slice, else
// cgroupfs.
func Detect(root, parent string) (Layout, error) {
	for _, c := range []struct {
		dir     string
		version Version
		driver  Driver
	}{
		{filepath.Join("cpuset", parent, "kubepods.slice"), V1, Systemd},
		{filepath.Join("cpuset", parent, "kubepods"), V1, Cgroupfs},
		{filepath.Join(parent, "kubepods.slice"), V2, Systemd},
		{filepath.Join(parent, "kubepods"), V2, Cgroupfs},
	} {
		if c.version == V2 {
			if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
				continue
			}
		}
		if st, err := os.Stat(filepath.Join(root, c.dir)); err == nil && st.IsDir() {
			return Layout{Root: root, Version: c.version, Driver: c.driver, Parent: parent}, nil
		}
	}
	return Layout{}, fmt.Errorf("%w under %s (looked for cpuset/kubepods[.slice] and kubepods[.slice])", ErrNoKubepods, root)
}

// PodDir is a pod's cgroup, relative to a hierarchy's root.
func (l Layout) PodDir(qos corev1.PodQOSClass, uid types.UID) string {
	return filepath.Join(l.Parent, l.podDir(qos, uid))
}

func (l Layout) podDir(qos corev1.PodQOSClass, uid types.UID) string {
	if l.Driver == Systemd {
		id := strings.ReplaceAll(string(uid), "-", "_")
		switch qos {
		case corev1.PodQOSGuaranteed:
			return filepath.Join("kubepods.slice", "kubepods-pod"+id+".slice")
		case corev1.PodQOSBurstable:
			return filepath.Join("kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-pod"+id+".slice")
		default:
			return filepath.Join("kubepods.slice", "kubepods-besteffort.slice", "kubepods-besteffort-pod"+id+".slice")
		}
	}
	switch qos {
	case corev1.PodQOSGuaranteed:
		return filepath.Join("kubepods", "pod"+string(uid))
	case corev1.PodQOSBurstable:
		return filepath.Join("kubepods", "burstable", "pod"+string(uid))
	default:
		return filepath.Join("kubepods", "besteffort", "pod"+string(uid))
	}
}

// ContainerDir is a container's cgroup under its pod's, from the container
// ID in the pod status ("containerd://abc"). The systemd driver names it
// after the runtime: cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope.
func (l Layout) ContainerDir(podDir, containerID string) (string, error) {
	runtime, id, ok := strings.Cut(containerID, "://")
	if !ok || id == "" || strings.ContainsAny(id, "/.") {
		return "", fmt.Errorf("container ID %q is not <runtime>://<id>", containerID)
	}
	if l.Driver == Systemd {
		prefix := map[string]string{"containerd": "cri-containerd", "cri-o": "crio", "docker": "docker"}[runtime]
		if prefix == "" {
			prefix = runtime
		}
		return filepath.Join(podDir, prefix+"-"+id+".scope"), nil
	}
	return filepath.Join(podDir, id), nil
}

// Path is the file of a controller for a cgroup dir (relative to a hierarchy).
func (l Layout) Path(controller, dir, file string) string {
	if l.Version == V1 {
		return filepath.Join(l.Root, controller, dir, file)
	}
	return filepath.Join(l.Root, dir, file)
}

// CPUUsage is the CPU time a cgroup has used, in nanoseconds.
func (l Layout) CPUUsage(dir string) (uint64, error) {
	if l.Version == V1 {
		return readUint(l.Path("cpuacct", dir, "cpuacct.usage"))
	}
	usec, err := readKey(l.Path("cpu", dir, "cpu.stat"), "usage_usec")
	return usec * 1000, err
}

// MemoryWorkingSet is what kubelet calls working set: usage less inactive
// file pages, which the kernel reclaims first.
func (l Layout) MemoryWorkingSet(dir string) (uint64, error) {
	usageFile, statFile, inactiveKey := l.Path("memory", dir, "memory.usage_in_bytes"), l.Path("memory", dir, "memory.stat"), "total_inactive_file"
	if l.Version == V2 {
		usageFile, statFile, inactiveKey = l.Path("memory", dir, "memory.current"), l.Path("memory", dir, "memory.stat"), "inactive_file"
	}
	usage, err := readUint(usageFile)
	if err != nil {
		return 0, err
	}
	inactive, err := readKey(statFile, inactiveKey)
	if err != nil {
		return 0, err
	}
	if inactive > usage {
		return 0, nil
	}
	return usage - inactive, nil
}

// Children lists the child cgroups of dir in the cpuset hierarchy: a pod's
// containers and its sandbox (pause) container, which no pod status lists.
func (l Layout) Children(dir string) ([]string, error) {
	entries, err := os.ReadDir(l.Path("cpuset", dir, ""))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// CPUSet reads a cgroup's cpuset.cpus (v2: cpuset.cpus, which may be empty
// meaning "the parent's").
func (l Layout) CPUSet(dir string) (cpuset.CPUSet, error) {
	b, err := os.ReadFile(l.Path("cpuset", dir, "cpuset.cpus"))
	if err != nil {
		return cpuset.New(), err
	}
	return extension.ParseCPUSet(string(b))
}

// SetCPUSet writes cpus to a cgroup's cpuset.cpus if it holds something
// else, and says whether it wrote. It never creates a cgroup: a missing one
// is an error (the pod's cgroup has not appeared yet, or is gone).
func (l Layout) SetCPUSet(dir string, cpus cpuset.CPUSet) (bool, error) {
	have, err := l.CPUSet(dir)
	if err != nil {
		return false, err
	}
	return l.ReplaceCPUSet(dir, have, cpus)
}

// ReplaceCPUSet is SetCPUSet when the caller has just read the cgroup's
// cpuset (have), saving a read.
func (l Layout) ReplaceCPUSet(dir string, have, cpus cpuset.CPUSet) (bool, error) {
	if have.Equals(cpus) {
		return false, nil
	}
	path := l.Path("cpuset", dir, "cpuset.cpus")
	// No O_CREATE: a vanished cgroup fails instead of leaving a file behind.
	// O_TRUNC as a shell's ">" does (cgroupfs ignores it; files need it).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return false, err
	}
	_, werr := f.WriteString(cpus.String())
	cerr := f.Close()
	if werr != nil {
		return false, fmt.Errorf("writing %s to %s: %w", cpus, path, werr)
	}
	return true, cerr
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// readKey reads "<key> <value>" from a flat-keyed file (cpu.stat, memory.stat).
func readKey(path, key string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", path, key, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}

// SetCPUSetTree makes dir and every cgroup below it run on cpus, writing only
// files that differ, and returns how many it wrote. A v1 child's CPUs must
// lie within its parent's, so each cgroup is widened to old ∪ new before its
// children are set and narrowed after. Children that vanish meanwhile are
// skipped; a missing dir is fs.ErrNotExist.
func (l Layout) SetCPUSetTree(dir string, cpus cpuset.CPUSet) (int, error) {
	old, err := l.CPUSet(dir)
	if err != nil {
		return 0, err
	}
	writes := 0
	count := func(wrote bool, err error) error {
		if wrote {
			writes++
		}
		return err
	}
	widened := old.Union(cpus)
	if err := count(l.ReplaceCPUSet(dir, old, widened)); err != nil {
		return writes, err
	}
	children, err := l.Children(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return writes, err
	}
	for _, c := range children {
		n, err := l.SetCPUSetTree(c, cpus)
		writes += n
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return writes, err
		}
	}
	return writes, count(l.ReplaceCPUSet(dir, widened, cpus))
}
