package usage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/topology"
)

// userHZ is the unit of /proc/stat: the kernel reports jiffies of 1/100 s
// to user space on every architecture Kubernetes runs on.
const userHZ = 100

// Collector samples usage every Collect call and keeps bounded histories:
// the node's for the longest aggregation window, each pod's for the
// NodeMetric aggregation window. Pods that leave are forgotten.
type Collector struct {
	procfs     string
	nodeWindow time.Duration
	podWindow  time.Duration
	interval   time.Duration

	mu             sync.Mutex
	nodeCPU        *Series // cores
	nodeMem        *Series // bytes
	lastBusy, last uint64  // /proc/stat jiffies
	lastAt         time.Time
	memTotal       uint64 // bytes, from the latest /proc/meminfo
	pods           map[types.UID]*podHistory

	// Per NUMA node, when SetNUMA gave the CPUs' placement.
	sysfs    string
	numaOf   map[int]int
	numaCPU  map[int]*Series
	numaMem  map[int]*Series
	lastNUMA map[int]cpuTimes
}

type cpuTimes struct{ busy, total uint64 }

type podHistory struct {
	cpu, mem *Series
	lastNS   uint64
	lastAt   time.Time
	// containers holds each container's latest usage, by name.
	containers map[string]*ContainerUsage
}

// ContainerUsage is a container's latest CPU rate (cores) and working set.
type ContainerUsage struct {
	CPU, Memory float64
	lastNS      uint64
	lastAt      time.Time
	id          string
	// The container's history, as long as its pod's, for NodeMetric.
	cpu, mem *Series
}

// NewCollector keeps node samples for nodeWindow and pod samples for
// podWindow, taken every interval (which sizes the rings).
func NewCollector(procfs string, interval, nodeWindow, podWindow time.Duration) *Collector {
	return &Collector{
		procfs: procfs, interval: interval, nodeWindow: nodeWindow, podWindow: podWindow,
		nodeCPU: NewSeries(int(nodeWindow/interval) + 1), nodeMem: NewSeries(int(nodeWindow/interval) + 1),
		pods: map[types.UID]*podHistory{},
	}
}

// Collect takes one sample of the node and of every pod (with layout nil,
// pods are not sampled). CPU usage is a rate, so each series starts with
// its second sample. Per-pod errors (a cgroup that vanished) skip that pod.
func (c *Collector) Collect(now time.Time, layout *cgroup.Layout, pods []*corev1.Pod) error {
	all, perCPU, err := readProcStat(filepath.Join(c.procfs, "stat"))
	if err != nil {
		return err
	}
	busy, total := all.busy, all.total
	used, memTotal, err := readMemUsed(filepath.Join(c.procfs, "meminfo"))
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lastAt.IsZero() && total > c.last {
		secs := now.Sub(c.lastAt).Seconds()
		if secs > 0 {
			c.nodeCPU.Add(now, float64(busy-c.lastBusy)/userHZ/secs)
		}
	}
	c.collectNUMA(now, perCPU)
	c.lastBusy, c.last, c.lastAt = busy, total, now
	c.memTotal = memTotal
	c.nodeMem.Add(now, float64(used))

	seen := map[types.UID]bool{}
	for _, p := range pods {
		seen[p.UID] = true
		if layout == nil {
			continue
		}
		dir := layout.PodDir(v1qos.GetPodQOS(p), p.UID)
		ns, mem, err := readUsage(layout, dir)
		if err != nil {
			continue
		}
		h := c.pods[p.UID]
		if h == nil {
			n := int(c.podWindow/c.interval) + 1
			h = &podHistory{cpu: NewSeries(n), mem: NewSeries(n)}
			c.pods[p.UID] = h
		}
		if !h.lastAt.IsZero() && ns >= h.lastNS {
			if secs := now.Sub(h.lastAt).Seconds(); secs > 0 {
				h.cpu.Add(now, float64(ns-h.lastNS)/1e9/secs)
			}
		}
		h.lastNS, h.lastAt = ns, now
		h.mem.Add(now, float64(mem))
		c.collectContainers(now, layout, dir, p, h)
	}
	for uid := range c.pods {
		if !seen[uid] {
			delete(c.pods, uid)
		}
	}
	return nil
}

