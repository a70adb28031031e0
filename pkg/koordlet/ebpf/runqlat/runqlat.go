// Package runqlat measures run-queue latency (how long runnable tasks wait
// for a CPU) per cgroup with an eBPF program on the scheduler's BTF
// tracepoints: the CPU contention a pod suffers, which usage alone hides.
package runqlat

import (
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// Slots is the number of log2 buckets: slot i counts waits in
// [2^i, 2^(i+1)) µs (slot 0 also holds waits under 1 µs, the last slot
// everything longer).
const Slots = len(runqlatHist{}.Slots)

// Hist is one cgroup's run-queue latency histogram.
type Hist [Slots]uint64

// Count is how many waits the histogram holds.
func (h Hist) Count() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Add sums two histograms (a pod's containers).
func (h Hist) Add(o Hist) Hist {
	for i := range h {
		h[i] += o[i]
	}
	return h
}

// UpperBound is the longest wait slot i holds, in seconds.
func UpperBound(slot int) float64 { return math.Ldexp(1, slot+1) / 1e6 }

// Quantile is the upper bound (seconds) of the slot holding quantile q; 0
// for an empty histogram.
func (h Hist) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h {
		seen += c
		if seen >= want && c > 0 {
			return UpperBound(i)
		}
	}
	return UpperBound(Slots - 1)
}

// Probe is the loaded, attached program.
type Probe struct {
	objs  runqlatObjects
	links []link.Link
}

// Load loads the program and attaches it to sched_wakeup, sched_wakeup_new
// and sched_switch. It fails (and leaves nothing behind) where the kernel
// lacks BTF or the process lacks the privilege.
func Load() (*Probe, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the memlock limit: %w", err)
	}
	p := &Probe{}
	if err := loadRunqlatObjects(&p.objs, nil); err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("loading runqlat: %+v", verr)
		}
		return nil, fmt.Errorf("loading runqlat: %w", err)
	}
	for _, prog := range []*ebpf.Program{p.objs.OnWakeup, p.objs.OnWakeupNew, p.objs.OnSwitch} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("attaching %s: %w", prog, err)
		}
		p.links = append(p.links, l)
	}
	return p, nil
}

// Close detaches and unloads the program.
func (p *Probe) Close() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	errs = append(errs, p.objs.Close())
	return errors.Join(errs...)
}

// Histogram is the histogram of one cgroup id (zero when it has none).
func (p *Probe) Histogram(cgroupID uint64) (Hist, error) {
	var v runqlatHist
	if err := p.objs.Hists.Lookup(cgroupID, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return Hist{}, nil
		}
		return Hist{}, err
	}
	return Hist(v.Slots), nil
}

// Forget drops a cgroup's histogram (its pod is gone), so that the map does
// not fill with dead cgroups.
func (p *Probe) Forget(cgroupID uint64) error {
	err := p.objs.Hists.Delete(cgroupID)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil
	}
	return err
}

// CgroupID is the id the kernel gives a cgroup directory: its inode number
// in cgroupfs.
func CgroupID(dir string) (uint64, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no inode number", dir)
	}
	return sys.Ino, nil
}
