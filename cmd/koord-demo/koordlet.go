package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/compat"
	"github.com/koord-project/koord/pkg/koordlet/agent"
	"github.com/koord-project/koord/pkg/slo/config"
)

// koordletScene runs a koordlet for node-b on a fixture of its machine
// (1 socket × 2 NUMA nodes × 8 cores × 2 threads, six CPUs busy) and of
// kubelet's cgroups for the pods placed there, with the co-location strategies
// turned on in slo-controller-config, and shows what it wrote.
func koordletScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	const node, busy = "node-b", 6.0
	dir, err := os.MkdirTemp("", "koord-demo-node-b-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sysfs, procfs, err := topologytest.WriteSysfs(dir, 1, 2, 8, 2, 64<<30)
	if err != nil {
		return err
	}
	root := filepath.Join(dir, "cgroup")
	for _, d := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		if err := topologytest.WriteCgroup(root, false, d, "0-31"); err != nil {
			return err
		}
	}
	// What kubelet would do for the pods placed on node-b: run them.
	pods, err := cp.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: "containerd://" + p.Name}}
		if _, err := cp.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			return err
		}
		qos := map[corev1.PodQOSClass]string{corev1.PodQOSGuaranteed: "kubepods", corev1.PodQOSBurstable: "kubepods/burstable", corev1.PodQOSBestEffort: "kubepods/besteffort"}
		podDir := filepath.Join(qos[v1qos.GetPodQOS(p)], "pod"+string(p.UID))
		for _, d := range []string{podDir, filepath.Join(podDir, p.Name)} {
			if err := topologytest.WriteCgroup(root, false, d, "0-31"); err != nil {
				return err
			}
		}
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := topologytest.SimulateLoad(loadCtx, procfs, 32, func() float64 { return busy })
	defer func() { stopLoad(); <-loaded }()

	// The operator's part: Koordinator's slo-controller-config keys.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: config.ConfigMapName}, Data: map[string]string{
		config.ResourceThresholdKey: `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cpuset"}}`,
		config.ResourceQOSKey:       `{"clusterStrategy":{"beClass":{"cpuQOS":{"enable":true},"blkioQOS":{"enable":true}}}}`,
		// Koordinator keys Koord keeps but does not act on, and a typo.
		"host-application-config": `{"applications":[{"name":"nginx","qos":"LS"}]}`,
		config.CPUBurstKey:        `{"clusterStrategy":{"policy":"none","cpuBurstPrecent":1000}}`,
	}}
	if _, err := cp.Client.CoreV1().ConfigMaps(managerNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	a, err := agent.New(cp.Client, cp.Koord, agent.Options{NodeName: node, SysfsRoot: sysfs, ProcfsRoot: procfs, CgroupRoot: root,
		KubeletRootDir: dir, ReconcileInterval: 100 * time.Millisecond, CollectInterval: 200 * time.Millisecond}, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	defer func() { stop(); <-done }()

	read := func(path string) string {
		b, _ := os.ReadFile(filepath.Join(root, path))
		return strings.TrimSpace(string(b))
	}
	spark, err := cp.Client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "spark-be", metav1.GetOptions{})
	if err != nil {
		return err
	}
	sparkDir := "kubepods/besteffort/pod" + string(spark.UID)
	var be cpuset.CPUSet
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		be, _ = cpuset.Parse(read("cpuset/kubepods/besteffort/cpuset.cpus"))
		return be.Size() == 14 && read("cpu/kubepods/besteffort/cpu.idle") == "1" && read("cpu/"+sparkDir+"/cpu.shares") == "4096", nil
	})
	if err != nil {
		return fmt.Errorf("koordlet did not enforce the NodeSLO on node-b: besteffort cpuset %q", be)
	}
	fmt.Printf("\nkoordlet on node-b, on a fixture of its machine (32 CPUs, %.0f busy) and of kubelet's cgroups, enforcing the NodeSLO\n", busy)
	fmt.Println("koord-manager made from slo-controller-config (BE suppression at 65 %, cpuset policy; BE CPU priority):")
	fmt.Printf("  besteffort cgroup   cpuset.cpus %s: 14 CPUs (32 × 65 %% − %.0f busy = 14.8, rounded down), none of web-lsr's or db-lse's; cpu.idle 1\n", be, busy)
	limit := read("memory/" + sparkDir + "/memory.limit_in_bytes")
	fmt.Printf("  default/spark-be    batch-cpu 4000 → cpu.shares %s, cpu.cfs_quota_us %s per 100000 µs; batch-memory 8Gi → memory.limit_in_bytes %s\n",
		read("cpu/"+sparkDir+"/cpu.shares"), read("cpu/"+sparkDir+"/cpu.cfs_quota_us"), bytesText(limit))
	return showReports(ctx, cp)
}

// showReports prints what koord-manager said about the Koordinator fields
// of slo-controller-config it does not act on, and the typo: the rest of the
// ConfigMap took effect all the same.
func showReports(ctx context.Context, cp *controlplane.ControlPlane) error {
	var lines []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cp.Client.CoreV1().Events(managerNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		lines = lines[:0]
		for _, e := range evs.Items {
			if e.Reason == compat.ReasonNotActedOn || e.Reason == compat.ReasonUnknownField {
				lines = append(lines, fmt.Sprintf("  %-16s %s", e.Reason, e.Message))
			}
		}
		return len(lines) >= 3, nil
	})
	if err != nil {
		return fmt.Errorf("koord-manager did not report the fields it does not act on: %v", lines)
	}
	slices.Sort(lines)
	fmt.Println("koord-manager kept Koordinator's fields it does not act on yet, and the typo, and said so (Warning events):")
	for _, l := range lines {
		fmt.Println(l)
	}
	return nil
}

func bytesText(s string) string {
	var v int64
	if _, err := fmt.Sscan(s, &v); err != nil || v%(1<<30) != 0 {
		return s
	}
	return fmt.Sprintf("%dGi", v>>30)
}
