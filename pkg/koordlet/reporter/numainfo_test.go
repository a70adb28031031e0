package reporter

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/topologytest"
)

func TestPublishWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1"}}
	live := func() (*corev1.ConfigMap, error) {
		cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "n1-numa-info", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return cm, err
	}
	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "create" || a.GetVerb() == "update" {
				n++
			}
		}
		return n
	}
	info := topologytest.Linux(1, 2, 4, 2, 8<<30)
	for i, want := range []Result{Created, Unchanged, Unchanged} {
		got, err := PublishNUMAInfo(ctx, client, node, info, live)
		if err != nil || got != want {
			t.Fatalf("publish %d: %v, %v; want %v", i, got, err, want)
		}
	}
	if writes() != 1 {
		t.Errorf("%d writes for one content, want 1", writes())
	}
	cm, _ := live()
	if cm.Labels[extension.LabelManagedBy] != "koordlet" || cm.Labels[extension.LabelTopologyNode] != "n1" ||
		len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("labels %v, owners %v", cm.Labels, cm.OwnerReferences)
	}
	if _, err := extension.ParseNUMAInfo(cm); err != nil {
		t.Errorf("published ConfigMap does not parse: %v", err)
	}

	// An operator's label stays; a changed topology is written; a re-created
	// Node takes over ownership (the old reference would get it collected).
	cm.Labels["team"] = "infra"
	if _, err := client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	info.PodCPUAllocs = []extension.PodCPUAlloc{{Namespace: "default", Name: "p", UID: "u", CPUSet: "1"}}
	node.UID = "uid-2"
	if got, err := PublishNUMAInfo(ctx, client, node, info, live); err != nil || got != Updated {
		t.Fatalf("after a change: %v, %v", got, err)
	}
	cm, _ = live()
	if cm.Labels["team"] != "infra" || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != "uid-2" {
		t.Errorf("labels %v, owners %v", cm.Labels, cm.OwnerReferences)
	}
	// Deleted by hand: created again.
	if err := client.CoreV1().ConfigMaps("kube-system").Delete(ctx, "n1-numa-info", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := PublishNUMAInfo(ctx, client, node, info, live); err != nil || got != Created {
		t.Fatalf("after deletion: %v, %v", got, err)
	}
}
