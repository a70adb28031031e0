// Package topology reads a node's CPU and NUMA topology from sysfs and
// kubelet's CPU manager, and builds the numa-info koordlet publishes.
package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Machine is what sysfs and procfs say about the node's processors and memory.
type Machine struct {
	CPUTopology extension.CPUTopology
	NUMANodes   []extension.NUMANodeInfo
	BasicInfo   extension.CPUBasicInfo
}

// ReadMachine reads the online CPUs' placement (core, socket, NUMA node) from
// <sysfsRoot>/devices/system/cpu and .../node, and the CPU model from
// <procfsRoot>/cpuinfo. Core ids are numbered densely across sockets, as
// lscpu numbers them, because Linux repeats core_id on each socket.
func ReadMachine(sysfsRoot, procfsRoot string) (*Machine, error) {
	cpuDir := filepath.Join(sysfsRoot, "devices/system/cpu")
	online, err := readCPUList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	type place struct{ socket, core int }
	places := map[int]place{}
	for _, cpu := range online.List() {
		topoDir := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", cpu), "topology")
		socket, err := readInt(filepath.Join(topoDir, "physical_package_id"))
		if err != nil {
			return nil, err
		}
		core, err := readInt(filepath.Join(topoDir, "core_id"))
		if err != nil {
			return nil, err
		}
		places[cpu] = place{socket, core}
	}

	// NUMA node of each CPU. A kernel without NUMA has no node directory:
	// everything is node 0 with all memory.
	numaOf := map[int]int{}
	m := &Machine{}
	nodeDir := filepath.Join(sysfsRoot, "devices/system/node")
	nodes, err := readCPUList(filepath.Join(nodeDir, "online"))
	if os.IsNotExist(err) {
		mem, err := memTotal(filepath.Join(procfsRoot, "meminfo"))
		if err != nil {
			return nil, err
		}
		m.NUMANodes = []extension.NUMANodeInfo{{ID: 0, CPUs: online.String(), MemoryBytes: mem}}
	} else if err != nil {
		return nil, err
	} else {
		for _, n := range nodes.List() {
			dir := filepath.Join(nodeDir, fmt.Sprintf("node%d", n))
			cpus, err := readCPUList(filepath.Join(dir, "cpulist"))
			if err != nil {
				return nil, err
			}
			cpus = cpus.Intersection(online)
			mem, err := memTotal(filepath.Join(dir, "meminfo"))
			if err != nil {
				return nil, err
			}
			if cpus.IsEmpty() {
				continue // memory-only node (CXL, persistent memory): no CPUs to bind
			}
			for _, c := range cpus.List() {
				numaOf[c] = n
			}
			m.NUMANodes = append(m.NUMANodes, extension.NUMANodeInfo{ID: int32(n), CPUs: cpus.String(), MemoryBytes: mem})
		}
	}

	// Dense core ids in (socket, core_id) order.
	var keys []place
	seen := map[place]bool{}
	for _, p := range places {
		if !seen[p] {
			seen[p] = true
			keys = append(keys, p)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].socket != keys[j].socket {
			return keys[i].socket < keys[j].socket
		}
		return keys[i].core < keys[j].core
	})
	dense := map[place]int{}
	for i, k := range keys {
		dense[k] = i
	}
	threads := 1
	perCore := map[place]int{}
	for _, cpu := range online.List() {
		p := places[cpu]
		perCore[p]++
		threads = max(threads, perCore[p])
		m.CPUTopology.Detail = append(m.CPUTopology.Detail, extension.CPUInfo{
			ID: int32(cpu), Core: int32(dense[p]), Socket: int32(p.socket), Node: int32(numaOf[cpu]),
		})
	}
	m.BasicInfo = extension.CPUBasicInfo{CPUModel: readCPUModel(filepath.Join(procfsRoot, "cpuinfo")), HyperThreadEnabled: threads > 1}
	return m, nil
}

func readCPUList(path string) (cpuset.CPUSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return cpuset.New(), err
	}
	s, err := extension.ParseCPUSet(string(b))
	if err != nil {
		return cpuset.New(), fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// ReadMeminfo reads a meminfo file, /proc/meminfo or a NUMA node's
// /sys/devices/system/node/nodeN/meminfo (whose lines start "Node N "),
// into bytes by key ("MemTotal", "MemFree", "MemAvailable", ...).
func ReadMeminfo(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if f := strings.Fields(key); len(f) == 3 && f[0] == "Node" {
			key = f[2]
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, strings.TrimSpace(key), err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		out[strings.TrimSpace(key)] = n
	}
	return out, nil
}

// memTotal is MemTotal of a meminfo file.
func memTotal(path string) (int64, error) {
	m, err := ReadMeminfo(path)
	if err != nil {
		return 0, err
	}
	v, ok := m["MemTotal"]
	if !ok {
		return 0, fmt.Errorf("%s: no MemTotal", path)
	}
	return int64(v), nil
}

// readCPUModel is the first "model name" of cpuinfo; "" when there is none
// (some architectures do not say).
func readCPUModel(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
