package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

// CPUInfo places one logical CPU in the topology.
type CPUInfo struct {
	ID     int32 `json:"id"`
	Core   int32 `json:"core"`
	Socket int32 `json:"socket"`
	Node   int32 `json:"node"`
}

// CPUTopology is the cpu-topology key: one entry per logical CPU.
type CPUTopology struct {
	Detail []CPUInfo `json:"detail"`
}

// NUMANodeInfo is one entry of the numa-nodes key.
type NUMANodeInfo struct {
	ID          int32  `json:"id"`
	CPUs        string `json:"cpus"`
	MemoryBytes int64  `json:"memoryBytes"`
}

// CPUBasicInfo is the cpu-basic-info key.
type CPUBasicInfo struct {
	CPUModel           string `json:"cpuModel,omitempty"`
	HyperThreadEnabled bool   `json:"hyperThreadEnabled"`
}

// KubeletCPUManagerPolicy is the cpu-manager-policy key: kubelet's CPU manager.
type KubeletCPUManagerPolicy struct {
	// Policy is "none" or "static".
	Policy       string            `json:"policy"`
	Options      map[string]string `json:"options,omitempty"`
	ReservedCPUs string            `json:"reservedCPUs,omitempty"`
}

// Kubelet CPU manager policies.
const (
	KubeletCPUManagerPolicyNone   = "none"
	KubeletCPUManagerPolicyStatic = "static"
)

// PodCPUAlloc is one entry of pod-cpu-allocs: CPUs kubelet pinned for its own pods.
type PodCPUAlloc struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	CPUSet    string `json:"cpuset"`
}

// CPUSharedPool is one entry of cpu-shared-pools: CPUs not exclusively bound.
type CPUSharedPool struct {
	Socket int32  `json:"socket"`
	Node   int32  `json:"node"`
	CPUSet string `json:"cpuset"`
}

// NUMAInfo is the whole content of a kube-system/<node>-numa-info ConfigMap.
type NUMAInfo struct {
	CPUTopology      CPUTopology
	NUMANodes        []NUMANodeInfo
	CPUBasicInfo     CPUBasicInfo
	CPUManagerPolicy KubeletCPUManagerPolicy
	PodCPUAllocs     []PodCPUAlloc
	CPUSharedPools   []CPUSharedPool

	// Parsed once by ParseNUMAInfo, so that consumers never parse again.
	allCPUs, reservedCPUs, pinnedCPUs cpuset.CPUSet
}

// numaInfoError names the ConfigMap and key a bad value came from.
// numaInfoSource is where NUMA info is read from: the value of each key, and
// how an error names the key (the ConfigMap key or the annotation).
type numaInfoSource struct {
	kind string
	get  func(key string) (string, bool)
	name func(key string) string
}

func (src numaInfoSource) error(key string, err error) error {
	return &KeyError{Kind: src.kind, Key: src.name(key), Err: err}
}

// ParseNUMAInfo parses and cross-checks a numa-info ConfigMap: every CPU is
// listed once, NUMA nodes partition the CPUs, and reserved, pinned and shared
// CPUs exist on the node. cpu-topology and numa-nodes are required; the other
// keys are optional (absent means no CPU manager, nothing pinned).
func ParseNUMAInfo(cm *corev1.ConfigMap) (*NUMAInfo, error) {
	src := numaInfoSource{
		kind: fmt.Sprintf("configmap %s/%s key", cm.Namespace, cm.Name),
		get:  func(key string) (string, bool) { v, ok := cm.Data[key]; return v, ok },
		name: func(key string) string { return key },
	}
	return parseNUMAInfo(src, nil)
}

// NUMAInfoAnnotations maps each numa-info key to the annotation Koordinator's
// koordlet writes it under on a NodeResourceTopology object. numa-nodes has
// none: an NRT object describes NUMA nodes as zones.
var NUMAInfoAnnotations = map[string]string{
	NUMAInfoKeyCPUTopology:      NodeDomainPrefix + "cpu-topology",
	NUMAInfoKeyCPUBasicInfo:     NodeDomainPrefix + "cpu-basic-info",
	NUMAInfoKeyCPUManagerPolicy: "kubelet.koordinator.sh/cpu-manager-policy",
	NUMAInfoKeyPodCPUAllocs:     NodeDomainPrefix + "pod-cpu-allocs",
	NUMAInfoKeyCPUSharedPools:   NodeDomainPrefix + "cpu-shared-pools",
}

