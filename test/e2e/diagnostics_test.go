package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// diagnosticsEntry names the report entry a failed spec's cluster state goes into.
const diagnosticsEntry = "cluster state at failure"

// A failed spec records what it left in the cluster before its DeferCleanups
// delete it: the failure message alone ("pod not Running") rarely says why.
var _ = JustAfterEach(func() {
	if !CurrentSpecReport().Failed() || kube == nil || uninstall {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	AddReportEntry(diagnosticsEntry, clusterState(ctx), ReportEntryVisibilityFailureOrVerbose)
})

// clusterState is the workload namespace's pods and events, the real node's
// last NodeMetric and who leads koord-scheduler: what decides whether a test
// pod gets placed and started.
func clusterState(ctx context.Context) string {
	var b strings.Builder
	pods, err := kube.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	} else {
		for i := range pods.Items {
			fmt.Fprintf(&b, "pod %s: %s\n", pods.Items[i].Name, describePod(&pods.Items[i]))
		}
	}
	evs, err := kube.CoreV1().Events(testNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "events: %v\n", err)
	} else {
		items := evs.Items
		sort.SliceStable(items, func(i, j int) bool { return eventTime(&items[i]).Before(eventTime(&items[j])) })
		if len(items) > 12 {
			items = items[len(items)-12:]
		}
		for i := range items {
			e := &items[i]
			fmt.Fprintf(&b, "event %s %s/%s %s: %s\n", eventTime(e).Format(time.TimeOnly), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	if realNode != "" {
		nm, err := koord.SloV1alpha1().NodeMetrics().Get(ctx, realNode, metav1.GetOptions{})
		switch {
		case err != nil:
			fmt.Fprintf(&b, "nodemetric %s: %v\n", realNode, err)
		case nm.Status.NodeMetric == nil || nm.Status.UpdateTime == nil:
			fmt.Fprintf(&b, "nodemetric %s: no status yet\n", realNode)
		default:
			u := nm.Status.NodeMetric.NodeUsage.ResourceList
			fmt.Fprintf(&b, "nodemetric %s at %s: cpu %s memory %s\n", realNode, nm.Status.UpdateTime.Format(time.TimeOnly), u.Cpu(), u.Memory())
		}
		if node, err := kube.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{}); err == nil {
			fmt.Fprintf(&b, "node %s allocatable: cpu %s memory %s; annotations %v\n", realNode,
				node.Status.Allocatable.Cpu(), node.Status.Allocatable.Memory(), node.Annotations)
		}
	}
	fmt.Fprintf(&b, "koord-scheduler lease holder: %q\n", leaseHolder(ctx))
	return b.String()
}

// eventTime is when an event last happened: the scheduler reports through
// events.k8s.io, which fills in eventTime (and series) rather than lastTimestamp.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// With E2E_FAILURES set, the suite writes each failed spec, its failure and
// the cluster state it recorded to that file, which hack/e2e.sh prints last:
// the end of a CI log is the part that gets read.
var _ = ReportAfterSuite("failure summary", func(r Report) {
	path := os.Getenv("E2E_FAILURES")
	if path == "" {
		return
	}
	var b strings.Builder
	for _, s := range r.SpecReports {
		if !s.Failed() {
			continue
		}
		name := s.FullText()
		if s.LeafNodeType != types.NodeTypeIt {
			name = s.LeafNodeType.String()
		}
		fmt.Fprintf(&b, "FAILED %s\n  at %s\n  %s\n", name, s.Failure.Location, indent(s.Failure.Message))
		for _, e := range s.ReportEntries {
			if e.Name == diagnosticsEntry {
				fmt.Fprintf(&b, "  %s:\n    %s\n", diagnosticsEntry, indent(indent(e.StringRepresentation())))
			}
		}
	}
	if b.Len() > 0 {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			GinkgoWriter.Printf("writing %s: %v\n", path, err)
		}
	}
})

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
