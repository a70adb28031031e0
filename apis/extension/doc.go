// Package extension is the one place for Koordinator-compatible labels,
// annotations and the typed values behind them: QoS classes, priority bands,
// CPU bind and NUMA policies, the scheduler's resource-status, reservation
// affinity, per-node usage thresholds and the koordlet numa-info ConfigMap.
//
// Every parser of outside input here returns an error naming the key it read
// and never panics; each has a fuzz target beside it.
package extension
