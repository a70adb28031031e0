package extension

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// AnnotationEvictionCost is a pod's eviction cost (an int32, Koordinator's
// key): among pods of the same priority the cheapest is moved first, and
// math.MaxInt32 (2147483647) means never: koord-descheduler does not move
// the pod.
const AnnotationEvictionCost = SchedulingDomainPrefix + "eviction-cost"

// GetEvictionCost parses the pod's eviction cost; absent, 0.
func GetEvictionCost(annotations map[string]string) (int32, error) {
	v, ok := annotations[AnnotationEvictionCost]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, annotationError(AnnotationEvictionCost, fmt.Errorf("%q is not an int32", truncate(v)))
	}
	return int32(n), nil
}

// NeverEvict says the pod's eviction cost forbids moving it.
func NeverEvict(annotations map[string]string) bool {
	c, err := GetEvictionCost(annotations)
	return err == nil && c == math.MaxInt32
}
