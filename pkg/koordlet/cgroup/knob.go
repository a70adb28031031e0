package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Knob is one per-cgroup setting koordlet manages, named once for both
// hierarchies. Values are in the units of the v1 file (shares, µs, bytes);
// Unlimited stands for "no limit" (-1 in v1, "max" in v2).
type Knob int

const (
	// CPUShares is the CPU weight: v1 cpu.shares (2-262144); v2 cpu.weight,
	// converted from shares the way kubelet converts.
	CPUShares Knob = iota
	// CPUQuota is the CFS quota in µs per period: v1 cpu.cfs_quota_us, v2 the
	// first field of cpu.max.
	CPUQuota
	// CPUBurst is how far past its quota a cgroup may run on saved time, µs:
	// v1 cpu.cfs_burst_us, v2 cpu.max.burst. The kernel refuses a burst above
	// the quota.
	CPUBurst
	// CPUIdle puts the cgroup in the idle scheduling class (cpu.idle, Linux 5.15+).
	CPUIdle
	// CPUGroupIdentity is Alibaba Cloud Linux's (Anolis) group identity,
	// cpu.bvt_warp_ns: 2 runs first, -1 last.
	CPUGroupIdentity
	// MemoryLimit is the hard limit: v1 memory.limit_in_bytes, v2 memory.max.
	MemoryLimit
	// MemoryMin, MemoryLow and MemoryHigh are the memcg protection and
	// throttling knobs of cgroup v2 (some vendor kernels have them in v1 too).
	MemoryMin
	MemoryLow
	MemoryHigh
	knobCount
)

// Unlimited is the value of a quota or memory knob with no limit.
const Unlimited int64 = -1

type knobFiles struct{ controller, v1, v2 string }

var knobs = [knobCount]knobFiles{
	CPUShares:        {"cpu", "cpu.shares", "cpu.weight"},
	CPUQuota:         {"cpu", "cpu.cfs_quota_us", "cpu.max"},
	CPUBurst:         {"cpu", "cpu.cfs_burst_us", "cpu.max.burst"},
	CPUIdle:          {"cpu", "cpu.idle", "cpu.idle"},
	CPUGroupIdentity: {"cpu", "cpu.bvt_warp_ns", "cpu.bvt_warp_ns"},
	MemoryLimit:      {"memory", "memory.limit_in_bytes", "memory.max"},
	MemoryMin:        {"memory", "memory.min", "memory.min"},
	MemoryLow:        {"memory", "memory.low", "memory.low"},
	MemoryHigh:       {"memory", "memory.high", "memory.high"},
}

// File is the knob's file name in this layout's hierarchy.
func (l Layout) File(k Knob) string {
	if l.Version == V2 {
		return knobs[k].v2
	}
	return knobs[k].v1
}

func (k Knob) String() string {
	if k < 0 || k >= knobCount {
		return fmt.Sprintf("Knob(%d)", int(k))
	}
	return knobs[k].v1
}

// ErrUnsupported means the cgroup exists but the kernel offers no such file:
// the knob cannot be set on this node (not worth retrying).
var ErrUnsupported = errors.New("not offered by this kernel")

// pageSize is the granularity the kernel keeps memory limits in.
var pageSize = int64(os.Getpagesize())

// Read is a knob's current value of a cgroup dir. A missing cgroup is
// fs.ErrNotExist; a missing file in an existing cgroup is ErrUnsupported.
func (l Layout) Read(k Knob, dir string) (int64, error) {
	raw, err := l.readRaw(k, dir)
	if err != nil {
		return 0, err
	}
	if k == CPUShares && l.Version == V2 {
		return weightToShares(raw), nil
	}
	return raw, nil
}

// Write sets a knob of a cgroup dir to v unless it already holds it, and
// says whether it wrote. It never creates a cgroup or a file.
func (l Layout) Write(k Knob, dir string, v int64) (bool, error) {
	have, err := l.readRaw(k, dir)
	if err != nil {
		return false, err
	}
	return l.replace(k, dir, have, v)
}

// replace writes v when the file's value (in file units) is not have.
func (l Layout) replace(k Knob, dir string, have, v int64) (bool, error) {
	want := l.fileValue(k, v)
	if have == want {
		return false, nil
	}
	path := l.Path(knobs[k].controller, dir, l.File(k))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return false, l.classify(k, dir, err)
	}
	_, werr := f.WriteString(l.render(k, want))
	cerr := f.Close()
	if werr != nil {
		return false, fmt.Errorf("writing %s to %s: %w", l.render(k, want), path, werr)
	}
	return true, cerr
}

