package numaresource

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/koord-project/koord/apis/extension"
)

// podRequest is what PreFilter learns from a pod, once per scheduling cycle.
type podRequest struct {
	cpuMilli, memory int64
	qos              extension.QoSClass
	// policy is how the pod itself asks to bind CPUs ("" when it does not);
	// required means no node policy may change it. why says where it came from.
	policy    extension.CPUBindPolicy
	required  bool
	why       string
	exclusive extension.CPUExclusivePolicy
	// numaPolicy is the pod's numa-topology-spec (None when absent).
	numaPolicy extension.NUMATopologyPolicy
}

// newPodRequest reads a pod's annotations, QoS class and requests. The error
// names the annotation at fault, or says why the pod's request cannot be bound.
func newPodRequest(pod *corev1.Pod, defaultPolicy extension.CPUBindPolicy) (*podRequest, error) {
	spec, err := extension.GetResourceSpec(pod.Annotations)
	if err != nil {
		return nil, err
	}
	numa, err := extension.GetNUMATopologySpec(pod.Annotations)
	if err != nil {
		return nil, err
	}
	// A malformed qosClass label falls back to the Kubernetes QoS class; the
	// label's parser is fuzzed and the LoadAware plugin reports it.
	qos, _ := extension.GetPodQoSClass(pod)
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	r := &podRequest{
		cpuMilli:   reqs.Cpu().MilliValue(),
		memory:     reqs.Memory().Value(),
		qos:        qos,
		exclusive:  spec.PreferredCPUExclusivePolicy,
		numaPolicy: numa.NUMATopologyPolicy,
	}
	resolve := func(p extension.CPUBindPolicy) extension.CPUBindPolicy {
		if p == extension.CPUBindPolicyDefault {
			return defaultPolicy
		}
		return p
	}
	switch {
	case bindsByScheduler(spec.RequiredCPUBindPolicy):
		r.policy, r.required = resolve(spec.RequiredCPUBindPolicy), true
		r.why = "requiredCPUBindPolicy in annotation " + extension.AnnotationResourceSpec
	case bindsByScheduler(spec.PreferredCPUBindPolicy):
		r.policy = resolve(spec.PreferredCPUBindPolicy)
		r.why = "preferredCPUBindPolicy in annotation " + extension.AnnotationResourceSpec
	case spec.RequiredCPUBindPolicy == "" && spec.PreferredCPUBindPolicy == "" &&
		(qos == extension.QoSLSE || qos == extension.QoSLSR) &&
		extension.PodPriorityClass(pod.Spec.Priority) == extension.PriorityProd && r.integerCPUs():
		r.policy = defaultPolicy
		r.why = fmt.Sprintf("QoS class %s with prod priority", qos)
	}
	if r.policy != "" && !r.integerCPUs() {
		return nil, fmt.Errorf("the pod requests %dm CPU, but binding CPUs (%s, from %s) needs a whole number of CPUs",
			r.cpuMilli, r.policy, r.why)
	}
	return r, nil
}

// bindsByScheduler: ConstrainedBurst is enforced by koordlet on shared CPUs,
// so only FullPCPUs, SpreadByPCPUs and Default make the scheduler pick CPUs.
func bindsByScheduler(p extension.CPUBindPolicy) bool {
	switch p {
	case extension.CPUBindPolicyDefault, extension.CPUBindPolicyFullPCPUs, extension.CPUBindPolicySpreadByPCPUs:
		return true
	}
	return false
}

func (r *podRequest) integerCPUs() bool { return r.cpuMilli > 0 && r.cpuMilli%1000 == 0 }

// mayBind says whether the pod can bind CPUs on some node: it asks to, or it
// has whole CPUs that a node's cpu-bind-policy label would bind.
func (r *podRequest) mayBind() bool {
	return r.policy != "" || (r.integerCPUs() && r.qos != extension.QoSBE)
}

// binding is how a pod binds CPUs on one node.
type binding struct {
	policy     extension.CPUBindPolicy
	count      int
	numaPolicy extension.NUMATopologyPolicy
	// allocate is the node's numa-allocate-strategy label ("": the args').
	allocate extension.NUMAAllocateStrategy
}

// nodePolicies are a node's numa-topology-policy and cpu-bind-policy
// labels, parsed; err names a malformed one.
type nodePolicies struct {
	numa     extension.NUMATopologyPolicy
	bind     extension.NodeCPUBindPolicy
	allocate extension.NUMAAllocateStrategy
	err      error
}

func policiesOf(labels map[string]string) nodePolicies {
	numa, err := extension.GetNodeNUMATopologyPolicy(labels)
	if err != nil {
		return nodePolicies{err: err}
	}
	bind, err := extension.GetNodeCPUBindPolicy(labels)
	if err != nil {
		return nodePolicies{err: err}
	}
	allocate, err := extension.GetNodeNUMAAllocateStrategy(labels)
	if err != nil {
		return nodePolicies{err: err}
	}
	return nodePolicies{numa: numa, bind: bind, allocate: allocate}
}

func (a nodePolicies) equal(b nodePolicies) bool {
	if (a.err == nil) != (b.err == nil) || (a.err != nil && a.err.Error() != b.err.Error()) {
		return false
	}
	return a.numa == b.numa && a.bind == b.bind && a.allocate == b.allocate
}

// on decides how the pod binds on a node, by its labels.
func (r *podRequest) on(node *corev1.Node) (b binding, ok bool, err error) {
	return r.with(policiesOf(node.Labels))
}

// with decides how the pod binds on a node with the given policies: ok is
// false when it does not bind there. The error says why it cannot be
// placed on the node at all (a policy conflict or a malformed node label).
// Values, not pointers: this runs for every node in Filter and Score.
func (r *podRequest) with(pol nodePolicies) (b binding, ok bool, err error) {
	if pol.err != nil {
		return b, false, pol.err
	}
	nodeNUMA, nodeBind := pol.numa, pol.bind
	numa := r.numaPolicy
	if numa != extension.NUMATopologyPolicyNone && nodeNUMA != extension.NUMATopologyPolicyNone && numa != nodeNUMA {
		return b, false, fmt.Errorf("the pod's NUMA policy %s (annotation %s) conflicts with the node's %s (label %s)",
			numa, extension.AnnotationNUMATopologySpec, nodeNUMA, extension.LabelNodeNUMATopologyPolicy)
	}
	if numa == extension.NUMATopologyPolicyNone {
		numa = nodeNUMA
	}
	policy := r.policy
	if nodeBind != extension.NodeCPUBindPolicyNone && r.qos != extension.QoSBE && r.integerCPUs() {
		forced := extension.CPUBindPolicyFullPCPUs
		if nodeBind == extension.NodeCPUBindPolicySpreadByPCPUs {
			forced = extension.CPUBindPolicySpreadByPCPUs
		}
		if r.required && r.policy != forced {
			return b, false, fmt.Errorf("the pod requires %s (%s) but the node binds only %s (label %s=%s)",
				r.policy, r.why, forced, extension.LabelNodeCPUBindPolicy, nodeBind)
		}
		policy = forced
	}
	if policy == "" {
		return b, false, nil
	}
	return binding{policy: policy, count: int(r.cpuMilli / 1000), numaPolicy: numa, allocate: pol.allocate}, true, nil
}
