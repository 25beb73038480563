"""The end-to-end tier's harness: the toolchain script, the loopback control plane, stand-in plugins."""
