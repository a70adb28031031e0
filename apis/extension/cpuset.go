package extension

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// MaxCPUID bounds the CPU ids Koord accepts from outside (annotations,
// ConfigMaps, kubelet files). Linux supports at most 8192 CPUs (NR_CPUS);
// without a bound, "0-50000000" in a pod annotation makes every parser
// build a set of fifty million CPUs (seconds of CPU and gigabytes each time).
const MaxCPUID = 16383

// ParseCPUSet parses Linux's cpuset list format ("0-3,8,10-11") after
// checking that no id exceeds MaxCPUID. Every cpuset from outside goes
// through it.
func ParseCPUSet(s string) (cpuset.CPUSet, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return cpuset.New(), nil
	}
	for _, r := range strings.Split(s, ",") {
		for _, bound := range strings.SplitN(r, "-", 2) {
			n, err := strconv.Atoi(strings.TrimSpace(bound))
			if err != nil {
				return cpuset.New(), fmt.Errorf("invalid cpuset %q: %q is not a CPU number", truncate(s), bound)
			}
			if n < 0 || n > MaxCPUID {
				return cpuset.New(), fmt.Errorf("invalid cpuset %q: CPU %d is out of range [0, %d]", truncate(s), n, MaxCPUID)
			}
		}
	}
	return cpuset.Parse(s)
}
