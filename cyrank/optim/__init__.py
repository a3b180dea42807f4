"""Shared optimisation machinery: trust-region Newton (tron), L-BFGS / OWL-QN (owlqn), the 1-slack cutting-plane
method, the one result they return (result) and the measure of how far from the optimum an iterate is
(certificate)."""
