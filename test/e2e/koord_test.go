package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

const koordScheduler = "koord-scheduler"

var _ = Describe("install", Label("install"), func() {
	It("runs every Koord component, Ready", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			for _, name := range []string{"koord-scheduler", "koord-manager"} {
				d, err := kube.AppsV1().Deployments(koordNS).Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(d.Status.ReadyReplicas).To(Equal(*d.Spec.Replicas), "deployment %s", name)
			}
			ds, err := kube.AppsV1().DaemonSets(koordNS).Get(ctx, "koordlet", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ds.Status.DesiredNumberScheduled).To(BeNumerically(">", 0))
			g.Expect(ds.Status.NumberReady).To(Equal(ds.Status.DesiredNumberScheduled), "koordlet pods ready")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})

var _ = Describe("koord-manager", Label("manager"), func() {
	It("keeps a NodeSLO and publishes batch resources for the real node from its measured slack", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			_, err := koord.SloV1alpha1().NodeSLOs().Get(ctx, realNode, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred(), "NodeSLO %s", realNode)
			node, err := kube.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			batch, ok := node.Status.Allocatable[extension.BatchCPU]
			g.Expect(ok).To(BeTrue(), "node %s has no %s", realNode, extension.BatchCPU)
			// Never more than the reclaimable share of the node's CPU.
			g.Expect(batch.Value()).To(BeNumerically("<=", node.Status.Allocatable.Cpu().MilliValue()))
			_, ok = node.Status.Allocatable[extension.BatchMemory]
			g.Expect(ok).To(BeTrue(), "node %s has no %s", realNode, extension.BatchMemory)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})

var _ = Describe("reservation", Label("reservation"), func() {
	It("holds capacity on the real node for its owner, which consumes it; the placeholder never runs", func(ctx SpecContext) {
		// Not allocateOnce: it stays Available, and lists its owner.
		once := false
		r := &schedulingv1alpha1.Reservation{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-reservation"},
			Spec: schedulingv1alpha1.ReservationSpec{
				// Its owner's namespace: owners by label are held to it.
				Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace}, Spec: corev1.PodSpec{NodeName: realNode, Containers: []corev1.Container{{
					Name: "main", Image: imagePrefix + "sleeper:" + imageTag,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
				}}}},
				Owners:       []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e2e-reserved"}}}},
				AllocateOnce: &once,
			},
		}
		_, err := koord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = koord.SchedulingV1alpha1().Reservations().Delete(ctx, "e2e-reservation", metav1.DeleteOptions{})
		})
		Eventually(func(g Gomega) {
			got, err := koord.SchedulingV1alpha1().Reservations().Get(ctx, "e2e-reservation", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Phase).To(Equal(schedulingv1alpha1.ReservationAvailable), "conditions %+v", got.Status.Conditions)
			g.Expect(got.Status.NodeName).To(Equal(realNode))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// The placeholder is removed without ever running: koord-scheduler
		// deletes it right after making the reservation Available, so it
		// may still be seen an instant, but never bound to a node.
		Eventually(func(g Gomega) {
			pods, err := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, p := range pods.Items {
				if _, ok := p.Annotations["scheduling.koordinator.sh/reservation-placeholder"]; ok {
					Expect(p.Spec.NodeName).To(BeEmpty(), "placeholder %s bound to a node", p.Name)
					g.Expect(p.Annotations).NotTo(HaveKey("scheduling.koordinator.sh/reservation-placeholder"), "placeholder %s left", p.Name)
				}
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		createPod(ctx, podOpts{name: "reserved-owner", scheduler: koordScheduler, cpu: "100m", memory: "16Mi", labels: map[string]string{"app": "e2e-reserved"}})
		owner := waitRunning(ctx, "reserved-owner")
		Expect(owner.Spec.NodeName).To(Equal(realNode))
		Expect(owner.Annotations).To(HaveKey(extension.AnnotationReservationAllocated))
		Eventually(func() int {
			got, err := koord.SchedulingV1alpha1().Reservations().Get(ctx, "e2e-reservation", metav1.GetOptions{})
			if err != nil {
				return -1
			}
			return len(got.Status.CurrentOwners)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(1))
	})
})

var _ = Describe("topology", Label("topology"), func() {
	It("publishes the node's numa-info ConfigMap as its /sys describes it, and re-creates it when deleted", func(ctx SpecContext) {
		name := extension.NUMAInfoConfigMapName(realNode)
		var cm *corev1.ConfigMap
		Eventually(func() error {
			var err error
			cm, err = kube.CoreV1().ConfigMaps(extension.NUMAInfoNamespace).Get(ctx, name, metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Expect(cm.Labels).To(HaveKeyWithValue(extension.LabelManagedBy, extension.ManagedByKoordlet))
		info, err := extension.ParseNUMAInfo(cm)
		Expect(err).NotTo(HaveOccurred())

		if sysfs := hostSysfs(); sysfs != "" {
			By("comparing with this machine's /sys")
			want := readSysfsTopology(sysfs)
			got := map[int]cpuPlace{}
			for _, c := range info.CPUTopology.Detail {
				got[int(c.ID)] = cpuPlace{socket: int(c.Socket), node: int(c.Node), core: int(c.Core)}
			}
			Expect(sortedKeys(got)).To(Equal(sortedKeys(want)), "online CPUs")
			for id, w := range want {
				Expect(got[id].socket).To(Equal(w.socket), "socket of CPU %d", id)
				Expect(got[id].node).To(Equal(w.node), "NUMA node of CPU %d", id)
				for id2, w2 := range want {
					// Core ids are renumbered; siblings must stay siblings.
					Expect(got[id].core == got[id2].core).To(Equal(w.core == w2.core && w.socket == w2.socket), "CPUs %d and %d share a core", id, id2)
				}
			}
		} else {
			GinkgoWriter.Println("not on the node: /sys comparison skipped")
		}

		By("deleting it")
		Expect(kube.CoreV1().ConfigMaps(extension.NUMAInfoNamespace).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			again, err := kube.CoreV1().ConfigMaps(extension.NUMAInfoNamespace).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.UID).NotTo(Equal(cm.UID))
			g.Expect(again.Data).To(Equal(cm.Data))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})
})

type cpuPlace struct{ socket, node, core int }

// hostSysfs is /sys when the suite runs on the real node (its sysfs names
// the same CPUs koordlet reported); "" elsewhere.
func hostSysfs() string {
	h, _ := os.Hostname()
	if !strings.EqualFold(h, realNode) && os.Getenv("E2E_ON_NODE") != "true" {
		return ""
	}
	return "/sys"
}

// readSysfsTopology reads CPU placement straight from sysfs, independently
// of koordlet's reader.
func readSysfsTopology(sysfs string) map[int]cpuPlace {
	online, err := os.ReadFile(filepath.Join(sysfs, "devices/system/cpu/online"))
	Expect(err).NotTo(HaveOccurred())
	cpus, err := cpuset.Parse(strings.TrimSpace(string(online)))
	Expect(err).NotTo(HaveOccurred())
	out := map[int]cpuPlace{}
	for _, id := range cpus.List() {
		dir := filepath.Join(sysfs, "devices/system/cpu", fmt.Sprintf("cpu%d", id))
		p := cpuPlace{socket: readInt(filepath.Join(dir, "topology/physical_package_id")), core: readInt(filepath.Join(dir, "topology/core_id"))}
		nodes, _ := filepath.Glob(filepath.Join(dir, "node[0-9]*"))
		if len(nodes) == 1 {
			p.node, _ = strconv.Atoi(strings.TrimPrefix(filepath.Base(nodes[0]), "node"))
		}
		out[id] = p
	}
	return out
}

func readInt(path string) int {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	Expect(err).NotTo(HaveOccurred())
	return v
}

func sortedKeys(m map[int]cpuPlace) []int {
	var k []int
	for id := range m {
		k = append(k, id)
	}
	sort.Ints(k)
	return k
}

var _ = Describe("scheduling", Label("scheduling"), func() {
	It("runs a koord-scheduler pod and leaves default-scheduler pods to the default scheduler", func(ctx SpecContext) {
		createPod(ctx, podOpts{name: "koord-pod", scheduler: koordScheduler, cpu: "50m", memory: "16Mi", nodeName: realNode})
		createPod(ctx, podOpts{name: "default-pod", cpu: "50m", memory: "16Mi", nodeName: realNode})
		waitRunning(ctx, "koord-pod")
		waitRunning(ctx, "default-pod")
		Expect(scheduledBy(ctx, "koord-pod")).To(Equal(koordScheduler))
		Expect(scheduledBy(ctx, "default-pod")).To(Equal(corev1.DefaultSchedulerName))
		Expect(getPod(ctx, "default-pod").Annotations).NotTo(HaveKey(extension.AnnotationResourceStatus))
	})

	It("hands leadership over when the active koord-scheduler pod is deleted", func(ctx SpecContext) {
		leader := leaseHolder(ctx)
		Expect(leader).NotTo(BeEmpty())
		pods, err := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=koord-scheduler"})
		Expect(err).NotTo(HaveOccurred())
		var victim string
		for _, p := range pods.Items {
			if strings.HasPrefix(leader, p.Name) {
				victim = p.Name
			}
		}
		Expect(victim).NotTo(BeEmpty(), "no koord-scheduler pod holds the lease (holder %q)", leader)
		By("deleting the leader " + victim)
		Expect(kube.CoreV1().Pods(koordNS).Delete(ctx, victim, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() string { return leaseHolder(ctx) }).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).
			ShouldNot(Or(BeEmpty(), HavePrefix(victim)))
		createPod(ctx, podOpts{name: "after-handover", scheduler: koordScheduler, cpu: "50m", memory: "16Mi", nodeName: realNode})
		waitRunning(ctx, "after-handover")
	})

	It("refuses a pod with a malformed resource-spec at admission, naming the key, and schedules the others", func(ctx SpecContext) {
		// koord-manager's validating webhook answers before the scheduler
		// sees the pod (test/integration covers the scheduler's own reason
		// for a pod that got past a webhook that was down).
		bad := newPod(podOpts{name: "bad-spec", scheduler: koordScheduler, cpu: "1", memory: "16Mi", guaranteed: true, nodeName: realNode,
			labels: map[string]string{extension.LabelPodQoS: "LSR"}, priority: "koord-prod",
			annotations: map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy": 7`}})
		Eventually(func() error {
			_, err := kube.CoreV1().Pods(testNamespace).Create(ctx, bad, metav1.CreateOptions{})
			if err == nil {
				deletePod(ctx, bad.Name)
			}
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(MatchError(And(
			ContainSubstring("vpod.koordinator.sh"), ContainSubstring(extension.AnnotationResourceSpec))))
		createPod(ctx, podOpts{name: "good-after-bad", scheduler: koordScheduler, cpu: "50m", memory: "16Mi", nodeName: realNode})
		waitRunning(ctx, "good-after-bad")
	})
})

// scheduledBy is the reporting component of the pod's Scheduled event.
func scheduledBy(ctx context.Context, pod string) string {
	var by string
	Eventually(func() string {
		evs, err := kube.CoreV1().Events(testNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod + ",reason=Scheduled"})
		if err != nil || len(evs.Items) == 0 {
			return ""
		}
		e := evs.Items[0]
		by = e.ReportingController
		if by == "" {
			by = e.Source.Component
		}
		return by
	}).WithContext(ctx).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
	return by
}

// leaseHolder is the holder of the koord-scheduler lease, in whichever
// namespace the scheduler configuration puts it (the shipped one: kube-system).
func leaseHolder(ctx context.Context) string {
	ls, err := kube.CoordinationV1().Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + koordScheduler})
	if err != nil || len(ls.Items) != 1 || ls.Items[0].Spec.HolderIdentity == nil {
		return ""
	}
	return *ls.Items[0].Spec.HolderIdentity
}

var _ = Describe("CPU pinning", Label("cpuset"), func() {
	It("pins an LSR pod to the CPU the scheduler chose and keeps LS pods off it until it is gone", func(ctx SpecContext) {
		all := nodeCPUs(ctx)
		Expect(all.Size()).To(BeNumerically(">=", 2), "CPU pinning needs a node with 2 CPUs or more")
		createPod(ctx, podOpts{name: "ls", scheduler: koordScheduler, cpu: "100m", memory: "16Mi", nodeName: realNode})
		waitRunning(ctx, "ls")
		// Koordinator binds CPUs for LSR pods of prod priority.
		createPod(ctx, podOpts{name: "lsr", scheduler: koordScheduler, cpu: "1", memory: "32Mi", guaranteed: true, nodeName: realNode,
			labels: map[string]string{extension.LabelPodQoS: "LSR"}, priority: "koord-prod"})
		lsr := waitRunning(ctx, "lsr")
		status, err := extension.GetResourceStatus(lsr.Annotations)
		Expect(err).NotTo(HaveOccurred())
		bound, err := cpuset.Parse(status.CPUSet)
		Expect(err).NotTo(HaveOccurred())
		Expect(bound.Size()).To(Equal(1), "resource-status %q", status.CPUSet)
		By("the LSR container runs on exactly " + bound.String())
		Eventually(func() (string, error) { return allowedCPUs(ctx, "lsr") }).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(bound.String()))
		if path := containerCgroup(lsr); path != "" {
			By("and its container's cpuset.cpus says so: " + path)
			Eventually(func() (string, error) { return readTrim(filepath.Join(path, "cpuset.cpus")) }).WithContext(ctx).
				WithTimeout(30 * time.Second).Should(Equal(bound.String()))
		} else {
			GinkgoWriter.Println("not on the node (or not cgroup v1 cgroupfs): the cpuset.cpus file check is skipped")
		}
		By("the LS container is kept off it")
		Eventually(func() (string, error) { return allowedCPUs(ctx, "ls") }).WithContext(ctx).WithTimeout(time.Minute).
			Should(Equal(all.Difference(bound).String()))
		if path := containerCgroup(getPod(ctx, "ls")); path != "" {
			By("and so is the LS pod's cgroup (its sandbox container too, or cgroup v1 refuses to narrow it)")
			Eventually(func() (string, error) { return readTrim(filepath.Join(filepath.Dir(path), "cpuset.cpus")) }).WithContext(ctx).
				WithTimeout(30 * time.Second).Should(Equal(all.Difference(bound).String()))
		}
		By("deleting the LSR pod gives the CPU back")
		deletePod(ctx, "lsr")
		Eventually(func() (string, error) { return allowedCPUs(ctx, "ls") }).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(all.String()))
	})
})

// setNodeAnnotation sets (or, with "", removes) an annotation of a node.
func setNodeAnnotation(ctx context.Context, node, key, value string) {
	v := "null"
	if value != "" {
		b, _ := json.Marshal(value)
		v = string(b)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)
	_, err := kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// nodeCPUs are the node's CPUs as its numa-info ConfigMap lists them.
func nodeCPUs(ctx context.Context) cpuset.CPUSet {
	cm, err := kube.CoreV1().ConfigMaps(extension.NUMAInfoNamespace).Get(ctx, extension.NUMAInfoConfigMapName(realNode), metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	info, err := extension.ParseNUMAInfo(cm)
	Expect(err).NotTo(HaveOccurred())
	return info.AllCPUs()
}

// containerCgroup is the cgroup v1 cpuset directory of the pod's container
// when the suite runs on its node with kubelet's cgroupfs layout; "" otherwise.
func containerCgroup(pod *corev1.Pod) string {
	if hostSysfs() == "" || len(pod.Status.ContainerStatuses) == 0 {
		return ""
	}
	_, id, _ := strings.Cut(pod.Status.ContainerStatuses[0].ContainerID, "://")
	qos := map[corev1.PodQOSClass]string{corev1.PodQOSGuaranteed: "", corev1.PodQOSBurstable: "burstable/", corev1.PodQOSBestEffort: "besteffort/"}[pod.Status.QOSClass]
	dir := filepath.Join("/sys/fs/cgroup/cpuset/kubepods", qos+"pod"+string(pod.UID), id)
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

var _ = Describe("load-aware scheduling", Label("loadaware"), func() {
	It("keeps pods off the kwok node whose NodeMetric says it is hot", func(ctx SpecContext) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		Expect(err).NotTo(HaveOccurred())
		if len(nodes.Items) < 2 {
			Skip("needs 2 or more kwok nodes (hack/cluster makes 3)")
		}
		hot := nodes.Items[0].Name
		// kwok nodes run no koordlet: the test reports for them, hot at 90 %, the others at 10 %.
		stop := make(chan struct{})
		defer close(stop)
		report := func() {
			for _, n := range nodes.Items {
				load := "400m"
				if n.Name == hot {
					load = "3600m"
				}
				Expect(reportNodeMetric(ctx, n.Name, load)).To(Succeed())
			}
		}
		report()
		go func() {
			defer GinkgoRecover()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Second):
					report()
				}
			}
		}()
		for i := range 6 {
			createPod(ctx, podOpts{name: fmt.Sprintf("la-%d", i), scheduler: koordScheduler, cpu: "100m", memory: "64Mi", kwok: true})
		}
		for i := range 6 {
			pod := waitRunning(ctx, fmt.Sprintf("la-%d", i))
			Expect(pod.Spec.NodeName).NotTo(Equal(hot), "pod %s placed on the hot node", pod.Name)
		}
	})

	It("reports a CPU-burning pod on the real node in its NodeMetric within two report intervals", func(ctx SpecContext) {
		createPod(ctx, podOpts{name: "burner", scheduler: koordScheduler, image: "burner", args: []string{"--cores=1"}, cpu: "100m", memory: "16Mi", nodeName: realNode})
		waitRunning(ctx, "burner")
		nm, err := koord.SloV1alpha1().NodeMetrics().Get(ctx, realNode, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		interval := nm.Spec.CollectPolicy.ReportInterval()
		// Two report intervals, plus the first samples the pod needs to be measured at all.
		Eventually(func() int64 {
			nm, err := koord.SloV1alpha1().NodeMetrics().Get(ctx, realNode, metav1.GetOptions{})
			if err != nil {
				return 0
			}
			for _, pm := range nm.Status.PodsMetric {
				if pm != nil && pm.Namespace == testNamespace && pm.Name == "burner" {
					return pm.PodUsage.Cpu().MilliValue()
				}
			}
			return 0
		}).WithContext(ctx).WithTimeout(2*interval+15*time.Second).WithPolling(time.Second).Should(BeNumerically(">=", 500),
			"burner's CPU usage in NodeMetric %s", realNode)
	})
})

func reportNodeMetric(ctx context.Context, node, cpu string) error {
	nm, err := koord.SloV1alpha1().NodeMetrics().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	nm.Status = slov1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &slov1alpha1.NodeMetricInfo{NodeUsage: slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("4Gi")}}},
	}
	_, err = koord.SloV1alpha1().NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{})
	return err
}

var _ = Describe("run-queue latency (eBPF)", Label("ebpf"), func() {
	It("shows non-zero run-queue latency for a CPU-burning pod competing with another", func(ctx SpecContext) {
		n := nodeCPUs(ctx).Size()
		for _, name := range []string{"burn-a", "burn-b"} {
			createPod(ctx, podOpts{name: name, scheduler: koordScheduler, image: "burner", args: []string{"--cores=" + strconv.Itoa(n)}, cpu: "100m", memory: "16Mi", nodeName: realNode})
		}
		waitRunning(ctx, "burn-a")
		waitRunning(ctx, "burn-b")
		count := regexp.MustCompile(`koordlet_pod_runqueue_latency_seconds_count\{namespace="` + testNamespace + `",pod="burn-a"\} (\d+)`)
		Eventually(func(g Gomega) {
			text, err := koordletMetrics(ctx, realNode)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(text).To(ContainSubstring("koordlet_ebpf_enabled 1"))
			m := count.FindStringSubmatch(text)
			g.Expect(m).NotTo(BeNil(), "no run-queue latency series for burn-a")
			waits, _ := strconv.Atoi(m[1])
			g.Expect(waits).To(BeNumerically(">", 0))
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
	})
})

var _ = Describe("uninstall", Label("uninstall"), func() {
	It("leaves no numa-info ConfigMap and no Koord object behind", func(ctx SpecContext) {
		if !uninstall {
			Skip("runs after `helm uninstall` (E2E_PHASE=uninstall)")
		}
		Eventually(func(g Gomega) {
			cms, err := kube.CoreV1().ConfigMaps(extension.NUMAInfoNamespace).List(ctx, metav1.ListOptions{
				LabelSelector: extension.LabelManagedBy + "=" + extension.ManagedByKoordlet})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cms.Items).To(BeEmpty(), "numa-info ConfigMaps left")
			var left []string
			dep, _ := kube.AppsV1().Deployments(koordNS).List(ctx, metav1.ListOptions{})
			for _, d := range dep.Items {
				left = append(left, "deployment/"+d.Name)
			}
			ds, _ := kube.AppsV1().DaemonSets(koordNS).List(ctx, metav1.ListOptions{})
			for _, d := range ds.Items {
				left = append(left, "daemonset/"+d.Name)
			}
			pods, _ := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{})
			for _, p := range pods.Items {
				left = append(left, "pod/"+p.Name)
			}
			crs, _ := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
			for _, r := range crs.Items {
				if strings.HasPrefix(r.Name, "koord") {
					left = append(left, "clusterrole/"+r.Name)
				}
			}
			crbs, _ := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
			for _, r := range crbs.Items {
				if strings.HasPrefix(r.Name, "koord") {
					left = append(left, "clusterrolebinding/"+r.Name)
				}
			}
			for _, ns := range []string{koordNS, extension.NUMAInfoNamespace} {
				roles, _ := kube.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
				for _, r := range roles.Items {
					if strings.HasPrefix(r.Name, "koord") {
						left = append(left, "role/"+ns+"/"+r.Name)
					}
				}
				sas, _ := kube.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
				for _, sa := range sas.Items {
					if strings.HasPrefix(sa.Name, "koord") {
						left = append(left, "serviceaccount/"+ns+"/"+sa.Name)
					}
				}
			}
			// The webhook certificate koord-manager wrote goes with the
			// webhook configurations that own it.
			if _, err := kube.CoreV1().Secrets(koordNS).Get(ctx, "koord-webhook-certs", metav1.GetOptions{}); err == nil {
				left = append(left, "secret/koord-webhook-certs")
			}
			mwcs, _ := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
			for _, c := range mwcs.Items {
				if strings.HasPrefix(c.Name, "koord") {
					left = append(left, "mutatingwebhookconfiguration/"+c.Name)
				}
			}
			vwcs, _ := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
			for _, c := range vwcs.Items {
				if strings.HasPrefix(c.Name, "koord") {
					left = append(left, "validatingwebhookconfiguration/"+c.Name)
				}
			}
			pcs, _ := kube.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
			for _, pc := range pcs.Items {
				if strings.HasPrefix(pc.Name, "koord-") {
					left = append(left, "priorityclass/"+pc.Name)
				}
			}
			for _, gv := range []string{"slo.koordinator.sh/v1alpha1", "scheduling.koordinator.sh/v1alpha1", "config.koordinator.sh/v1alpha1"} {
				if _, err := kube.Discovery().ServerResourcesForGroupVersion(gv); err == nil {
					left = append(left, "API group "+gv)
				}
			}
			g.Expect(left).To(BeEmpty(), "Koord objects left after uninstall")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})
