package runqlat

// Regenerate with `make generate-bpf` (needs clang and libbpf headers, which
// it installs from Debian's packages); the outputs are committed, so
// building koordlet needs neither.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel runqlat runqlat.c -- -I/usr/include -I/usr/include/x86_64-linux-gnu
