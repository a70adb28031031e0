// Command koord-demo starts a control plane and koord-scheduler in this
// process, builds a small simulated cluster, submits the sample co-located
// workload and prints where every pod went and why. With DEMO_KEEP=1 (or
// --keep) it then keeps running and prints a kubeconfig for kubectl.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/slo/manager"
	"github.com/koord-project/koord/pkg/slo/recommender"
)

func main() {
	keep := flag.Bool("keep", os.Getenv("DEMO_KEEP") == "1", "keep the control plane running after the demo (also DEMO_KEEP=1)")
	flag.Parse()
	if err := run(*keep); err != nil {
		fmt.Fprintf(os.Stderr, "koord-demo: %v\n", err)
		os.Exit(1)
	}
}

// demoNodes is the simulated cluster. The batch resources are what
// koord-manager publishes on real nodes: capacity that services reserved but
// do not use.
// The usage columns are what koordlet would report in each NodeMetric:
// node-a is busy although little of it is requested, and LoadAwareScheduling
// keeps new pods off it.
// Each node's CPU topology (sockets × NUMA nodes per socket × cores per NUMA
// node × threads) is what koordlet would publish in its numa-info ConfigMap.
var demoNodes = []struct {
	name, cpu, memory, batchCPU, batchMemory string
	cpuUsed, memoryUsed                      string
	numaPerSocket, coresPerNUMA              int
}{
	{"node-a", "8", "32Gi", "6000", "16Gi", "7200m", "20Gi", 1, 4},
	{"node-b", "32", "128Gi", "10000", "24Gi", "6", "32Gi", 2, 8},
	{"node-c", "4", "16Gi", "0", "0", "1", "4Gi", 1, 2},
}

func run(keep bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Control-plane logs go to a file: the terminal is for the results.
	logDir, err := os.MkdirTemp("", "koord-demo-logs-")
	if err != nil {
		return err
	}
	logFile := filepath.Join(logDir, "control-plane.log")
	f, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer f.Close()
	// klog also copies errors to stderr unless told otherwise; the file has them.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	for name, value := range map[string]string{"logtostderr": "false", "legacy_stderr_threshold_behavior": "false", "stderrthreshold": "FATAL"} {
		if err := klogFlags.Set(name, value); err != nil {
			return err
		}
	}
	klog.SetOutput(f)

	start := time.Now()
	fmt.Println("Starting etcd, kube-apiserver (with Koord CRDs), koord-scheduler and koord-manager in this process...")
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	sched, err := cp.StartScheduler(ctx, manifests.SchedulerConfig)
	if err != nil {
		return fmt.Errorf("koord-scheduler: %w", err)
	}
	defer sched.Stop()
	stopManager, err := startManager(ctx, cp)
	if err != nil {
		return fmt.Errorf("koord-manager: %w", err)
	}
	defer stopManager()
	fmt.Printf("Control plane ready in %s (logs: %s)\n\n", time.Since(start).Round(100*time.Millisecond), logFile)

	for _, n := range demoNodes {
		node, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: n.name, CPU: n.cpu, Memory: n.memory})
		if err != nil {
			return err
		}
		if err := addBatchCapacity(ctx, cp, node, n.batchCPU, n.batchMemory); err != nil {
			return err
		}
		memory := resource.MustParse(n.memory)
		info := topologytest.Linux(1, n.numaPerSocket, n.coresPerNUMA, 2, memory.Value()/int64(n.numaPerSocket))
		if err := cp.PublishNUMAInfo(ctx, n.name, info); err != nil {
			return err
		}
		used := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n.cpuUsed), corev1.ResourceMemory: resource.MustParse(n.memoryUsed)}
		if err := cp.ReportNodeMetric(ctx, n.name, used, time.Now()); err != nil {
			return err
		}
	}
	printNodes(ctx, cp)

	if err := cp.Apply(ctx, manifests.PriorityClasses); err != nil {
		return err
	}
	if err := cp.Apply(ctx, manifests.SampleWorkload); err != nil {
		return err
	}
	fmt.Println("\nSubmitted manifests/samples/workload.yaml; waiting for koord-scheduler to decide...")
	if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
		return err
	}
	if err := printPlacements(ctx, cp); err != nil {
		return err
	}
	if err := sched.Err(); err != nil {
		return err
	}
	if err := koordletScene(ctx, cp); err != nil {
		return fmt.Errorf("koordlet scene: %w", err)
	}
	if err := reservationScene(ctx, cp); err != nil {
		return fmt.Errorf("reservation scene: %w", err)
	}
	if err := admissionScene(ctx, cp); err != nil {
		return fmt.Errorf("admission scene: %w", err)
	}
	if err := deschedulerScene(ctx, cp); err != nil {
		return fmt.Errorf("descheduler scene: %w", err)
	}
	if err := gangScene(ctx, cp); err != nil {
		return fmt.Errorf("gang scene: %w", err)
	}
	if err := quotaScene(ctx, cp); err != nil {
		return fmt.Errorf("quota scene: %w", err)
	}
	if err := recommenderScene(ctx, cp); err != nil {
		return fmt.Errorf("recommender scene: %w", err)
	}
	if err := trustScene(ctx, cp); err != nil {
		return fmt.Errorf("trust scene: %w", err)
	}
	if err := sched.Err(); err != nil {
		return err
	}

	if keep {
		fmt.Printf("\nThe control plane keeps running. Try:\n  kubectl --kubeconfig %s get pods -o wide\nPress Ctrl-C to stop.\n", cp.Kubeconfig)
		<-ctx.Done()
	}
	return nil
}

