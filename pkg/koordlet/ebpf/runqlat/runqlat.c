//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Run-queue latency per cgroup: the time from a task becoming runnable
// (woken, created, or preempted while runnable) to it running on a CPU,
// as a log2 histogram per cpu-controller cgroup.
//
// The kernel types below are the few fields this program reads, declared
// with preserve_access_index so that libbpf-style CO-RE relocations fix
// their offsets against the running kernel's BTF.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define MAX_SLOTS 27 /* 2^26 µs ≈ 67 s; the last slot holds everything longer */
#define TASK_RUNNING 0

struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

struct css_set {
	struct cgroup_subsys_state *subsys[1];
} __attribute__((preserve_access_index));

struct task_struct {
	__s32 pid;
	unsigned int __state;
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

enum cgroup_subsys_id {
	cpu_cgrp_id = 1,
};

struct hist {
	__u64 slots[MAX_SLOTS];
};

// When each runnable task became runnable, by pid.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

// Histogram of run-queue latency (µs, log2 slots) per cgroup id.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct hist);
} hists SEC(".maps");

static __always_inline int enqueued(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, pid);
	__u64 now;

	if (pid == 0)
		return 0;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&start, &pid, &now, BPF_ANY);
	return 0;
}

// cpu_cgroup_id is the id (the cgroupfs inode number) of the task's cgroup
// in the cpu controller's hierarchy: the v1 cpu hierarchy where there is
// one, else the v2 hierarchy. bpf_get_current_cgroup_id would give the v2
// cgroup only, which on a v1 host is not the pod's.
static __always_inline __u64 cpu_cgroup_id(struct task_struct *p)
{
	struct css_set *cset = BPF_CORE_READ(p, cgroups);
	struct cgroup_subsys_state *css = 0;
	int idx = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
	__u64 off = bpf_core_field_offset(struct css_set, subsys);

	if (!cset)
		return 0;
	bpf_probe_read_kernel(&css, sizeof(css), (void *)cset + off + idx * sizeof(void *));
	if (!css)
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 slot = 0;

	while (v > 1 && slot < MAX_SLOTS - 1) {
		v >>= 1;
		slot++;
	}
	return slot;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	return enqueued(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	return enqueued(p);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 pid;
	__u64 *ts, delta_us, cgid;
	struct hist *h, zero = {};
	__u32 slot;

	// A task preempted while runnable waits again from now.
	if (BPF_CORE_READ(prev, __state) == TASK_RUNNING)
		enqueued(prev);

	pid = BPF_CORE_READ(next, pid);
	ts = bpf_map_lookup_elem(&start, &pid);
	if (!ts)
		return 0;
	delta_us = (bpf_ktime_get_ns() - *ts) / 1000;
	bpf_map_delete_elem(&start, &pid);

	cgid = cpu_cgroup_id(next);
	if (!cgid)
		return 0;
	h = bpf_map_lookup_elem(&hists, &cgid);
	if (!h) {
		bpf_map_update_elem(&hists, &cgid, &zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &cgid);
		if (!h)
			return 0;
	}
	slot = log2_slot(delta_us);
	if (slot < MAX_SLOTS)
		__sync_fetch_and_add(&h->slots[slot], 1);
	return 0;
}