// collectContainers samples each running container of a pod; a container
// restarted under a new ID starts its rate afresh.
func (c *Collector) collectContainers(now time.Time, layout *cgroup.Layout, podDir string, p *corev1.Pod, h *podHistory) {
	if h.containers == nil {
		h.containers = map[string]*ContainerUsage{}
	}
	seen := map[string]bool{}
	for _, st := range p.Status.ContainerStatuses {
		if st.ContainerID == "" {
			continue
		}
		dir, err := layout.ContainerDir(podDir, st.ContainerID)
		if err != nil {
			continue
		}
		ns, mem, err := readUsage(layout, dir)
		if err != nil {
			continue
		}
		u := h.containers[st.Name]
		if u == nil || u.id != st.ContainerID {
			n := int(c.podWindow/c.interval) + 1
			u = &ContainerUsage{id: st.ContainerID, CPU: -1, cpu: NewSeries(n), mem: NewSeries(n)}
			h.containers[st.Name] = u
		}
		if !u.lastAt.IsZero() && ns >= u.lastNS {
			if secs := now.Sub(u.lastAt).Seconds(); secs > 0 {
				u.CPU = float64(ns-u.lastNS) / 1e9 / secs
				u.cpu.Add(now, u.CPU)
			}
		}
		u.lastNS, u.lastAt, u.Memory = ns, now, float64(mem)
		u.mem.Add(now, u.Memory)
		seen[st.Name] = true
	}
	for name := range h.containers {
		if !seen[name] {
			delete(h.containers, name)
		}
	}
}

// readUsage is a cgroup's CPU time (ns) and memory working set (bytes).
func readUsage(layout *cgroup.Layout, dir string) (ns, mem uint64, err error) {
	if ns, err = layout.CPUUsage(dir); err != nil {
		return 0, 0, err
	}
	mem, err = layout.MemoryWorkingSet(dir)
	return ns, mem, err
}

// Containers calls fn with each container's latest usage (CPU is -1 until
// a container has two samples).
func (c *Collector) Containers(fn func(pod types.UID, container string, u ContainerUsage)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, h := range c.pods {
		for name, u := range h.containers {
			fn(uid, name, *u)
		}
	}
}

// ContainerWindow is a container's usage over a window: its average CPU
// (cores) and its peak working set (bytes).
type ContainerWindow struct {
	Name        string
	CPU, Memory float64
}

// PodContainers summarises each container of a pod since t, by name; a
// container without a CPU rate in the window is left out.
func (c *Collector) PodContainers(uid types.UID, since time.Time) []ContainerWindow {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.pods[uid]
	if h == nil {
		return nil
	}
	var out []ContainerWindow
	for name, u := range h.containers {
		cs, okC := Summarise(u.cpu.Since(since, nil))
		mems := u.mem.Since(since, nil)
		if !okC || len(mems) == 0 {
			continue
		}
		out = append(out, ContainerWindow{Name: name, CPU: cs.Avg, Memory: slices.Max(mems)})
	}
	slices.SortFunc(out, func(a, b ContainerWindow) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// NodeUsage summarises node CPU (cores) and memory (bytes) since t.
func (c *Collector) NodeUsage(since time.Time) (cpu, mem Stats, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cpu, okC := Summarise(c.nodeCPU.Since(since, nil))
	mem, okM := Summarise(c.nodeMem.Since(since, nil))
	return cpu, mem, okC && okM
}

// PodUsage is a pod's average CPU (cores) and memory (bytes) since t.
func (c *Collector) PodUsage(uid types.UID, since time.Time) (cpu, mem float64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.pods[uid]
	if h == nil {
		return 0, 0, false
	}
	cs, okC := Summarise(h.cpu.Since(since, nil))
	ms, okM := Summarise(h.mem.Since(since, nil))
	return cs.Avg, ms.Avg, okC && okM
}

// SetNUMA tells the collector where each CPU is (cpu id → NUMA node) and
// where sysfs is, so that it also samples each NUMA node's usage.
func (c *Collector) SetNUMA(sysfs string, numaOf map[int]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sysfs, c.numaOf = sysfs, numaOf
	if c.numaCPU == nil {
		c.numaCPU, c.numaMem, c.lastNUMA = map[int]*Series{}, map[int]*Series{}, map[int]cpuTimes{}
	}
}

// collectNUMA samples each NUMA node's CPU (its CPUs' /proc/stat lines) and
// memory (MemTotal − MemFree of its sysfs meminfo). Caller holds c.mu.
func (c *Collector) collectNUMA(now time.Time, perCPU map[int]cpuTimes) {
	if c.numaOf == nil || len(perCPU) == 0 {
		return
	}
	sums := map[int]cpuTimes{}
	for cpu, t := range perCPU {
		numa, ok := c.numaOf[cpu]
		if !ok {
			continue
		}
		s := sums[numa]
		s.busy, s.total = s.busy+t.busy, s.total+t.total
		sums[numa] = s
	}
	size := int(c.nodeWindow/c.interval) + 1
	for numa, t := range sums {
		if c.numaCPU[numa] == nil {
			c.numaCPU[numa], c.numaMem[numa] = NewSeries(size), NewSeries(size)
		}
		if last, ok := c.lastNUMA[numa]; ok && !c.lastAt.IsZero() && t.total > last.total && t.busy >= last.busy {
			if secs := now.Sub(c.lastAt).Seconds(); secs > 0 {
				c.numaCPU[numa].Add(now, float64(t.busy-last.busy)/userHZ/secs)
			}
		}
		c.lastNUMA[numa] = t
		m, err := topology.ReadMeminfo(filepath.Join(c.sysfs, "devices/system/node", fmt.Sprintf("node%d", numa), "meminfo"))
		if err == nil && m["MemTotal"] >= m["MemFree"] {
			c.numaMem[numa].Add(now, float64(m["MemTotal"]-m["MemFree"]))
		}
	}
}

// NUMAUsage summarises each NUMA node's CPU (cores) and memory (bytes)
// since t, for the NUMA nodes with samples of both.
func (c *Collector) NUMAUsage(since time.Time) map[int][2]Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int][2]Stats{}
	for numa, cs := range c.numaCPU {
		cpu, okC := Summarise(cs.Since(since, nil))
		mem, okM := Summarise(c.numaMem[numa].Since(since, nil))
		if okC && okM {
			out[numa] = [2]Stats{cpu, mem}
		}
	}
	return out
}

