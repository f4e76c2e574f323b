"""Ray Serve deployments and the raydiag command: the only package that imports Ray."""