// cpusetOf is the CPUs NodeNUMAResource bound the pod to, with their NUMA
// nodes, or "shared" for pods on the shared pool.
func cpusetOf(p *corev1.Pod) string {
	st, err := extension.GetResourceStatus(p.Annotations)
	switch {
	case err != nil:
		return "(bad annotation)"
	case p.Spec.NodeName == "":
		return "-"
	case st.CPUSet == "":
		return "shared"
	}
	var numa []string
	for _, r := range st.NUMANodeResources {
		numa = append(numa, fmt.Sprint(r.Node))
	}
	return fmt.Sprintf("%s (%s)", st.CPUSet, strings.Join(numa, ","))
}

func addBatchCapacity(ctx context.Context, cp *controlplane.ControlPlane, node *corev1.Node, cpu, memory string) error {
	for name, v := range map[corev1.ResourceName]string{extension.BatchCPU: cpu, extension.BatchMemory: memory} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return err
		}
		node.Status.Capacity[name] = q
		node.Status.Allocatable[name] = q
	}
	_, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func printNodes(ctx context.Context, cp *controlplane.ControlPlane) {
	nodes, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCPU\tMEMORY\tBATCH-CPU\tBATCH-MEMORY\tCPU-USED (NodeMetric)\tMEMORY-USED")
	for _, n := range nodes.Items {
		a := n.Status.Allocatable
		bc, bm := a[extension.BatchCPU], a[extension.BatchMemory]
		cpuUsed, memUsed := "-", "-"
		if nm, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, n.Name, metav1.GetOptions{}); err == nil && nm.Status.NodeMetric != nil {
			u := nm.Status.NodeMetric.NodeUsage
			cpuUsed = fmt.Sprintf("%s (%d%%)", u.Cpu(), u.Cpu().MilliValue()*100/a.Cpu().MilliValue())
			memUsed = fmt.Sprintf("%s (%d%%)", u.Memory(), u.Memory().Value()*100/a.Memory().Value())
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%dm\t%s\t%s\t%s\n", n.Name, a.Cpu(), a.Memory(), bc.Value(), bm.String(), cpuUsed, memUsed)
	}
	w.Flush()
}

func printPlacements(ctx context.Context, cp *controlplane.ControlPlane) error {
	pods, err := cp.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tQOS\tPRIORITY\tSCHEDULER\tNODE\tCPUSET (NUMA)\tREASON")
	for i := range pods.Items {
		p := &pods.Items[i]
		qos, qosErr := extension.GetPodQoSClass(p)
		qosText := string(qos)
		if qosErr != nil {
			qosText += " (bad label)"
		}
		prio := string(extension.PodPriorityClass(p.Spec.Priority))
		if prio == "" {
			prio = "-"
		}
		node, reason := p.Spec.NodeName, ""
		switch {
		case node != "":
		case p.Spec.SchedulerName != "koord-scheduler":
			node, reason = "<pending>", "left to "+p.Spec.SchedulerName
		default:
			node, reason = "<pending>", controlplane.PodUnschedulableMessage(p)
		}
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, qosText, prio, p.Spec.SchedulerName, node, cpusetOf(p), reason)
	}
	return w.Flush()
}