// readProcStat returns busy and total jiffies of the "cpu" line of
// /proc/stat and of each "cpuN" line. Idle and iowait are not busy.
func readProcStat(path string) (all cpuTimes, perCPU map[int]cpuTimes, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return all, nil, err
	}
	perCPU = map[int]cpuTimes{}
	for i, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 || !strings.HasPrefix(fields[0], "cpu") {
			if i == 0 {
				return all, nil, fmt.Errorf("%s: first line %q is not the cpu totals", path, line)
			}
			continue
		}
		var t cpuTimes
		for j, f := range fields[1:] {
			if j >= 8 { // guest and guest_nice are already in user and nice
				break
			}
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return all, nil, fmt.Errorf("%s: %w", path, err)
			}
			t.total += v
			if j != 3 && j != 4 { // idle, iowait
				t.busy += v
			}
		}
		if fields[0] == "cpu" {
			all = t
			continue
		}
		if id, err := strconv.Atoi(strings.TrimPrefix(fields[0], "cpu")); err == nil {
			perCPU[id] = t
		}
	}
	return all, perCPU, nil
}

// readMemUsed is MemTotal − MemAvailable, what the node cannot give away,
// and MemTotal.
func readMemUsed(path string) (used, total uint64, err error) {
	m, err := topology.ReadMeminfo(path)
	if err != nil {
		return 0, 0, err
	}
	total, okT := m["MemTotal"]
	avail, okA := m["MemAvailable"]
	if !okT || !okA {
		return 0, 0, fmt.Errorf("%s: no MemTotal or MemAvailable", path)
	}
	if avail > total {
		return 0, total, nil
	}
	return total - avail, total, nil
}

// Sample is the latest usage: what the QoS strategies act on.
type Sample struct {
	At time.Time
	// NodeCPU is in cores, NodeMemory (used: MemTotal − MemAvailable) and
	// NodeMemoryTotal in bytes.
	NodeCPU, NodeMemory, NodeMemoryTotal float64
	// Pods holds each pod with a CPU rate at the latest sample.
	Pods map[types.UID]PodSample
}

// PodSample is a pod's CPU (cores) and working set (bytes) at the latest sample.
type PodSample struct{ CPU, Memory float64 }

// Latest is the newest sample; ok is false until the node has a CPU rate
// (its second sample).
func (c *Collector) Latest() (s Sample, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, cpu, ok := c.nodeCPU.Last()
	if !ok {
		return Sample{}, false
	}
	_, mem, _ := c.nodeMem.Last()
	s = Sample{At: at, NodeCPU: cpu, NodeMemory: mem, NodeMemoryTotal: float64(c.memTotal), Pods: make(map[types.UID]PodSample, len(c.pods))}
	for uid, h := range c.pods {
		pat, pcpu, okC := h.cpu.Last()
		_, pmem, okM := h.mem.Last()
		if okC && okM && pat.Equal(at) {
			s.Pods[uid] = PodSample{CPU: pcpu, Memory: pmem}
		}
	}
	return s, true
}