// ParseNUMAInfoAnnotations parses the same information from a
// NodeResourceTopology object: the annotations of NUMAInfoAnnotations, and the
// memory of each NUMA node (from its zones). Each NUMA node's CPUs are those
// cpu-topology places on it. kind names the object in errors.
func ParseNUMAInfoAnnotations(kind string, annotations map[string]string, numaMemory map[int32]int64) (*NUMAInfo, error) {
	src := numaInfoSource{
		kind: kind + " annotation",
		get:  func(key string) (string, bool) { v, ok := annotations[NUMAInfoAnnotations[key]]; return v, ok },
		name: func(key string) string {
			if a, ok := NUMAInfoAnnotations[key]; ok {
				return a
			}
			return key
		},
	}
	return parseNUMAInfo(src, numaMemory)
}

// parseNUMAInfo reads every key of src. With numaMemory set, NUMA nodes are
// derived from cpu-topology and given that memory instead of read from
// numa-nodes.
func parseNUMAInfo(src numaInfoSource, numaMemory map[int32]int64) (*NUMAInfo, error) {
	info := &NUMAInfo{CPUManagerPolicy: KubeletCPUManagerPolicy{Policy: KubeletCPUManagerPolicyNone}}
	type field struct {
		key  string
		into any
	}
	required := []field{{NUMAInfoKeyCPUTopology, &info.CPUTopology}}
	if numaMemory == nil {
		required = append(required, field{NUMAInfoKeyNUMANodes, &info.NUMANodes})
	}
	optional := []field{
		{NUMAInfoKeyCPUBasicInfo, &info.CPUBasicInfo},
		{NUMAInfoKeyCPUManagerPolicy, &info.CPUManagerPolicy},
		{NUMAInfoKeyPodCPUAllocs, &info.PodCPUAllocs},
		{NUMAInfoKeyCPUSharedPools, &info.CPUSharedPools},
	}
	for _, f := range required {
		v, ok := src.get(f.key)
		if !ok {
			return nil, src.error(f.key, errors.New("missing"))
		}
		if err := decodeJSON(v, f.into); err != nil {
			return nil, src.error(f.key, err)
		}
	}
	for _, f := range optional {
		if v, ok := src.get(f.key); ok {
			if err := decodeJSON(v, f.into); err != nil {
				return nil, src.error(f.key, err)
			}
		}
	}
	if numaMemory != nil {
		byNode := map[int32][]int{}
		for _, c := range info.CPUTopology.Detail {
			byNode[c.Node] = append(byNode[c.Node], int(c.ID))
		}
		for id, cpus := range byNode {
			mem, ok := numaMemory[id]
			if !ok {
				return nil, src.error(NUMAInfoKeyCPUTopology, fmt.Errorf("NUMA node %d has no zone giving its memory", id))
			}
			info.NUMANodes = append(info.NUMANodes, NUMANodeInfo{ID: id, CPUs: cpuset.New(cpus...).String(), MemoryBytes: mem})
		}
		sort.Slice(info.NUMANodes, func(i, j int) bool { return info.NUMANodes[i].ID < info.NUMANodes[j].ID })
	}
	if key, err := info.validate(); err != nil {
		return nil, src.error(key, err)
	}
	return info, nil
}

