package topology

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubernetes/pkg/kubelet/apis/podresources"
	"k8s.io/utils/cpuset"
)

// PodResources asks kubelet's pod-resources API (a gRPC socket under its
// root directory, pod-resources/kubelet.sock) which CPUs its static CPU
// manager policy gave each container exclusively. It is how koordlet learns
// them when kubelet's cpu_manager_state is not mounted: the chart mounts the
// socket's directory and config.yaml, not kubelet's whole directory, which
// holds every pod's tokens and kubelet's credentials.
type PodResources struct {
	Socket string

	mu     sync.Mutex
	conn   *grpc.ClientConn
	client podresourcesv1.PodResourcesListerClient
}

// Available says whether kubelet serves the socket here.
func (p *PodResources) Available() bool {
	fi, err := os.Stat(p.Socket)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// Pinned is the CPUs kubelet pinned for each pod, by namespace and name
// (the API names pods, not UIDs); pods with none are absent.
func (p *PodResources) Pinned(ctx context.Context) (map[types.NamespacedName]cpuset.CPUSet, error) {
	client, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		p.Close() // dial again next time: kubelet may have restarted
		return nil, fmt.Errorf("kubelet pod-resources %s: %w", p.Socket, err)
	}
	out := map[types.NamespacedName]cpuset.CPUSet{}
	for _, pod := range resp.GetPodResources() {
		// Pod-level CPUs (kubelet's PodLevelResourceManagers) and each
		// container's exclusive ones; shared-pool containers report none.
		ids := []int{}
		for _, id := range pod.GetCpuIds() {
			ids = append(ids, int(id))
		}
		for _, c := range pod.GetContainers() {
			for _, id := range c.GetCpuIds() {
				ids = append(ids, int(id))
			}
		}
		if len(ids) > 0 {
			out[types.NamespacedName{Namespace: pod.GetNamespace(), Name: pod.GetName()}] = cpuset.New(ids...)
		}
	}
	return out, nil
}

func (p *PodResources) dial(ctx context.Context) (podresourcesv1.PodResourcesListerClient, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		client, conn, err := podresources.GetV1Client(ctx, "unix://"+p.Socket, 5*time.Second, 16<<20)
		if err != nil {
			return nil, fmt.Errorf("kubelet pod-resources %s: %w", p.Socket, err)
		}
		p.client, p.conn = client, conn
	}
	return p.client, nil
}

// Close drops the connection.
func (p *PodResources) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		_ = p.conn.Close()
	}
	p.conn, p.client = nil, nil
}
