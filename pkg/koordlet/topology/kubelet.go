package topology

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	cpustate "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	"k8s.io/utils/cpuset"
	"sigs.k8s.io/yaml"

	"github.com/koord-project/koord/apis/extension"
)

// Kubelet is what kubelet's CPU manager holds on this node.
type Kubelet struct {
	Policy extension.KubeletCPUManagerPolicy
	// Pinned is the CPUs kubelet's static policy gave each pod, by pod UID.
	Pinned map[types.UID]cpuset.CPUSet
	// FromState says Pinned came from cpu_manager_state; without that
	// file, it is to be asked of the pod-resources API (PodResources).
	FromState bool
}

// AddPinned records the CPUs the pod-resources API says kubelet pinned,
// naming each pod by its UID among pods (this node's).
func (k *Kubelet) AddPinned(byName map[types.NamespacedName]cpuset.CPUSet, pods []PodRef) {
	for _, p := range pods {
		if cpus, ok := byName[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]; ok {
			k.Pinned[p.UID] = cpus
		}
	}
}

// Kubelet's file names under its root directory (--root-dir, /var/lib/kubelet).
const (
	kubeletConfigFile   = "config.yaml"
	cpuManagerStateFile = "cpu_manager_state"
)

// ReadKubelet reads kubelet's configuration (policy, options, reserved CPUs)
// from <root>/config.yaml and the CPUs it pinned from <root>/cpu_manager_state.
// Missing files mean kubelet's defaults: policy none, nothing pinned. A file
// that exists but does not parse is an error naming it.
func ReadKubelet(root string) (*Kubelet, error) {
	k := &Kubelet{Policy: extension.KubeletCPUManagerPolicy{Policy: extension.KubeletCPUManagerPolicyNone}, Pinned: map[types.UID]cpuset.CPUSet{}}
	if root == "" {
		return k, nil
	}
	path := filepath.Join(root, kubeletConfigFile)
	if b, err := os.ReadFile(path); err == nil {
		var cfg kubeletconfigv1beta1.KubeletConfiguration
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if cfg.CPUManagerPolicy != "" {
			k.Policy.Policy = cfg.CPUManagerPolicy
		}
		k.Policy.Options = cfg.CPUManagerPolicyOptions
		if cfg.ReservedSystemCPUs != "" {
			reserved, err := extension.ParseCPUSet(cfg.ReservedSystemCPUs)
			if err != nil {
				return nil, fmt.Errorf("%s: reservedSystemCPUs: %w", path, err)
			}
			k.Policy.ReservedCPUs = reserved.String()
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}

	path = filepath.Join(root, cpuManagerStateFile)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return k, nil
	}
	if err != nil {
		return nil, err
	}
	k.FromState = true
	// Every checkpoint version keeps the v2 fields (policyName, entries).
	var cp cpustate.CPUManagerCheckpointV2
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cp.PolicyName != "" {
		k.Policy.Policy = cp.PolicyName
	}
	for uid, containers := range cp.Entries {
		var all cpuset.CPUSet
		for name, s := range containers {
			cpus, err := extension.ParseCPUSet(s)
			if err != nil {
				return nil, fmt.Errorf("%s: pod %s container %s: %w", path, uid, name, err)
			}
			all = all.Union(cpus)
		}
		if all.Size() > 0 {
			k.Pinned[types.UID(uid)] = all
		}
	}
	return k, nil
}

// PodRef names a pod on this node, so that pod-cpu-allocs can say whose
// CPUs kubelet pinned.
type PodRef struct {
	Namespace, Name string
	UID             types.UID
	// CPUs is what the scheduler bound the pod to (its resource-status), if anything.
	CPUs cpuset.CPUSet
}

// NUMAInfo is what koordlet publishes: the machine, kubelet's pinned CPUs
// (named after their pods when known), and the shared pools, the CPUs no pod
// holds exclusively (kubelet-pinned or scheduler-bound), per NUMA node.
func NUMAInfo(m *Machine, k *Kubelet, pods []PodRef) (*extension.NUMAInfo, error) {
	info := &extension.NUMAInfo{
		CPUTopology:      m.CPUTopology,
		NUMANodes:        m.NUMANodes,
		CPUBasicInfo:     m.BasicInfo,
		CPUManagerPolicy: k.Policy,
	}
	byUID := map[types.UID]PodRef{}
	exclusive := cpuset.New()
	for _, p := range pods {
		byUID[p.UID] = p
		exclusive = exclusive.Union(p.CPUs)
	}
	uids := make([]string, 0, len(k.Pinned))
	for uid := range k.Pinned {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	for _, uid := range uids {
		cpus := k.Pinned[types.UID(uid)]
		p := byUID[types.UID(uid)]
		info.PodCPUAllocs = append(info.PodCPUAllocs, extension.PodCPUAlloc{Namespace: p.Namespace, Name: p.Name, UID: uid, CPUSet: cpus.String()})
		exclusive = exclusive.Union(cpus)
	}
	socketOf := map[int32]int32{}
	for _, c := range m.CPUTopology.Detail {
		socketOf[c.Node] = c.Socket
	}
	for _, n := range m.NUMANodes {
		cpus, err := extension.ParseCPUSet(n.CPUs)
		if err != nil {
			return nil, err
		}
		// kubelet's reserved CPUs stay shared: they are never bound exclusively.
		shared := cpus.Difference(exclusive)
		info.CPUSharedPools = append(info.CPUSharedPools, extension.CPUSharedPool{Socket: socketOf[n.ID], Node: n.ID, CPUSet: shared.String()})
	}
	return info, nil
}
