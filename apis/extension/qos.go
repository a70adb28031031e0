package extension

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
)

// QoSClass is Koordinator's QoS class of a pod.
type QoSClass string

const (
	// QoSLSE is latency-sensitive exclusive: bound CPUs nobody else may use, not even BE pods.
	QoSLSE QoSClass = "LSE"
	// QoSLSR is latency-sensitive reserved: bound CPUs shared only with BE pods.
	QoSLSR QoSClass = "LSR"
	// QoSLS is latency-sensitive on the shared pool.
	QoSLS QoSClass = "LS"
	// QoSBE is best-effort batch that may run on over-committed resources.
	QoSBE QoSClass = "BE"
	// QoSSystem is for node daemons.
	QoSSystem QoSClass = "SYSTEM"
	// QoSNone means no class could be determined.
	QoSNone QoSClass = ""
)

// ParseQoSClass parses a value of the koordinator.sh/qosClass label.
func ParseQoSClass(s string) (QoSClass, error) {
	switch q := QoSClass(s); q {
	case QoSLSE, QoSLSR, QoSLS, QoSBE, QoSSystem:
		return q, nil
	}
	return QoSNone, labelError(LabelPodQoS, fmt.Errorf("unknown QoS class %q (want LSE, LSR, LS, BE or SYSTEM)", s))
}

// QoSClassFromKubeQoS is the class a pod without the label gets:
// Guaranteed→LSR, Burstable→LS, BestEffort→BE.
func QoSClassFromKubeQoS(q corev1.PodQOSClass) QoSClass {
	switch q {
	case corev1.PodQOSGuaranteed:
		return QoSLSR
	case corev1.PodQOSBurstable:
		return QoSLS
	case corev1.PodQOSBestEffort:
		return QoSBE
	}
	return QoSNone
}

// GetPodQoSClass returns the pod's QoS class. A malformed label yields the
// Kubernetes-QoS fallback together with an error naming the label, so callers
// can both carry on and report it.
func GetPodQoSClass(pod *corev1.Pod) (QoSClass, error) {
	if v, ok := pod.Labels[LabelPodQoS]; ok {
		q, err := ParseQoSClass(v)
		if err == nil {
			return q, nil
		}
		return QoSClassFromKubeQoS(v1qos.GetPodQOS(pod)), err
	}
	return QoSClassFromKubeQoS(v1qos.GetPodQOS(pod)), nil
}

// RequestsBatch says whether any of the pod's containers requests or limits
// kubernetes.io/batch-cpu or kubernetes.io/batch-memory.
func RequestsBatch(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			for _, rl := range []corev1.ResourceList{cs[i].Resources.Requests, cs[i].Resources.Limits} {
				if _, ok := rl[BatchCPU]; ok {
					return true
				}
				if _, ok := rl[BatchMemory]; ok {
					return true
				}
			}
		}
	}
	return false
}

// EnforcedQoSClass is the class koordlet enforces on a pod: its class, but
// BE for any pod that asks for batch resources, whatever its label says.
// Batch capacity is sold on the promise that BE limits, suppression and
// eviction keep it from hurting other pods; a pod labelled otherwise (made
// while the admission rules were off or failing open) is not let off them.
func EnforcedQoSClass(pod *corev1.Pod) QoSClass {
	if RequestsBatch(pod) {
		return QoSBE
	}
	q, _ := GetPodQoSClass(pod)
	return q
}
