#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, from Kubernetes' own
# components, for the e2e suite and for trying Koord without Docker:
#
#   hack/cluster/cluster.sh build    compile etcd, kube-*, kubectl, containerd, kwok into $BIN
#   hack/cluster/cluster.sh up       start etcd, containerd, kube-apiserver, kube-controller-manager,
#                                    kube-scheduler, kube-proxy, kubelet (this machine is the node), kwok
#   hack/cluster/cluster.sh import   import image tarballs (arguments) into containerd
#   hack/cluster/cluster.sh down     stop exactly what `up` started and undo what it changed
#
# Every piece of state lives under $KOORD_CLUSTER_DIR; what the components
# change outside it (sysctls, iptables chains, cgroups, a few fixed paths)
# is recorded by `up` and undone by `down`. Processes are stopped by the PIDs
# `up` recorded, never by name. Needs root.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${KOORD_CLUSTER_OUT:-$ROOT/_output/cluster}
BIN=$OUT/bin
S=${KOORD_CLUSTER_DIR:-$OUT/state}
IMAGES=${KOORD_IMAGES:-$ROOT/_output/images}
KUBE_VERSION=v1.37.2
NODE_NAME=${KOORD_NODE_NAME:-$(hostname | tr '[:upper:]_' '[:lower:]-')}
NODE_IP=${KOORD_NODE_IP:-$(hostname -I | awk '{print $1}')}
KWOK_NODES=${KOORD_KWOK_NODES:-3}
APISERVER_PORT=${KOORD_APISERVER_PORT:-6443}
ETCD_PORT=${KOORD_ETCD_PORT:-12379}
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
POD_CIDR=10.88.0.0/16
BRIDGE=koord0
PAUSE_IMAGE=docker.io/koord/pause:1
# What kubelet, kube-proxy and the CNI plugins change on the host, restored by `down`.
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward
	net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables)
# Fixed paths the components use whatever their configuration says.
FIXED_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd /etc/cni)

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need_root() { [[ $(id -u) == 0 ]] || die "must run as root (kubelet and containerd manage cgroups, mounts and iptables)"; }

# ---------------------------------------------------------------- build

build() {
	mkdir -p "$BIN"
	# Built as these projects build them by default (the Makefile exports
	# CGO_ENABLED=0 for Koord's own binaries; that is not meant for these).
	export CGO_ENABLED=1
	local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
	log "building etcd and the Kubernetes components ($KUBE_VERSION)"
	(cd "$ROOT/hack/cluster/kube" && go build -o "$BIN/" -ldflags "$ld" \
		go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubelet)
	# The etcd server module's root package is its main; go names the binary after the path element before /v3.
	mv -f "$BIN/server" "$BIN/etcd"
	log "building containerd"
	(cd "$ROOT/hack/cluster/containerd" && go build -tags no_btrfs -o "$BIN/" -ldflags "-s -w" \
		github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
		github.com/containerd/containerd/v2/cmd/ctr)
	log "building kwok"
	(cd "$ROOT/hack/cluster/kwok" && go build -o "$BIN/" -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok)
	install_packages
}

