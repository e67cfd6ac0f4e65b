"""Native thread pools reset to one thread in the forked child. STANDARD LIBRARY ONLY (ctypes).

A fork copies only the forking thread. OpenMP (scikit-learn's KMeans, GaussianMixture; torch's
own libgomp), OpenBLAS and MKL keep pools whose worker threads no longer exist, so the first
parallel region after the fork waits for them forever. One thread each, as threadpoolctl would set
it, and the child never enters a pool. joblib/loky read their CPU count from the environment (else
they start ``lscpu``, which the jail would stop). Joined into the probe's private module:
top-level names carry the ``_jth_`` prefix.
"""

import ctypes as _jth_ctypes
import os as _jth_os
import sys as _jth_sys

_JTH_SETTERS = {
    "libgomp": ("omp_set_num_threads",),
    "libiomp": ("omp_set_num_threads",),
    "libomp": ("omp_set_num_threads",),
    "openblas": (
        "openblas_set_num_threads",
        "openblas_set_num_threads64_",
        "scipy_openblas_set_num_threads",
        "scipy_openblas_set_num_threads64_",
    ),
    "libmkl_rt": ("MKL_Set_Num_Threads",),
    "libblis": ("bli_thread_set_num_threads",),
}
_JTH_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LOKY_MAX_CPU_COUNT",
            "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")  # fmt: skip


def _jth_pool_libraries(maps):
    """Paths of the loaded libraries that keep a thread pool, from /proc/self/maps (scanned with
    ``bytes.find``: the child runs niced on a copy-on-write heap, so less Python is faster)."""
    paths = set()
    for key in _JTH_SETTERS:
        at = maps.find(key.encode())
        while at >= 0:
            start = maps.rfind(b" ", 0, at) + 1
            end = maps.find(b"\n", at)
            path = maps[start : end if end >= 0 else len(maps)]
            if b".so" in path:
                paths.add(path.decode("utf-8", "surrogateescape"))
            at = maps.find(key.encode(), end) if end >= 0 else -1
    return paths


def _jth_single_thread(maps):
    """Every loaded pool limited to one thread; return the libraries touched (for the notes)."""
    touched = []
    for name in _JTH_ENV:
        _jth_os.environ[name] = "1"
    for path in sorted(_jth_pool_libraries(maps)):
        base = path.rsplit("/", 1)[-1]
        names = next((v for k, v in _JTH_SETTERS.items() if k in base), None)
        if names is None:
            continue
        try:
            lib = _jth_ctypes.CDLL(path, mode=_jth_os.RTLD_NOLOAD | _jth_os.RTLD_LAZY)
        except OSError:
            continue
        for symbol in names:
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter(1)
                touched.append(base)
    torch = _jth_sys.modules.get("torch")
    if torch is not None:
        try:
            torch.set_num_threads(1)
            torch.set_num_interop_threads(1)
        except Exception:
            pass  # interop threads already started: only the intra-op pool matters here
    context = _jth_sys.modules.get("joblib.externals.loky.backend.context")
    if context is not None and getattr(context, "physical_cores_cache", None) is None:
        setattr(context, "physical_cores_cache", 1)  # noqa: B010 - loky's cache, not a declared name
    return touched
