"""What raydiag sees of a Kubernetes cluster: read-only tools under HolmesGPT's names, two backends
(a live cluster through ``kubectl``, or recorded calls) and deterministic analyzers that turn their
output into findings. Plain Python: no Ray, no harness (docs/kubernetes.md)."""