# runc, the CNI plugins and iptables come from Debian.
install_packages() {
	local missing=()
	command -v runc >/dev/null || missing+=(runc)
	[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || missing+=(containernetworking-plugins)
	command -v iptables >/dev/null || missing+=(iptables)
	command -v openssl >/dev/null || missing+=(openssl)
	command -v conntrack >/dev/null || missing+=(conntrack)
	if ((${#missing[@]})); then
		log "installing ${missing[*]} from Debian"
		apt-get update -q >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
	fi
}

# ---------------------------------------------------------------- PKI

# cert NAME CN O SANS: a key and a certificate signed by the cluster CA.
cert() {
	local name=$1 cn=$2 o=$3 sans=$4 dir=$S/pki
	openssl genrsa -out "$dir/$name.key" 2048 2>/dev/null
	local subj="/CN=$cn"
	[[ -n $o ]] && subj="/O=$o$subj"
	openssl req -new -key "$dir/$name.key" -subj "$subj" -out "$dir/$name.csr" 2>/dev/null
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		if [[ -n $sans ]]; then
			echo "extendedKeyUsage=serverAuth,clientAuth"
			echo "subjectAltName=$sans"
		else
			echo "extendedKeyUsage=clientAuth"
		fi
	} >"$dir/$name.ext"
	openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
		-days 30 -sha256 -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>/dev/null
	rm -f "$dir/$name.csr" "$dir/$name.ext"
}

# kubeconfig NAME CERT: a kubeconfig that authenticates with pki/CERT.
kubeconfig() {
	local name=$1 crt=$2
	cat >"$S/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: koord
  cluster:
    server: https://$NODE_IP:$APISERVER_PORT
    certificate-authority: $S/pki/ca.crt
users:
- name: $name
  user:
    client-certificate: $S/pki/$crt.crt
    client-key: $S/pki/$crt.key
contexts:
- name: koord
  context: {cluster: koord, user: $name}
current-context: koord
EOF
}

pki() {
	mkdir -p "$S/pki"
	openssl genrsa -out "$S/pki/ca.key" 2048 2>/dev/null
	openssl req -x509 -new -key "$S/pki/ca.key" -subj "/CN=koord-local-ca" -days 30 -out "$S/pki/ca.crt" 2>/dev/null
	cert apiserver kube-apiserver "" "IP:$NODE_IP,IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters ""
	cert admin koord-admin system:masters ""
	cert controller-manager system:kube-controller-manager "" ""
	cert kube-proxy system:kube-proxy "" ""
	cert scheduler system:kube-scheduler "" ""
	cert kubelet "system:node:$NODE_NAME" system:nodes ""
	cert kubelet-serving "$NODE_NAME" "" "IP:$NODE_IP,DNS:$NODE_NAME"
	openssl genrsa -out "$S/pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$S/pki/sa.key" -pubout -out "$S/pki/sa.pub" 2>/dev/null
	kubeconfig admin admin
	kubeconfig controller-manager controller-manager
	kubeconfig kube-proxy kube-proxy
	kubeconfig scheduler scheduler
	kubeconfig kubelet kubelet
}

# ---------------------------------------------------------------- up

# start NAME CMD...: run a component in the background, its log under logs/, its PID recorded.
start() {
	local name=$1
	shift
	setsid "$@" >"$S/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$S/pids/$name"
	log "started $name (pid $!), log $S/logs/$name.log"
}

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
	local what=$1 secs=$2
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	die "$what not ready after ${secs}s (logs in $S/logs)"
}

kubectl() { "$BIN/kubectl" --kubeconfig "$S/admin.kubeconfig" "$@"; }

record_host() {
	mkdir -p "$S/host"
	for k in "${SYSCTLS[@]}"; do
		local v
		if v=$(sysctl -n "$k" 2>/dev/null); then echo "$k=$v"; fi
	done >"$S/host/sysctls"
	: >"$S/host/created-paths"
	for p in "${FIXED_PATHS[@]}"; do
		[[ -e $p ]] || echo "$p" >>"$S/host/created-paths"
	done
	iptables-save >"$S/host/iptables.before" 2>/dev/null || true
	ip6tables-save >"$S/host/ip6tables.before" 2>/dev/null || true
	: >"$S/host/cgroups.before"
	for d in /sys/fs/cgroup/*/ /sys/fs/cgroup/unified/; do
		[[ -d $d ]] || continue
		find "$d" -mindepth 1 -maxdepth 1 -type d >>"$S/host/cgroups.before"
	done
}

write_configs() {
	mkdir -p "$S/containerd" "$S/cni/net.d" "$S/cni/networks" "$S/kubelet"
	cat >"$S/containerd/config.toml" <<EOF
version = 3
root = "$S/containerd/root"
state = "$S/containerd/state"

[grpc]
  address = "$S/containerd/containerd.sock"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"

[plugins."io.containerd.cri.v1.runtime"]
  # This machine lacks CAP_SYS_RESOURCE: without this, every sandbox fails
  # with "failed to update /proc/self/oom_score_adj: Permission denied".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$S/cni/net.d"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
EOF
	cat >"$S/cni/net.d/10-koord.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "koord",
  "plugins": [{
    "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$S/cni/networks",
             "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
EOF
	cat >"$S/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$S/containerd/containerd.sock
cgroupDriver: cgroupfs
# This host's hierarchy is cgroup v1.
failCgroupV1: false
failSwapOn: false
# koordlet, not kubelet, owns cpusets: with "static" kubelet reverts
# external cpuset writes within seconds.
cpuManagerPolicy: none
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $S/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $S/pki/kubelet-serving.crt
tlsPrivateKeyFile: $S/pki/kubelet-serving.key
readOnlyPort: 0
resolvConf: /etc/resolv.conf
# Absolute floors: this node runs a test suite on a developer's or CI's
# disk, where 1 % of a large, well-used disk (Go's build cache) can be
# gigabytes still free; a DiskPressure taint would fail every spec.
evictionHard: {memory.available: 100Mi, nodefs.available: 512Mi, imagefs.available: 512Mi}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
EOF
	cat >"$S/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $S/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
EOF
}

up() {
	need_root
	[[ -x $BIN/kube-scheduler && -x $BIN/kubelet && -x $BIN/containerd && -x $BIN/kwok ]] || build
	install_packages
	if [[ -d $S/pids ]] && compgen -G "$S/pids/*" >/dev/null; then
		die "a cluster is already up in $S (run: $0 down)"
	fi
	rm -rf "$S"
	mkdir -p "$S/logs" "$S/pids"
	record_host
	pki
	write_configs
	export PATH=$BIN:$PATH

	start etcd "$BIN/etcd" --data-dir "$S/etcd" --name koord \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-cluster "koord=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls "" --log-level warn
	start containerd "$BIN/containerd" --config "$S/containerd/config.toml"
	wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
	start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--secure-port "$APISERVER_PORT" --advertise-address "$NODE_IP" \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged \
		--client-ca-file "$S/pki/ca.crt" --tls-cert-file "$S/pki/apiserver.crt" --tls-private-key-file "$S/pki/apiserver.key" \
		--kubelet-client-certificate "$S/pki/apiserver-kubelet-client.crt" --kubelet-client-key "$S/pki/apiserver-kubelet-client.key" \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$S/pki/sa.pub" \
		--service-account-signing-key-file "$S/pki/sa.key" --service-cluster-ip-range "$SERVICE_CIDR"
	wait_for kube-apiserver 60 kubectl get --raw /readyz
	start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$S/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$S/controller-manager.kubeconfig" --authorization-kubeconfig "$S/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
		--service-account-private-key-file "$S/pki/sa.key" --root-ca-file "$S/pki/ca.crt" \
		--cluster-signing-cert-file "$S/pki/ca.crt" --cluster-signing-key-file "$S/pki/ca.key"
	# The default scheduler: pods without schedulerName: koord-scheduler.
	start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$S/scheduler.kubeconfig" \
		--authentication-kubeconfig "$S/scheduler.kubeconfig" --authorization-kubeconfig "$S/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false
	wait_for containerd 30 "$BIN/ctr" --address "$S/containerd/containerd.sock" version
	[[ -f $IMAGES/pause.tar ]] || die "$IMAGES/pause.tar missing (run: make images)"
	import "$IMAGES/pause.tar"
	start kube-proxy "$BIN/kube-proxy" --config "$S/kube-proxy.yaml"
	start kubelet "$BIN/kubelet" --config "$S/kubelet/config.yaml" --kubeconfig "$S/kubelet.kubeconfig" \
		--root-dir "$S/kubelet" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME"
	wait_for "node $NODE_NAME" 120 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
	start kwok "$BIN/kwok" --kubeconfig "$S/admin.kubeconfig" --config "$ROOT/hack/cluster/kwok-stages.yaml" \
		--manage-nodes-with-label-selector type=kwok --node-lease-duration-seconds 40 --cidr 10.89.0.0/16 \
		--node-ip 10.89.255.254 --server-address 127.0.0.1:10247
	for ((n = 0; n < KWOK_NODES; n++)); do
		kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$n
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$n, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
  annotations: {kwok.x-k8s.io/node: fake}
spec:
  # Real workloads (DaemonSets included) stay on the real node.
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  allocatable: {cpu: "4", memory: 32Gi, pods: "110"}
  capacity: {cpu: "4", memory: 32Gi, pods: "110"}
EOF
	done
	if ((KWOK_NODES)); then
		wait_for "kwok nodes" 60 kubectl wait --for=condition=Ready node -l type=kwok --timeout=1s
	fi
	wait_for "default ServiceAccount" 60 kubectl get serviceaccount default -n default
	cp "$S/admin.kubeconfig" "$OUT/kubeconfig"
	log "cluster up: export KUBECONFIG=$OUT/kubeconfig  (node $NODE_NAME at $NODE_IP, $KWOK_NODES kwok nodes)"
}

import() {
	export PATH=$BIN:$PATH
	for t in "$@"; do
		local out
		# ctr warns on every call that cgroup v1 is deprecated; show its output only when it fails.
		if ! out=$("$BIN/ctr" --address "$S/containerd/containerd.sock" -n k8s.io images import "$t" 2>&1); then
			printf '%s\n' "$out" >&2
			die "importing $t failed"
		fi
		log "imported $(basename "$t")"
	done
}

# ---------------------------------------------------------------- down

stop_pid() {
	local name=$1 f=$S/pids/$1 pid
	[[ -f $f ]] || return 0
	pid=$(cat "$f")
	# The PID file may outlive the process: only signal it if it is still the program we started.
	if [[ -e /proc/$pid ]] && [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$BIN/"* ]]; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 40; i++)); do
			[[ -e /proc/$pid ]] || break
			sleep 0.25
		done
		[[ -e /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
		log "stopped $name (pid $pid)"
	fi
	rm -f "$f"
}

# Containers outlive kubelet and containerd (their shims are separate processes): stop them through the runtime first.
remove_containers() {
	local sock=$S/containerd/containerd.sock
	[[ -S $sock ]] || return 0
	local ctr=("$BIN/ctr" --address "$sock" -n k8s.io)
	local ids
	ids=$("${ctr[@]}" tasks ls -q 2>/dev/null || true)
	for id in $ids; do "${ctr[@]}" tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
	for id in $ids; do
		for ((i = 0; i < 20; i++)); do
			"${ctr[@]}" tasks delete "$id" >/dev/null 2>&1 && break
			sleep 0.25
		done
	done
	for id in $("${ctr[@]}" containers ls -q 2>/dev/null || true); do
		"${ctr[@]}" containers delete "$id" >/dev/null 2>&1 || true
	done
}

# Shims whose containers are gone exit on their own; any left were started by our containerd (their parent was it, or init after it).
stop_shims() {
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/exe" 2>/dev/null) == "$BIN/containerd-shim-runc-v2" ]] || continue
		kill -KILL "${p#/proc/}" 2>/dev/null || true
	done
}

unmount_state() {
	# Deepest first, so nested mounts come off before their parents.
	awk '{print $2}' /proc/self/mounts | sed 's/\\040/ /g' | grep -E "^($S|/run/containerd|/var/lib/kubelet)(/|$)" | sort -r |
		while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}

remove_cgroups() {
	[[ -f $S/host/cgroups.before ]] || return 0
	for d in /sys/fs/cgroup/*/ /sys/fs/cgroup/unified/; do
		[[ -d $d ]] || continue
		find "$d" -mindepth 1 -maxdepth 1 -type d | while read -r top; do
			grep -qxF "$top" "$S/host/cgroups.before" && continue
			# cgroup directories are removed with rmdir, children first.
			find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		done
	done
}

# iptables chains that exist now but did not before `up`: remove the rules that jump to them, then the chains.
remove_chains() {
	local save=$1 restore_before=$2 cmd=$3
	[[ -f $restore_before ]] || return 0
	command -v "$save" >/dev/null || return 0
	local table now
	now=$("$save" 2>/dev/null) || return 0
	for table in $(grep '^\*' <<<"$now" | tr -d '*'); do
		local before_chains now_chains new
		before_chains=$(awk -v t="*$table" '$0==t{f=1;next} /^\*/{f=0} f&&/^:/{print substr($1,2)}' "$restore_before")
		now_chains=$(awk -v t="*$table" '$0==t{f=1;next} /^\*/{f=0} f&&/^:/{print substr($1,2)}' <<<"$now")
		new=$(comm -13 <(sort <<<"$before_chains") <(sort <<<"$now_chains"))
		[[ -n $new ]] || continue
		# Rules in any chain that jump to a new chain.
		awk -v t="*$table" '$0==t{f=1;next} /^\*/{f=0} f&&/^-A /' <<<"$now" | while read -r rule; do
			local target
			target=$(grep -oE -- '-j [^ ]+' <<<"$rule" | awk '{print $2}')
			if grep -qxF -- "$target" <<<"$new"; then
				# shellcheck disable=SC2086
				eval "$cmd -t $table -D ${rule#-A }" 2>/dev/null || true
			fi
		done
		for c in $new; do "$cmd" -t "$table" -F "$c" 2>/dev/null || true; done
		for c in $new; do "$cmd" -t "$table" -X "$c" 2>/dev/null || true; done
	done
}

down() {
	need_root
	[[ -d $S ]] || {
		log "nothing to do: $S does not exist"
		return 0
	}
	export PATH=$BIN:$PATH
	stop_pid kwok
	stop_pid kubelet
	remove_containers
	stop_pid kube-proxy
	stop_pid containerd
	stop_shims
	stop_pid kube-scheduler
	stop_pid kube-controller-manager
	stop_pid kube-apiserver
	stop_pid etcd
	[[ -x $BIN/kube-proxy && -f $S/kube-proxy.yaml ]] && "$BIN/kube-proxy" --cleanup --config "$S/kube-proxy.yaml" >/dev/null 2>&1 || true
	unmount_state
	remove_cgroups
	remove_chains iptables-save "$S/host/iptables.before" iptables
	remove_chains ip6tables-save "$S/host/ip6tables.before" ip6tables
	ip link delete "$BRIDGE" 2>/dev/null || true
	if [[ -f $S/host/sysctls ]]; then
		while IFS== read -r k v; do sysctl -q -w "$k=$v" >/dev/null 2>&1 || true; done <"$S/host/sysctls"
	fi
	if [[ -f $S/host/created-paths ]]; then
		while read -r p; do rm -rf "$p"; done <"$S/host/created-paths"
	fi
	rm -rf "$S" "$OUT/kubeconfig"
	log "cluster down"
}

case ${1:-} in
build) build ;;
up) up ;;
down) down ;;
import)
	shift
	import "$@"
	;;
kubeconfig) echo "$OUT/kubeconfig" ;;
*)
	echo "usage: $0 build|up|down|import TARBALL...|kubeconfig" >&2
	exit 2
	;;
esac
