package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// The koordlet QoS strategies on the real node. Each spec turns on what it
// needs through koord-manager's slo-controller-config (the operator's way)
// and puts the ConfigMap back when it ends.

const sloConfigMap = "slo-controller-config"

// setSLOConfig sets keys of slo-controller-config ("" removes one) and waits
// until koord-manager has turned them into the real node's NodeSLO; the old
// values come back when the spec ends.
func setSLOConfig(ctx context.Context, data map[string]string, ready func(spec map[string]any) bool) {
	cms := kube.CoreV1().ConfigMaps(koordNS)
	cm, err := cms.Get(ctx, sloConfigMap, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	old := map[string]string{}
	for k, v := range cm.Data {
		old[k] = v
	}
	DeferCleanup(func(ctx SpecContext) {
		cm, err := cms.Get(ctx, sloConfigMap, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		cm.Data = old
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})
	for k, v := range data {
		if v == "" {
			delete(cm.Data, k)
		} else {
			cm.Data[k] = v
		}
	}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	if ready != nil {
		waitNodeSLO(ctx, ready)
	}
}

// waitNodeSLO waits until the real node's NodeSLO spec (as JSON) satisfies ok.
func waitNodeSLO(ctx context.Context, ok func(spec map[string]any) bool) {
	Eventually(func() bool {
		slo, err := koord.SloV1alpha1().NodeSLOs().Get(ctx, realNode, metav1.GetOptions{})
		if err != nil {
			return false
		}
		b, _ := json.Marshal(slo.Spec)
		var spec map[string]any
		_ = json.Unmarshal(b, &spec)
		return ok(spec)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue(), "NodeSLO %s", realNode)
}

// field walks a JSON object by keys.
func field(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// cgroupFile is a cgroup v1 file of kubelet's cgroupfs layout on this node
// (dir relative to kubepods); "" when the suite does not run on the node.
func cgroupFile(controller, dir, file string) string {
	if hostSysfs() == "" {
		return ""
	}
	p := filepath.Join("/sys/fs/cgroup", controller, "kubepods", dir, file)
	if _, err := os.Stat(filepath.Dir(p)); err != nil {
		return ""
	}
	return p
}

// podCgroup is a pod's cgroup dir under kubepods (its first container's
// with container set).
func podCgroup(pod *corev1.Pod, container bool) string {
	qos := map[corev1.PodQOSClass]string{corev1.PodQOSGuaranteed: "", corev1.PodQOSBurstable: "burstable/", corev1.PodQOSBestEffort: "besteffort/"}[pod.Status.QOSClass]
	dir := qos + "pod" + string(pod.UID)
	if container && len(pod.Status.ContainerStatuses) > 0 {
		_, id, _ := strings.Cut(pod.Status.ContainerStatuses[0].ContainerID, "://")
		dir = filepath.Join(dir, id)
	}
	return dir
}

func needNode() {
	if hostSysfs() == "" {
		Skip("reads the node's cgroups: the suite must run on the node (make e2e does)")
	}
}

// eventuallyFile waits until a cgroup file holds want.
func eventuallyFile(ctx context.Context, path, want string) {
	Eventually(func() (string, error) { return readTrim(path) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).
		Should(Equal(want), "%s", path)
}

// batchPod is a BE pod asking for batch resources (requests, limits).
func batchPod(name, image string, args []string, req, lim map[string]string) *corev1.Pod {
	o := podOpts{name: name, scheduler: koordScheduler, image: image, args: args, nodeName: realNode,
		labels: map[string]string{extension.LabelPodQoS: "BE"}, priority: "koord-batch"}
	pod := newPod(o)
	list := func(m map[string]string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: list(req), Limits: list(lim)}
	return pod
}

func createObject(ctx context.Context, pod *corev1.Pod) {
	_, err := kube.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "creating pod %s", pod.Name)
	DeferCleanup(func(ctx SpecContext) { deletePod(ctx, pod.Name) })
}

// waitBatchCapacity waits until koord-manager offers at least milli of
// batch-cpu on the real node.
func waitBatchCapacity(ctx context.Context, milli int64) {
	Eventually(func() int64 {
		n, err := kube.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
		if err != nil {
			return 0
		}
		q := n.Status.Allocatable[extension.BatchCPU]
		return q.Value()
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(BeNumerically(">=", milli), "batch-cpu on %s", realNode)
}

var _ = Describe("co-location QoS", Label("qos"), func() {
	It("runs a BE pod on its batch resources: batch-cpu limit 500 is a 50 ms / 100 ms CFS quota, batch-memory the memory limit", func(ctx SpecContext) {
		needNode()
		waitBatchCapacity(ctx, 250)
		createObject(ctx, batchPod("batch-sized", "sleeper", nil,
			map[string]string{extension.BatchCPU: "250", extension.BatchMemory: "64Mi"},
			map[string]string{extension.BatchCPU: "500", extension.BatchMemory: "256Mi"}))
		pod := waitRunning(ctx, "batch-sized")
		Expect(pod.Status.QOSClass).To(Equal(corev1.PodQOSBestEffort), "kubelet sees no cpu or memory: a BestEffort pod")
		container, podDir := podCgroup(pod, true), podCgroup(pod, false)
		eventuallyFile(ctx, cgroupFile("cpu", container, "cpu.cfs_quota_us"), "50000")
		Expect(readTrim(cgroupFile("cpu", container, "cpu.cfs_period_us"))).To(Equal("100000"))
		eventuallyFile(ctx, cgroupFile("cpu", container, "cpu.shares"), "256")
		eventuallyFile(ctx, cgroupFile("memory", container, "memory.limit_in_bytes"), strconv.Itoa(256<<20))
		eventuallyFile(ctx, cgroupFile("memory", podDir, "memory.limit_in_bytes"), strconv.Itoa(256<<20))
	})

	It("keeps LS wake-ups fast next to CPU-burning BE pods: the LS p99 run-queue latency with the strategies on is at most half of it with them off", func(ctx SpecContext) {
		n := nodeCPUs(ctx).Size()
		createPod(ctx, podOpts{name: "ls-ticker", scheduler: koordScheduler, image: "ticker", cpu: "100m", memory: "16Mi", nodeName: realNode,
			labels: map[string]string{extension.LabelPodQoS: "LS"}, priority: "koord-prod"})
		waitRunning(ctx, "ls-ticker")
		const window = 20 * time.Second
		quiet := measureRunQueue(ctx, "ls-ticker", window)

		// BE pods kubelet puts in its burstable cgroup (they request plain
		// CPU): each weighs 512 shares against the LS pod's 102.
		for _, name := range []string{"be-burn-a", "be-burn-b"} {
			createPod(ctx, podOpts{name: name, scheduler: koordScheduler, image: "burner", args: []string{"--cores=" + strconv.Itoa(n)},
				cpu: "500m", memory: "16Mi", nodeName: realNode, labels: map[string]string{extension.LabelPodQoS: "BE"}, priority: "koord-batch"})
		}
		waitRunning(ctx, "be-burn-a")
		waitRunning(ctx, "be-burn-b")
		time.Sleep(5 * time.Second)
		off := measureRunQueue(ctx, "ls-ticker", window)

		By("turning on BE CPU suppression (cpuset) and BE CPU priority")
		setSLOConfig(ctx, map[string]string{
			"resource-threshold-config": `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cpuset"}}`,
			"resource-qos-config":       `{"clusterStrategy":{"beClass":{"cpuQOS":{"enable":true}}}}`,
		}, func(spec map[string]any) bool {
			return field(spec, "resourceUsedThresholdWithBE", "enable") == true && field(spec, "resourceQOSStrategy", "beClass", "cpuQOS", "enable") == true
		})
		if dir := cgroupFile("cpu", podCgroup(getPod(ctx, "be-burn-a"), false), "cpu.idle"); dir != "" {
			eventuallyFile(ctx, dir, "1")
		}
		if f := cgroupFile("cpuset", podCgroup(getPod(ctx, "be-burn-a"), true), "cpuset.cpus"); f != "" {
			Eventually(func() (int, error) {
				s, err := readTrim(f)
				if err != nil {
					return 0, err
				}
				c, err := cpuset.Parse(s)
				return c.Size(), err
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeNumerically("<", n), "BE pods confined to fewer CPUs than the node's")
		}
		time.Sleep(5 * time.Second)
		on := measureRunQueue(ctx, "ls-ticker", window)

		By("and, for comparison, BE pods on batch resources in kubelet's besteffort cgroup with the strategies off")
		deletePod(ctx, "be-burn-a")
		deletePod(ctx, "be-burn-b")
		setSLOConfig(ctx, map[string]string{"resource-threshold-config": "", "resource-qos-config": ""}, func(spec map[string]any) bool {
			return field(spec, "resourceUsedThresholdWithBE", "enable") != true
		})
		waitBatchCapacity(ctx, 100)
		for _, name := range []string{"be-batch-a", "be-batch-b"} {
			createObject(ctx, batchPod(name, "burner", []string{"--cores=" + strconv.Itoa(n)},
				map[string]string{extension.BatchCPU: "50"}, map[string]string{extension.BatchCPU: strconv.Itoa(n * 1000)}))
		}
		waitRunning(ctx, "be-batch-a")
		waitRunning(ctx, "be-batch-b")
		time.Sleep(5 * time.Second)
		besteffort := measureRunQueue(ctx, "ls-ticker", window)

		report := fmt.Sprintf("LS pod ls-ticker, %d CPUs, %s windows: no BE: %s; BE (burstable, 2×%d burners) strategies off: %s; strategies on: %s; BE on batch resources (besteffort cgroup), strategies off: %s",
			n, window, quiet, n, off, on, besteffort)
		GinkgoWriter.Println(report)
		AddReportEntry("run-queue latency", report)
		if path := os.Getenv("E2E_QOS_REPORT"); path != "" {
			Expect(os.WriteFile(path, []byte(report+"\n"), 0o644)).To(Succeed())
		}
		Expect(off.waits).To(BeNumerically(">", 100), "too few waits measured with the strategies off")
		Expect(on.waits).To(BeNumerically(">", 100), "too few waits measured with the strategies on")
		Expect(on.p99).To(BeNumerically("<=", off.p99/2), "LS p99 with the strategies on (%s) is not at most half of it with them off (%s)", on, off)
	})

	It("evicts a BE pod whose memory takes the node past memoryEvictThresholdPercent, with an Event, and leaves the LS pod beside it alone", func(ctx SpecContext) {
		needNode()
		createPod(ctx, podOpts{name: "ls-beside", scheduler: koordScheduler, cpu: "50m", memory: "16Mi", nodeName: realNode,
			labels: map[string]string{extension.LabelPodQoS: "LS"}})
		ls := waitRunning(ctx, "ls-beside")
		total, avail := meminfo()
		usedPct := int(math.Ceil(float64(total-avail) * 100 / float64(total)))
		threshold := min(usedPct+4, 95)
		Expect(threshold).To(BeNumerically(">", usedPct), "the node is too full to test eviction")
		setSLOConfig(ctx, map[string]string{
			"resource-threshold-config": fmt.Sprintf(`{"clusterStrategy":{"enable":true,"memoryEvictThresholdPercent":%d}}`, threshold),
		}, func(spec map[string]any) bool {
			v, _ := field(spec, "resourceUsedThresholdWithBE", "memoryEvictThresholdPercent").(float64)
			return int(v) == threshold
		})
		// Twice the headroom to the threshold, so it is surely crossed.
		grow := 2 * (int64(threshold)*total/100 - (total - avail))
		GinkgoWriter.Printf("node memory %d%% used, threshold %d%%: the BE pod allocates %d MiB\n", usedPct, threshold, grow>>20)
		createObject(ctx, batchPod("be-hog", "burner", []string{"--cores=0", "--memory=" + strconv.FormatInt(grow, 10), "--memory-rate=512Mi"}, nil, nil))
		hog := waitRunning(ctx, "be-hog")
		Eventually(func() bool {
			p, err := kube.CoreV1().Pods(testNamespace).Get(ctx, "be-hog", metav1.GetOptions{})
			return apierrors.IsNotFound(err) || (err == nil && (p.DeletionTimestamp != nil || p.UID != hog.UID))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the BE pod was not evicted")
		Eventually(func() string {
			evs, _ := kube.CoreV1().Events(testNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=be-hog,reason=Evicted"})
			var msgs []string
			for _, e := range evs.Items {
				msgs = append(msgs, e.Source.Component+": "+e.Message)
			}
			return strings.Join(msgs, "\n")
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(And(ContainSubstring("koordlet"), ContainSubstring("BEMemoryEvict")))
		after := getPod(ctx, "ls-beside")
		Expect(after.UID).To(Equal(ls.UID))
		Expect(after.DeletionTimestamp).To(BeNil())
		Expect(after.Status.Phase).To(Equal(corev1.PodRunning))
		text, err := koordletMetrics(ctx, realNode)
		Expect(err).NotTo(HaveOccurred())
		Expect(text).To(MatchRegexp(`koordlet_pod_evictions_total\{reason="BEMemoryEvict"\} [1-9]`))
	})

	It("converges to the same cgroup values after a koordlet restart, restores the defaults when the NodeSLO goes, and undoes a strategy turned off", func(ctx SpecContext) {
		needNode()
		createPod(ctx, podOpts{name: "be-idle", scheduler: koordScheduler, cpu: "100m", memory: "16Mi", nodeName: realNode,
			labels: map[string]string{extension.LabelPodQoS: "BE"}, priority: "koord-batch"})
		be := waitRunning(ctx, "be-idle")
		all := nodeCPUs(ctx).String()
		beIdle := cgroupFile("cpu", podCgroup(be, false), "cpu.idle")
		qosIdle := cgroupFile("cpu", "besteffort", "cpu.idle")
		beCPUs := cgroupFile("cpuset", podCgroup(be, true), "cpuset.cpus")
		enabled := map[string]string{
			"resource-threshold-config": `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65}}`,
			"resource-qos-config":       `{"clusterStrategy":{"beClass":{"cpuQOS":{"enable":true}}}}`,
		}
		isOn := func(spec map[string]any) bool {
			return field(spec, "resourceUsedThresholdWithBE", "enable") == true && field(spec, "resourceQOSStrategy", "beClass", "cpuQOS", "enable") == true
		}
		setSLOConfig(ctx, enabled, isOn)
		eventuallyFile(ctx, beIdle, "1")
		eventuallyFile(ctx, qosIdle, "1")
		Eventually(func() string { s, _ := readTrim(beCPUs); return s }).WithContext(ctx).WithTimeout(time.Minute).ShouldNot(Equal(all))
		suppressed, _ := readTrim(beCPUs)

		By("restarting koordlet, with a value changed behind its back meanwhile")
		restartKoordlet(ctx, func() { Expect(os.WriteFile(qosIdle, []byte("0"), 0o644)).To(Succeed()) })
		eventuallyFile(ctx, qosIdle, "1")
		eventuallyFile(ctx, beIdle, "1")
		eventuallyFile(ctx, beCPUs, suppressed)

		By("deleting the NodeSLO while koord-manager is down")
		scaleManager(ctx, 0)
		Expect(koord.SloV1alpha1().NodeSLOs().Delete(ctx, realNode, metav1.DeleteOptions{})).To(Succeed())
		eventuallyFile(ctx, qosIdle, "0")
		eventuallyFile(ctx, beIdle, "0")
		eventuallyFile(ctx, beCPUs, all)
		scaleManager(ctx, -1)
		waitNodeSLO(ctx, isOn)
		eventuallyFile(ctx, beIdle, "1")

		By("turning the strategies off in slo-controller-config")
		setSLOConfig(ctx, map[string]string{"resource-threshold-config": "", "resource-qos-config": ""}, func(spec map[string]any) bool { return !isOn(spec) })
		eventuallyFile(ctx, qosIdle, "0")
		eventuallyFile(ctx, beIdle, "0")
		eventuallyFile(ctx, beCPUs, all)
	})
})

// runQueue is one window's run-queue latency of a pod.
type runQueue struct {
	p99   time.Duration
	waits uint64
}

func (r runQueue) String() string { return fmt.Sprintf("p99 ≤ %s over %d waits", r.p99, r.waits) }

var bucketLine = regexp.MustCompile(`^koordlet_pod_runqueue_latency_seconds_bucket\{(.*)\} (\d+)$`)

// runQueueBuckets reads a pod's cumulative histogram from koordlet's /metrics.
func runQueueBuckets(ctx context.Context, pod string) map[float64]uint64 {
	text, err := koordletMetrics(ctx, realNode)
	Expect(err).NotTo(HaveOccurred())
	out := map[float64]uint64{}
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		m := bucketLine.FindStringSubmatch(s.Text())
		if m == nil || !strings.Contains(m[1], `namespace="`+testNamespace+`"`) || !strings.Contains(m[1], `pod="`+pod+`"`) {
			continue
		}
		le := regexp.MustCompile(`le="([^"]+)"`).FindStringSubmatch(m[1])
		if le == nil || le[1] == "+Inf" {
			continue
		}
		bound, _ := strconv.ParseFloat(le[1], 64)
		n, _ := strconv.ParseUint(m[2], 10, 64)
		out[bound] = n
	}
	return out
}

// measureRunQueue is a pod's p99 run-queue latency over the next window,
// from koordlet's eBPF histogram (the upper bound of the p99's bucket).
func measureRunQueue(ctx context.Context, pod string, window time.Duration) runQueue {
	Eventually(func() int { return len(runQueueBuckets(ctx, pod)) }).WithContext(ctx).WithTimeout(time.Minute).
		Should(BeNumerically(">", 0), "no run-queue latency series for %s", pod)
	before := runQueueBuckets(ctx, pod)
	time.Sleep(window)
	after := runQueueBuckets(ctx, pod)
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	var r runQueue
	total := after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	r.waits = total
	for _, b := range bounds {
		if float64(after[b]-before[b]) >= 0.99*float64(total) {
			r.p99 = time.Duration(b * float64(time.Second))
			break
		}
	}
	return r
}

// meminfo is this node's MemTotal and MemAvailable in bytes.
func meminfo() (total, avail int64) {
	b, err := os.ReadFile("/proc/meminfo")
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = v << 10
		case "MemAvailable:":
			avail = v << 10
		}
	}
	Expect(total).To(BeNumerically(">", 0))
	return total, avail
}

// restartKoordlet deletes the node's koordlet pod, runs meanwhile while none
// runs, and waits for the DaemonSet's new one to be ready.
func restartKoordlet(ctx context.Context, meanwhile func()) {
	pods, err := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=koordlet", FieldSelector: "spec.nodeName=" + realNode})
	Expect(err).NotTo(HaveOccurred())
	Expect(pods.Items).NotTo(BeEmpty())
	old := pods.Items[0]
	zero := int64(0)
	Expect(kube.CoreV1().Pods(koordNS).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})).To(Succeed())
	Eventually(func() bool {
		_, err := kube.CoreV1().Pods(koordNS).Get(ctx, old.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
	meanwhile()
	Eventually(func() bool {
		pods, err := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=koordlet", FieldSelector: "spec.nodeName=" + realNode})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].UID == old.UID {
			return false
		}
		for _, c := range pods.Items[0].Status.ContainerStatuses {
			if !c.Ready {
				return false
			}
		}
		return pods.Items[0].Status.Phase == corev1.PodRunning
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeTrue())
}

// scaleManager scales koord-manager to replicas (-1: back to what the chart
// set, remembered at the first call) and waits for it.
var managerReplicas int32 = -1

func scaleManager(ctx context.Context, replicas int32) {
	d, err := kube.AppsV1().Deployments(koordNS).Get(ctx, "koord-manager", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	if managerReplicas < 0 {
		managerReplicas = *d.Spec.Replicas
		DeferCleanup(func(ctx SpecContext) { scaleManager(ctx, -1) })
	}
	if replicas < 0 {
		replicas = managerReplicas
	}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err = kube.AppsV1().Deployments(koordNS).Patch(ctx, "koord-manager", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		d, err := kube.AppsV1().Deployments(koordNS).Get(ctx, "koord-manager", metav1.GetOptions{})
		if err != nil {
			return false
		}
		pods, _ := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=koord-manager"})
		return d.Status.ReadyReplicas == replicas && (replicas > 0 || len(pods.Items) == 0)
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "koord-manager at %d replicas", replicas)
}
