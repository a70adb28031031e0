package extension

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// MaxCPUID bounds the CPU ids Koord accepts from outside (annotations,
// ConfigMaps, kubelet files). Linux supports at most 8192 CPUs (NR_CPUS);
// without a bound, "0-50000000" in a pod annotation makes every parser
// build a set of fifty million CPUs (seconds of CPU and gigabytes each time).
const MaxCPUID = 16383

// MaxCPUSetLength bounds the text of a cpuset from outside. Every CPU of the
// largest machine Linux supports, listed one by one ("0,1,2,...,8191"), is
// under 40,000 characters; anything longer is not a cpuset the kernel or the
// scheduler wrote.
const MaxCPUSetLength = 64 << 10

// ParseCPUSet parses Linux's cpuset list format ("0-3,8,10-11") after
// checking that the text is at most MaxCPUSetLength long and that no id
// exceeds MaxCPUID. Every cpuset from outside goes through it. Its cost is
// linear in the text: ranges are merged before the set is built, so that
// "0-16383" repeated thousands of times costs what reading it costs, not a
// set union per repetition (seconds per parse with k8s.io/utils/cpuset.Parse
// alone; BenchmarkParseCPUSetHostile).
func ParseCPUSet(s string) (cpuset.CPUSet, error) {
	if len(s) > MaxCPUSetLength {
		return cpuset.New(), fmt.Errorf("invalid cpuset %q: %d characters, more than the %d a cpuset can need", truncate(s), len(s), MaxCPUSetLength)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return cpuset.New(), nil
	}
	var ranges [][2]int
	for r := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		first, err := cpuID(s, lo)
		if err != nil {
			return cpuset.New(), err
		}
		last := first
		if isRange {
			if last, err = cpuID(s, hi); err != nil {
				return cpuset.New(), err
			}
			if last < first {
				return cpuset.New(), fmt.Errorf("invalid cpuset %q: range %q ends before it starts", truncate(s), r)
			}
		}
		ranges = append(ranges, [2]int{first, last})
	}
	slices.SortFunc(ranges, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	ids := make([]int, 0, min(len(ranges)*2, MaxCPUID+1))
	next := 0 // every id below next is in ids already
	for _, r := range ranges {
		for id := max(r[0], next); id <= r[1]; id++ {
			ids = append(ids, id)
		}
		next = max(next, r[1]+1)
	}
	return cpuset.New(ids...), nil
}

// cpuID parses one CPU number of the cpuset s.
func cpuID(s, field string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(field))
	if err != nil {
		return 0, fmt.Errorf("invalid cpuset %q: %q is not a CPU number", truncate(s), field)
	}
	if n < 0 || n > MaxCPUID {
		return 0, fmt.Errorf("invalid cpuset %q: CPU %d is out of range [0, %d]", truncate(s), n, MaxCPUID)
	}
	return n, nil
}
