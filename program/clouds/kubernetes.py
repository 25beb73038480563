"""The kubernetes cloud of self-managed clusters: no stack-level settings (each target names its kubeconfig or
context); verify's in-cluster client is program/clouds/kubernetes_client.py."""

from __future__ import annotations

from program.clouds import Cloud

KUBERNETES = Cloud("kubernetes")