// validate returns the key at fault along with the error.
func (n *NUMAInfo) validate() (string, error) {
	if len(n.CPUTopology.Detail) == 0 {
		return NUMAInfoKeyCPUTopology, errors.New("detail lists no CPUs")
	}
	byNode := map[int32][]int{}
	ids := make([]int, 0, len(n.CPUTopology.Detail))
	seen := map[int32]bool{}
	for _, c := range n.CPUTopology.Detail {
		if c.ID < 0 || c.Core < 0 || c.Socket < 0 || c.Node < 0 {
			return NUMAInfoKeyCPUTopology, fmt.Errorf("cpu %d: id, core, socket and node must not be negative", c.ID)
		}
		if c.ID > MaxCPUID || c.Core > MaxCPUID || c.Socket > MaxCPUID || c.Node > MaxCPUID {
			return NUMAInfoKeyCPUTopology, fmt.Errorf("cpu %d: id, core, socket and node must be at most %d", c.ID, MaxCPUID)
		}
		if seen[c.ID] {
			return NUMAInfoKeyCPUTopology, fmt.Errorf("cpu %d listed twice", c.ID)
		}
		seen[c.ID] = true
		ids = append(ids, int(c.ID))
		byNode[c.Node] = append(byNode[c.Node], int(c.ID))
	}
	all := cpuset.New(ids...)

	if len(n.NUMANodes) == 0 {
		return NUMAInfoKeyNUMANodes, errors.New("lists no NUMA nodes")
	}
	nodeSeen := map[int32]bool{}
	for _, node := range n.NUMANodes {
		if node.ID < 0 {
			return NUMAInfoKeyNUMANodes, fmt.Errorf("node %d: id is negative", node.ID)
		}
		if nodeSeen[node.ID] {
			return NUMAInfoKeyNUMANodes, fmt.Errorf("node %d listed twice", node.ID)
		}
		nodeSeen[node.ID] = true
		if _, ok := byNode[node.ID]; !ok {
			// Without this, a list of CPU-less nodes could grow as long as
			// the ConfigMap allows.
			return NUMAInfoKeyNUMANodes, fmt.Errorf("node %d has no CPUs in cpu-topology", node.ID)
		}
		if node.MemoryBytes < 0 {
			return NUMAInfoKeyNUMANodes, fmt.Errorf("node %d: memoryBytes %d is negative", node.ID, node.MemoryBytes)
		}
		cpus, err := ParseCPUSet(node.CPUs)
		if err != nil {
			return NUMAInfoKeyNUMANodes, fmt.Errorf("node %d: cpus %q: %w", node.ID, node.CPUs, err)
		}
		if want := cpuset.New(byNode[node.ID]...); !cpus.Equals(want) {
			return NUMAInfoKeyNUMANodes, fmt.Errorf("node %d: cpus %q differ from the CPUs cpu-topology places on it (%q)", node.ID, cpus, want)
		}
	}
	nodeIDs := make([]int, 0, len(byNode))
	for id := range byNode {
		nodeIDs = append(nodeIDs, int(id))
	}
	sort.Ints(nodeIDs)
	for _, id := range nodeIDs {
		if !nodeSeen[int32(id)] {
			return NUMAInfoKeyNUMANodes, fmt.Errorf("node %d has CPUs in cpu-topology but is not listed", id)
		}
	}

	switch n.CPUManagerPolicy.Policy {
	case KubeletCPUManagerPolicyNone, KubeletCPUManagerPolicyStatic:
	default:
		return NUMAInfoKeyCPUManagerPolicy, fmt.Errorf("policy %q is not none or static", n.CPUManagerPolicy.Policy)
	}
	reserved, err := parseSubset(all, n.CPUManagerPolicy.ReservedCPUs)
	if err != nil {
		return NUMAInfoKeyCPUManagerPolicy, fmt.Errorf("reservedCPUs: %w", err)
	}
	// Kubelet pins each CPU for one pod at most, and the shared pools
	// partition what is left: entries are disjoint, so there can be no more
	// of them than CPUs, and the sets parsed add up to at most the node's
	// CPUs. The first entry that breaks this ends the parse, so a hostile
	// ConfigMap costs one oversized set, not thousands.
	if len(n.PodCPUAllocs) > len(ids) {
		return NUMAInfoKeyPodCPUAllocs, fmt.Errorf("%d entries, more than the node's %d CPUs", len(n.PodCPUAllocs), len(ids))
	}
	pinnedBy := map[int]string{}
	uids := make(map[string]bool, len(n.PodCPUAllocs))
	for _, a := range n.PodCPUAllocs {
		who := fmt.Sprintf("pod %s/%s", a.Namespace, a.Name)
		if a.UID != "" && uids[a.UID] {
			return NUMAInfoKeyPodCPUAllocs, fmt.Errorf("%s: uid %s listed twice", who, a.UID)
		}
		uids[a.UID] = true
		cpus, err := parseSubset(all, a.CPUSet)
		if err != nil {
			return NUMAInfoKeyPodCPUAllocs, fmt.Errorf("%s: %w", who, err)
		}
		if err := claimDisjoint(pinnedBy, cpus, who); err != nil {
			return NUMAInfoKeyPodCPUAllocs, err
		}
	}
	pinned := cpuset.New(slices.Collect(maps.Keys(pinnedBy))...)
	if len(n.CPUSharedPools) > len(ids) {
		return NUMAInfoKeyCPUSharedPools, fmt.Errorf("%d entries, more than the node's %d CPUs", len(n.CPUSharedPools), len(ids))
	}
	pooled := map[int]string{}
	for i, p := range n.CPUSharedPools {
		who := fmt.Sprintf("pool %d (node %d)", i, p.Node)
		cpus, err := parseSubset(all, p.CPUSet)
		if err != nil {
			return NUMAInfoKeyCPUSharedPools, fmt.Errorf("%s: %w", who, err)
		}
		if err := claimDisjoint(pooled, cpus, who); err != nil {
			return NUMAInfoKeyCPUSharedPools, err
		}
	}
	n.allCPUs, n.reservedCPUs, n.pinnedCPUs = all, reserved, pinned
	return "", nil
}

