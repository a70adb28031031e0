package extension

import corev1 "k8s.io/api/core/v1"

// PriorityClass is the priority band of a pod, derived from spec.priority.
type PriorityClass string

const (
	PriorityProd  PriorityClass = "koord-prod"
	PriorityMid   PriorityClass = "koord-mid"
	PriorityBatch PriorityClass = "koord-batch"
	PriorityFree  PriorityClass = "koord-free"
	// PriorityNone is any priority outside the four bands.
	PriorityNone PriorityClass = ""
)

// Band bounds (inclusive) and the values of the shipped PriorityClasses.
const (
	PriorityProdValueMin  int32 = 9000
	PriorityProdValueMax  int32 = 9999
	PriorityMidValueMin   int32 = 7000
	PriorityMidValueMax   int32 = 7999
	PriorityBatchValueMin int32 = 5000
	PriorityBatchValueMax int32 = 5999
	PriorityFreeValueMin  int32 = 3000
	PriorityFreeValueMax  int32 = 3999
)

// PriorityClassOf maps a pod priority to its band.
func PriorityClassOf(priority int32) PriorityClass {
	switch {
	case priority >= PriorityProdValueMin && priority <= PriorityProdValueMax:
		return PriorityProd
	case priority >= PriorityMidValueMin && priority <= PriorityMidValueMax:
		return PriorityMid
	case priority >= PriorityBatchValueMin && priority <= PriorityBatchValueMax:
		return PriorityBatch
	case priority >= PriorityFreeValueMin && priority <= PriorityFreeValueMax:
		return PriorityFree
	}
	return PriorityNone
}

// PodPriorityClass is the band of a pod's spec.priority; a pod the API server
// has not yet given a priority is in no band.
func PodPriorityClass(priority *int32) PriorityClass {
	if priority == nil {
		return PriorityNone
	}
	return PriorityClassOf(*priority)
}

// PriorityClassByName is the band a koord-* PriorityClass name stands for
// (the value of the koordinator.sh/priority-class label); any other name is
// in no band.
func PriorityClassByName(name string) PriorityClass {
	switch p := PriorityClass(name); p {
	case PriorityProd, PriorityMid, PriorityBatch, PriorityFree:
		return p
	}
	return PriorityNone
}

// PodPriorityClassRaw is the band a pod declares: its
// koordinator.sh/priority-class label when it has one, else its
// spec.priority. This is the band admission checks against the QoS class.
func PodPriorityClassRaw(pod *corev1.Pod) PriorityClass {
	if v, ok := pod.Labels[LabelPodPriorityClass]; ok {
		return PriorityClassByName(v)
	}
	return PodPriorityClass(pod.Spec.Priority)
}

// PodPriorityClassWithDefault is PodPriorityClassRaw, or for a pod in no
// band the one its QoS class implies: batch for BE, prod for the others.
// The mutating webhook uses it to tell which pods run on batch resources.
func PodPriorityClassWithDefault(pod *corev1.Pod) PriorityClass {
	if p := PodPriorityClassRaw(pod); p != PriorityNone {
		return p
	}
	switch q, _ := GetPodQoSClass(pod); q {
	case QoSBE:
		return PriorityBatch
	case QoSNone:
		return PriorityNone
	}
	return PriorityProd
}

// ExtendedResource is the resource a pod of band p requests in place of cpu
// or memory: batch-cpu/batch-memory for batch, mid-cpu/mid-memory for mid;
// "" for the other bands, which request cpu and memory as they are.
func ExtendedResource(p PriorityClass, r corev1.ResourceName) corev1.ResourceName {
	switch {
	case p == PriorityBatch && r == corev1.ResourceCPU:
		return BatchCPU
	case p == PriorityBatch && r == corev1.ResourceMemory:
		return BatchMemory
	case p == PriorityMid && r == corev1.ResourceCPU:
		return MidCPU
	case p == PriorityMid && r == corev1.ResourceMemory:
		return MidMemory
	}
	return ""
}