// fileValue is v as the file will read back: clamped to the kernel's range
// and, for memory, rounded down to whole pages, so that a value that is
// already in place compares equal and is not written again.
func (l Layout) fileValue(k Knob, v int64) int64 {
	switch k {
	case CPUShares:
		v = min(max(v, 2), 262144)
		if l.Version == V2 {
			return sharesToWeight(v)
		}
	case CPUQuota:
		if v < 0 {
			return Unlimited
		}
		return max(v, 1000) // the kernel's minimum quota is 1 ms
	case CPUBurst:
		return max(v, 0)
	case CPUIdle:
		return min(max(v, 0), 1)
	case MemoryLimit, MemoryHigh:
		if v < 0 {
			return Unlimited
		}
		return v / pageSize * pageSize
	case MemoryMin, MemoryLow:
		return max(v, 0) / pageSize * pageSize
	}
	return v
}

func (l Layout) render(k Knob, v int64) string {
	if v == Unlimited && l.Version == V2 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

// readRaw reads a knob in file units (cpu.weight stays a weight).
func (l Layout) readRaw(k Knob, dir string) (int64, error) {
	path := l.Path(knobs[k].controller, dir, l.File(k))
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, l.classify(k, dir, err)
	}
	s := strings.TrimSpace(string(b))
	if k == CPUQuota && l.Version == V2 {
		s, _, _ = strings.Cut(s, " ") // "max 100000" or "50000 100000"
	}
	if s == "max" {
		return Unlimited, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// v1 reports an unset memory limit as the largest page-aligned int64.
		if u, uerr := strconv.ParseUint(s, 10, 64); uerr == nil && u > math.MaxInt64/2 {
			return Unlimited, nil
		}
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if (k == MemoryLimit || k == MemoryHigh) && v > math.MaxInt64/2 {
		return Unlimited, nil
	}
	return v, nil
}

// classify tells a vanished cgroup (fs.ErrNotExist) from a knob this kernel
// lacks (ErrUnsupported). A cgroup being removed can still be listed while
// its files are already gone (the kernel removes a directory's files
// first): if kubelet's top cgroup, which lives as long as kubelet, has the
// file, the kernel offers the knob and this cgroup is on its way out. The
// Applier would otherwise give up on the knob for good.
func (l Layout) classify(k Knob, dir string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if st, serr := os.Stat(l.Path(knobs[k].controller, dir, "")); serr != nil || !st.IsDir() {
		return err
	}
	if top := l.QoSDir(corev1.PodQOSGuaranteed); top != dir {
		if _, serr := os.Stat(l.Path(knobs[k].controller, top, l.File(k))); serr == nil {
			return fmt.Errorf("%s of %s (a cgroup being removed): %w", l.File(k), dir, err)
		}
	}
	return fmt.Errorf("%s of %s: %w", l.File(k), dir, ErrUnsupported)
}

// sharesToWeight is kubelet's conversion of cpu.shares to cgroup v2's cpu.weight.
func sharesToWeight(shares int64) int64 {
	return 1 + ((shares-2)*9999)/262142
}

func weightToShares(weight int64) int64 {
	return 2 + ((weight-1)*262142)/9999
}

// CFSPeriod is a cgroup's CFS period in µs (100000 unless changed).
func (l Layout) CFSPeriod(dir string) (int64, error) {
	if l.Version == V1 {
		return l.readInt(l.Path("cpu", dir, "cpu.cfs_period_us"))
	}
	b, err := os.ReadFile(l.Path("cpu", dir, "cpu.max"))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, fmt.Errorf("%s: %q is not <quota> <period>", l.Path("cpu", dir, "cpu.max"), strings.TrimSpace(string(b)))
	}
	return strconv.ParseInt(f[1], 10, 64)
}

func (l Layout) readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Throttled is how many CFS periods the cgroup has run and in how many it
// was throttled (cpu.stat nr_periods, nr_throttled).
func (l Layout) Throttled(dir string) (periods, throttled uint64, err error) {
	path := l.Path("cpu", dir, "cpu.stat")
	if periods, err = readKey(path, "nr_periods"); err != nil {
		return 0, 0, err
	}
	throttled, err = readKey(path, "nr_throttled")
	return periods, throttled, err
}

// QoSDir is kubelet's cgroup of a Kubernetes QoS class (Guaranteed pods live
// directly in kubepods), relative to a hierarchy's root.
func (l Layout) QoSDir(qos corev1.PodQOSClass) string {
	top := "kubepods"
	if l.Driver == Systemd {
		top = "kubepods.slice"
	}
	switch qos {
	case corev1.PodQOSBurstable:
		if l.Driver == Systemd {
			return filepath.Join(l.Parent, top, "kubepods-burstable.slice")
		}
		return filepath.Join(l.Parent, top, "burstable")
	case corev1.PodQOSBestEffort:
		if l.Driver == Systemd {
			return filepath.Join(l.Parent, top, "kubepods-besteffort.slice")
		}
		return filepath.Join(l.Parent, top, "besteffort")
	}
	return filepath.Join(l.Parent, top)
}

// Exists says whether a cgroup dir exists in a controller's hierarchy.
func (l Layout) Exists(controller, dir string) bool {
	st, err := os.Stat(l.Path(controller, dir, ""))
	return err == nil && st.IsDir()
}