// claimDisjoint records cpus as who's in owners, refusing a CPU another
// entry has.
func claimDisjoint(owners map[int]string, cpus cpuset.CPUSet, who string) error {
	for _, c := range cpus.List() {
		if other, taken := owners[c]; taken {
			return fmt.Errorf("%s and %s both list CPU %d", other, who, c)
		}
		owners[c] = who
	}
	return nil
}

func parseSubset(all cpuset.CPUSet, s string) (cpuset.CPUSet, error) {
	cpus, err := ParseCPUSet(s)
	if err != nil {
		return cpus, fmt.Errorf("cpuset %q: %w", s, err)
	}
	if !cpus.IsSubsetOf(all) {
		return cpus, fmt.Errorf("cpuset %q names CPUs %q the node does not have", s, cpus.Difference(all))
	}
	return cpus, nil
}

// ReservedCPUs is kubelet's reservedCPUs (empty unless parsed by ParseNUMAInfo).
func (n *NUMAInfo) ReservedCPUs() cpuset.CPUSet { return n.reservedCPUs }

// KubeletPinnedCPUs is every CPU of pod-cpu-allocs (empty unless parsed by ParseNUMAInfo).
func (n *NUMAInfo) KubeletPinnedCPUs() cpuset.CPUSet { return n.pinnedCPUs }

// AllCPUs is every logical CPU of the node.
func (n *NUMAInfo) AllCPUs() cpuset.CPUSet {
	if n.allCPUs.Size() > 0 {
		return n.allCPUs
	}
	ids := make([]int, 0, len(n.CPUTopology.Detail))
	for _, c := range n.CPUTopology.Detail {
		ids = append(ids, int(c.ID))
	}
	return cpuset.New(ids...)
}

// ConfigMapData is the ConfigMap data for this info, each value JSON.
func (n *NUMAInfo) ConfigMapData() (map[string]string, error) {
	values := map[string]any{
		NUMAInfoKeyCPUTopology:      n.CPUTopology,
		NUMAInfoKeyNUMANodes:        nonNil(n.NUMANodes),
		NUMAInfoKeyCPUBasicInfo:     n.CPUBasicInfo,
		NUMAInfoKeyCPUManagerPolicy: n.CPUManagerPolicy,
		NUMAInfoKeyPodCPUAllocs:     nonNil(n.PodCPUAllocs),
		NUMAInfoKeyCPUSharedPools:   nonNil(n.CPUSharedPools),
	}
	data := make(map[string]string, len(values))
	for k, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", k, err)
		}
		data[k] = string(b)
	}
	return data, nil
}

// nonNil makes empty lists encode as [] rather than null, which reads better in kubectl.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// NewNUMAInfoConfigMap is the kube-system/<node>-numa-info ConfigMap for info,
// labelled as koordlet labels it. The caller adds the owner reference to the
// Node when it knows the Node's UID.
func NewNUMAInfoConfigMap(node string, info *NUMAInfo) (*corev1.ConfigMap, error) {
	data, err := info.ConfigMapData()
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{Data: data}
	cm.Namespace, cm.Name = NUMAInfoNamespace, NUMAInfoConfigMapName(node)
	cm.Labels = map[string]string{LabelManagedBy: ManagedByKoordlet, LabelTopologyNode: node}
	return cm, nil
}

// CheckNUMAInfoOrigin says whether cm can be koordlet's numa-info ConfigMap
// for node: labelled managed-by koordlet and for that node, and owned by the
// Node of that name. kube-system holds ConfigMaps many writers can create;
// the scheduler reads only these (the admission policy in
// manifests/policies lets only that node's koordlet write them).
func CheckNUMAInfoOrigin(cm *corev1.ConfigMap, node string) error {
	where := fmt.Sprintf("configmap %s/%s", cm.Namespace, cm.Name)
	if cm.Labels[LabelManagedBy] != ManagedByKoordlet {
		return fmt.Errorf("%s: label %s is %q, not %q: it is not koordlet's and is ignored", where, LabelManagedBy, cm.Labels[LabelManagedBy], ManagedByKoordlet)
	}
	if got, ok := cm.Labels[LabelTopologyNode]; ok && got != node {
		return fmt.Errorf("%s: label %s names node %q: it is ignored", where, LabelTopologyNode, got)
	}
	for _, o := range cm.OwnerReferences {
		if o.APIVersion == "v1" && o.Kind == "Node" && o.Name == node {
			return nil
		}
	}
	return fmt.Errorf("%s: no owner reference to Node %s: it is not koordlet's and is ignored", where, node)
}
