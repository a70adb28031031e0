package reporter

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	koordfake "github.com/koord-project/koord/pkg/client/clientset/versioned/fake"
)

// koordlet writes the status of the NodeMetric koord-manager created, by the
// policy in its spec; before that object exists it creates nothing and says
// who is missing.
func TestPublishNodeMetricWritesOnlyStatus(t *testing.T) {
	ctx := context.Background()
	client := koordfake.NewSimpleClientset()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1"}}
	status := func(p Policy) (*slov1alpha1.NodeMetricStatus, bool) {
		return &slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: time.Unix(100, 0)}}, true
	}
	_, wrote, err := PublishNodeMetric(ctx, client, node, status)
	if err == nil || wrote || !strings.Contains(err.Error(), "koord-manager creates it") {
		t.Fatalf("without a NodeMetric: wrote %v, %v", wrote, err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			t.Fatalf("koordlet did %s %s; it only reads and writes status", a.GetVerb(), a.GetResource().Resource)
		}
	}

	if _, err := client.SloV1alpha1().NodeMetrics().Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](15)}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy, wrote, err := PublishNodeMetric(ctx, client, node, status)
	if err != nil || !wrote {
		t.Fatalf("with a NodeMetric: wrote %v, %v", wrote, err)
	}
	// The spec's interval, the API's defaults for what it leaves out.
	if policy.Report != 15*time.Second || policy.Aggregate != 300*time.Second || len(policy.Windows) != 3 {
		t.Errorf("policy %+v", policy)
	}
	nm, err := client.SloV1alpha1().NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil || nm.Status.UpdateTime == nil || !nm.Status.UpdateTime.Time.Equal(time.Unix(100, 0)) {
		t.Errorf("status not written: %+v, %v", nm.Status, err)
	}
}
