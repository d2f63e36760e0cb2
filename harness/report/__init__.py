"""The verdict and the certificate: per-invariant results gathered from the test reports."""
