"""Native thread pools reset to one thread in the forked child. STANDARD LIBRARY ONLY (ctypes).

A fork copies only the forking thread. OpenMP (scikit-learn's KMeans, GaussianMixture; torch's
own libgomp) and MKL keep pools whose worker threads no longer exist, so the first parallel region
after the fork waits for them forever. One thread each, as threadpoolctl would set it, and the
child never enters those pools. OpenBLAS built on pthreads is the exception: its own fork handler
shut its pool down before the fork, and it restarts one on the first threaded call, so the child
keeps the kernel's thread count and a BLAS-bound cell runs at the kernel's speed (one thread made
a matrix product up to N times slower on N idle cores). joblib/loky read their CPU count from
the environment (else they start ``lscpu``, which the jail would stop). Joined into the probe's
private module: top-level names carry the ``_jth_`` prefix.
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
#: OpenBLAS's threading model: 0 sequential, 1 pthreads (its pool is fork-safe), 2 OpenMP (not)
_JTH_PARALLEL = ("openblas_get_parallel", "openblas_get_parallel64_", "scipy_openblas_get_parallel",
                 "scipy_openblas_get_parallel64_")  # fmt: skip
_JTH_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LOKY_MAX_CPU_COUNT",
            "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")  # fmt: skip


class _JthObject(_jth_ctypes.Structure):
    """The head of glibc's ``struct dl_phdr_info`` (up to the object's name)."""

    _fields_ = [("addr", _jth_ctypes.c_void_p), ("name", _jth_ctypes.c_char_p)]


_JTH_VISIT = _jth_ctypes.CFUNCTYPE(
    _jth_ctypes.c_int, _jth_ctypes.POINTER(_JthObject), _jth_ctypes.c_size_t, _jth_ctypes.c_void_p
)
_jth_iterate: list = []  # dl_iterate_phdr, looked up once


class _JthPool:
    """A loaded library with a thread pool, its setters and (OpenBLAS) its counters."""

    def __init__(self, path, lib):
        self.path = path
        self.base = path.rsplit("/", 1)[-1]
        names = next((v for k, v in _JTH_SETTERS.items() if k in self.base), ())
        self.setters = [f for f in (getattr(lib, n, None) for n in names) if f is not None]
        self.counters: tuple | None  # (blas_server_avail, blas_cpu_number)
        found = (getattr(lib, n, None) for n in _JTH_PARALLEL)
        self.parallel = next((f for f in found if f is not None), None)  # OpenBLAS's threading model
        try:
            self.counters = (_jth_ctypes.c_int.in_dll(lib, "blas_server_avail"),
                             _jth_ctypes.c_int.in_dll(lib, "blas_cpu_number"))  # fmt: skip
        except ValueError:  # not OpenBLAS, or a build that hides them: the setters do it
            self.counters = None


def _jth_resolve(paths):
    pools = []
    for path in sorted(paths):
        try:
            pools.append(_JthPool(path, _jth_ctypes.CDLL(path, mode=_jth_os.RTLD_NOLOAD | _jth_os.RTLD_LAZY)))
        except OSError:
            continue
    return pools


def _jth_pools():
    """The loaded libraries that keep a thread pool (``_JthPool``).

    In the forked child, where the calling thread is the process's only one, the dynamic loader is
    asked (``dl_iterate_phdr``: once per child, before its cell). Anywhere
    else /proc/self/maps is read instead: the loader calls back into Python while it holds its
    lock, and Python may hand the GIL to another thread between two objects; a thread that then
    waits for that lock while holding the GIL (another ``dl_iterate_phdr`` through ``PyDLL``, an
    extension module's ``dlopen``) deadlocks the process. It did, in a real kernel: two shortened
    runs' helpers set up their forks side by side. The Linux kernel serves the maps with no lock
    of the loader's. Without glibc: the maps too."""
    if not _jth_alone() or _jth_loader() is None:
        with open("/proc/self/maps", "rb") as f:
            return _jth_resolve(_jth_pool_libraries(f.read()))
    names: list[str] = []

    def _visit(info, size, data):
        name = info.contents.name
        if name:
            names.append(name.decode("utf-8", "surrogateescape"))
        return 0

    _jth_loader()(_JTH_VISIT(_visit), None)
    return _jth_resolve(
        n for n in names if ".so" in n and any(k in n.rsplit("/", 1)[-1] for k in _JTH_SETTERS)
    )


def _jth_loader():
    """glibc's ``dl_iterate_phdr`` (looked up once), else None."""
    if not _jth_iterate:
        try:
            _jth_iterate.append(_jth_ctypes.PyDLL(None).dl_iterate_phdr)
        except (OSError, AttributeError):
            _jth_iterate.append(None)
    return _jth_iterate[0]


def _jth_alone():
    """Whether the calling thread is this process's only one (a forked child before its cell)."""
    try:
        return len(_jth_os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


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


def _jth_spare_cpus():
    """CPUs this process may use that the machine's load leaves idle, at least one."""
    try:
        usable = len(_jth_os.sched_getaffinity(0))
        return max(1, int(usable - _jth_os.getloadavg()[0]) + 1)
    except (OSError, AttributeError):
        return 1


def _jth_openblas_idle(pool, spare=None):
    """OpenBLAS whose pool its own fork handler shut down: its thread count left as the kernel's
    (pthreads builds: the pool restarts on the first threaded call, as it would in the kernel),
    at most ``spare`` (the idle CPUs: on a busy machine a spinning pool slows the copy down, a
    Gaussian-process fit 3x on two loaded cores), else set to one in place. Returns "kept" (the
    count may be lowered), "one", or None (not such an OpenBLAS).

    Never its setter: it would restart the pool at once ("lazy re-init after a fork"), and a fresh
    OpenBLAS worker spins on the CPU for about 0.1 s waiting for work: it doubled the CPU time of
    every dry run that had numpy loaded, BLAS or not. Left down, the pool costs only the cells
    that use it (a small product runs on one thread without it)."""
    if pool.counters is None:
        return None
    avail, count = pool.counters
    if avail.value != 0:  # the pool is (believed) up: only the setter can change it safely
        return None
    try:
        pthreads = pool.parallel is not None and pool.parallel() == 1
    except Exception:
        pthreads = False
    if pthreads:
        count.value = max(1, min(count.value, _jth_spare_cpus() if spare is None else spare))
        return "kept" if count.value > 1 else "one"
    count.value = 1
    return "one"


def _jth_single_thread(maps=None):
    """Every loaded pool limited to one thread but a pthreads OpenBLAS (``_jth_openblas_idle``);
    return the libraries set to one thread (for the notes).
    ``maps``: the text of /proc/self/maps, else the loader is asked (``_jth_pools``)."""
    touched = []
    for name in _JTH_ENV:
        _jth_os.environ[name] = "1"
    spare = _jth_spare_cpus()
    for pool in _jth_resolve(_jth_pool_libraries(maps)) if maps is not None else _jth_pools():
        idle = _jth_openblas_idle(pool, spare)
        if idle == "one":
            touched.append(pool.base)
        if idle is not None:
            continue
        for setter in pool.setters:
            setter(1)
            touched.append(pool.base)
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
