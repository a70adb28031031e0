package noderesource

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var batchWrites = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "koord_manager_batch_resource_writes_total",
	Help: "Node status writes of kubernetes.io/batch-cpu and batch-memory.",
})

func init() { ctrlmetrics.Registry.MustRegister(batchWrites) }
