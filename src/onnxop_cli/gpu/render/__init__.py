"""The renderer: every generated kernel goes through one frame (``frame``) on
a schedule that is data (``schedule``), one module a kernel: ``elementwise``
(per element), ``select`` (Where) and ``one_hot`` (OneHot) on whole words,
``copy`` (the flat copy) on runs."""
