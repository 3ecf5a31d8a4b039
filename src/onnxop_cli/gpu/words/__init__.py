"""The renderer's whole-word schedule (``schedule``: the schedule as data, the
shared entry point and loops) and the kernels rendered on it, one module an
operator: ``select`` (Where), ``one_hot`` (OneHot)."""
