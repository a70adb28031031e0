package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/pkg/koordlet/usage"
)

type metrics struct {
	numaInfoSyncs     *prometheus.CounterVec
	errors            *prometheus.CounterVec
	cpusetWrites      prometheus.Counter
	nodeMetricReports prometheus.Counter
	ebpfEnabled       prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		numaInfoSyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "koordlet_numa_info_syncs_total",
			Help: "Topology syncs of the numa-info ConfigMap, by result (created, updated, unchanged).",
		}, []string{"result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "koordlet_errors_total",
			Help: "Failures koordlet retried, by cause (node, sysfs, kubelet, topology, publish, annotation, cgroup).",
		}, []string{"cause"}),
		cpusetWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "koordlet_cpuset_writes_total",
			Help: "cpuset.cpus files koordlet changed (it writes only what differs).",
		}),
	}
	m.nodeMetricReports = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "koordlet_nodemetric_reports_total",
		Help: "NodeMetric status updates written.",
	})
	m.ebpfEnabled = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "koordlet_ebpf_enabled",
		Help: "1 when the eBPF run-queue latency probe is loaded, 0 when it could not load (or is turned off).",
	})
	for _, c := range []prometheus.Collector{m.numaInfoSyncs, m.errors, m.cpusetWrites, m.nodeMetricReports, m.ebpfEnabled} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

var (
	containerCPUDesc = prometheus.NewDesc("koordlet_container_cpu_usage_cores",
		"CPU the container used between its last two samples, in cores.", []string{"namespace", "pod", "container"}, nil)
	containerMemDesc = prometheus.NewDesc("koordlet_container_memory_working_set_bytes",
		"The container's memory usage less inactive file pages, at its last sample.", []string{"namespace", "pod", "container"}, nil)
)

// containerUsage exports each container's latest sample.
type containerUsage struct{ a *Agent }

func (c containerUsage) Describe(ch chan<- *prometheus.Desc) {
	ch <- containerCPUDesc
	ch <- containerMemDesc
}

func (c containerUsage) Collect(ch chan<- prometheus.Metric) {
	names := map[types.UID][2]string{}
	if pods, err := c.a.pods.List(labels.Everything()); err == nil {
		for _, p := range pods {
			names[p.UID] = [2]string{p.Namespace, p.Name}
		}
	}
	c.a.collector.Containers(func(uid types.UID, container string, u usage.ContainerUsage) {
		n, ok := names[uid]
		if !ok {
			return
		}
		if u.CPU >= 0 {
			ch <- prometheus.MustNewConstMetric(containerCPUDesc, prometheus.GaugeValue, u.CPU, n[0], n[1], container)
		}
		ch <- prometheus.MustNewConstMetric(containerMemDesc, prometheus.GaugeValue, u.Memory, n[0], n[1], container)
	})
}
