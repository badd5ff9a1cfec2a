"""A pytest plugin for nbval: a notebook's kernel that dies before its first reply is started
again, twice at most, instead of failing every cell of the notebook.

    pytest book -p nbval_kernels

jupyter_client chooses a kernel's ports by binding free ones and letting them go, and the kernel
binds them again as it starts; in between, another process (the other pytest worker's kernel, a
grader's sandboxed one) can take one, and the kernel exits at once. nbval then reports "Kernel
died before replying to kernel_info" for each cell (jupyter/jupyter_client#154). The book's CI
met it once (2026-12-03, one notebook of fourteen; the same notebook passed when run again).
"""

import logging

import nbval.kernel

#: How many times a notebook's kernel is started before its death fails the notebook.
ATTEMPTS = 3
_start = nbval.kernel.start_new_kernel


def start_new_kernel(*args, **kwargs):
    """nbval's ``start_new_kernel``, tried up to :data:`ATTEMPTS` times while the kernel dies
    before its first reply; any other error is raised at once."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _start(*args, **kwargs)
        except RuntimeError as error:
            if "died before replying" not in str(error) or attempt == ATTEMPTS:
                raise
            logging.getLogger(__name__).warning(
                "a kernel died as it started (attempt %d of %d): starting another", attempt,
                ATTEMPTS)


nbval.kernel.start_new_kernel = start_new_kernel
