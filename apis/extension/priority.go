package extension

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
