"""Shared optimisation machinery: the 1-slack cutting-plane method and trust-region Newton."""
