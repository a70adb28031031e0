package agent

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	numaInfoSyncs *prometheus.CounterVec
	errors        *prometheus.CounterVec
	cpusetWrites  prometheus.Counter
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
	for _, c := range []prometheus.Collector{m.numaInfoSyncs, m.errors, m.cpusetWrites} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
