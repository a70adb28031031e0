package agent

import "github.com/prometheus/client_golang/prometheus"

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
