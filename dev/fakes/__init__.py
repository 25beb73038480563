"""Loopback fakes of the cloud APIs the dynamic providers call."""