// startManager runs koord-manager's controllers in this process. The demo's
// nodes are simulated (their batch capacity and usage are set above), so
// batch resources are not computed; NodeSLOs, NodeMetric collection and the
// reservation lifecycle run.
func startManager(ctx context.Context, cp *controlplane.ControlPlane) (stop func(), err error) {
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	ctrl.SetLogger(klog.NewKlogr()) // into the log file, like the rest
	gates := features.New()
	if err := gates.Set("BatchResource=false,ResourceRecommender=true"); err != nil {
		return nil, err
	}
	// The recommender with a warm-up the demo's twenty reports meet.
	rcfg := recommender.Defaults()
	rcfg.MinSamples, rcfg.WarmUp = 10, 5*time.Minute
	port, err := cp.InstallWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	mgr, err := manager.New(mctx, cp.Config, manager.Options{Namespace: managerNamespace, MetricsAddr: "0", HealthAddr: "0", Gates: gates, ReservationGCAfter: time.Hour,
		Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertSecret: "koord-webhook-certs", CertSelfManaged: true, CertHosts: []string{"127.0.0.1"},
			CertValidity: 24 * time.Hour, MutatingConfigurations: []string{"koord-mutating-webhook-configuration"},
			ValidatingConfigurations: []string{"koord-validating-webhook-configuration"}},
		Recommender: recommender.Options{Config: rcfg, Interval: 100 * time.Millisecond}})
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	return func() { cancel(); <-done }, nil
}

const managerNamespace = "koord-system"

// reservationScene applies manifests/samples/reservation.yaml one object at
// a time on a fresh node: the reservation, a pod that is not its owner (held
// off), then its owner (placed into it, on the CPUs it pinned).
func reservationScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	fmt.Println("\nReservation: manifests/samples/reservation.yaml on a new node, node-d (8 CPUs, 1 NUMA node x 4 cores x 2 threads)")
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "node-d", CPU: "8", Memory: "32Gi"}); err != nil {
		return err
	}
	if err := cp.PublishNUMAInfo(ctx, "node-d", topologytest.Linux(1, 1, 4, 2, 32<<30)); err != nil {
		return err
	}
	// Its koordlet's first report (a node whose NodeMetric was never
	// reported is kept out by LoadAwareScheduling, as in Koordinator), and
	// load thresholds off for it (0: not checked): this scene fills the node
	// by requests.
	if err := cp.ReportNodeMetric(ctx, "node-d", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}, time.Now()); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"usageThresholds\":{\"cpu\":0,\"memory\":0}}"}}}`, extension.AnnotationCustomUsageThresholds)
	if _, err := cp.Client.CoreV1().Nodes().Patch(ctx, "node-d", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	docs := strings.Split(string(manifests.SampleReservation), "\n---\n")
	if len(docs) != 3 {
		return fmt.Errorf("manifests/samples/reservation.yaml has %d documents, want 3", len(docs))
	}
	if err := cp.Apply(ctx, []byte(docs[0])); err != nil {
		return err
	}
	r, err := waitReservation(ctx, cp, func(r *schedulingv1alpha1.Reservation) bool {
		return r.Status.Phase == schedulingv1alpha1.ReservationAvailable
	})
	if err != nil {
		return err
	}
	st, err := extension.GetResourceStatus(r.Annotations)
	if err != nil {
		return err
	}
	fmt.Printf("  reservation %s: %s on %s, holding cpu %s, memory %s, CPUs %s\n", r.Name, r.Status.Phase, r.Status.NodeName,
		r.Status.Allocatable.Cpu(), r.Status.Allocatable.Memory(), st.CPUSet)

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  POD\tOWNER\tNODE\tCPUSET (NUMA)\tRESERVATION\tREASON")
	for i, doc := range docs[1:] {
		if err := cp.Apply(ctx, []byte(doc)); err != nil {
			return err
		}
		name := []string{"analytics", "db-failover-0"}[i]
		if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
			return err
		}
		p, err := cp.Client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node, reason, used := p.Spec.NodeName, "", "-"
		if node == "" {
			node, reason = "<pending>", controlplane.PodUnschedulableMessage(p)
		}
		if a, err := extension.GetReservationAllocated(p.Annotations); err == nil && a != nil {
			used = a.Name
		}
		fmt.Fprintf(w, "  default/%s\t%s\t%s\t%s\t%s\t%s\n", name, []string{"no", "yes"}[i], node, cpusetOf(p), used, reason)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	r, err = waitReservation(ctx, cp, func(r *schedulingv1alpha1.Reservation) bool {
		return r.Status.Phase == schedulingv1alpha1.ReservationSucceeded
	})
	if err != nil {
		return err
	}
	var owners []string
	for _, o := range r.Status.CurrentOwners {
		owners = append(owners, o.Namespace+"/"+o.Name)
	}
	fmt.Printf("  reservation %s: %s (allocateOnce), consumed by %s\n", r.Name, r.Status.Phase, strings.Join(owners, ", "))
	return nil
}

func waitReservation(ctx context.Context, cp *controlplane.ControlPlane, ok func(*schedulingv1alpha1.Reservation) bool) (*schedulingv1alpha1.Reservation, error) {
	var last *schedulingv1alpha1.Reservation
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, "db-failover", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = r
		return ok(r), nil
	})
	if err != nil && last != nil {
		return nil, fmt.Errorf("reservation db-failover: %w; last status %+v", err, last.Status)
	}
	return last, err
}
