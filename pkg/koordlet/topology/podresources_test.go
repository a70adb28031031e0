package topology

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/utils/cpuset"
)

// fakeKubelet serves the pod-resources API as kubelet's static CPU manager
// policy answers it: exclusive CPUs per container, none for shared ones.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
}

func (fakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		{Namespace: "prod", Name: "db", Containers: []*podresourcesv1.ContainerResources{{Name: "main", CpuIds: []int64{4, 5}}, {Name: "side", CpuIds: []int64{6}}}},
		{Namespace: "prod", Name: "web", Containers: []*podresourcesv1.ContainerResources{{Name: "main"}}},
	}}, nil
}

// koordlet learns kubelet's pins over a real gRPC socket, and names the
// pods by UID among the node's pods.
func TestPodResourcesPinned(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	p := &PodResources{Socket: socket}
	if p.Available() {
		t.Fatal("no socket yet, but Available")
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, fakeKubelet{})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	defer p.Close()

	if !p.Available() {
		t.Fatal("socket served, but not Available")
	}
	byName, err := p.Pinned(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{Pinned: map[types.UID]cpuset.CPUSet{}}
	k.AddPinned(byName, []PodRef{{Namespace: "prod", Name: "db", UID: "uid-db"}, {Namespace: "prod", Name: "web", UID: "uid-web"}})
	if len(k.Pinned) != 1 || !k.Pinned["uid-db"].Equals(cpuset.New(4, 5, 6)) {
		t.Errorf("pinned %v, want db on 4-6 and web on none", k.Pinned)
	}
}
