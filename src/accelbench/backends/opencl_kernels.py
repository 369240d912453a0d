"""OpenCL C sources for the pyopencl backend, and a compile cache per (context, dtype).

Every kernel is written once against a type `T` (float, double, or half where cl_khr_fp16 is
present) and an accumulator type `ACC` (float for half, else T); scalars arrive as `S` (double for
double, else float, so no kernel argument needs half support). Sizes and indices are 64-bit.

The tiled matmul stages TM×TK and TK×TN tiles in local memory and lets each work-item keep a WM×WN
block of C in registers (register blocking): on PoCL the work-group becomes a loop over work-items
between barriers, so the more arithmetic per staged element, the less the loop overhead shows.
Global sizes are padded to whole tiles and the kernel guards every load and store, so any n works.
On CPU devices the kernels work in explicit 32-byte vectors: PoCL does not vectorise across
work-items for kernels with loops, so without them every op runs scalar.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# cl_khr_fp16 / cl_khr_fp64 pragmas and the types each dtype compiles with
_PREAMBLES = {
    "float32": "#define T float\n#define ACC float\n#define S float\n",
    "float64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
               "#define T double\n#define ACC double\n#define S double\n",
    "float16": "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
               "#define T half\n#define ACC float\n#define S float\n",
}

# A work-item handles VW consecutive elements: one aligned vector where all are in range (buffers
# are aligned far beyond 32 bytes), else a scalar tail. VW is 1 on GPUs, 32 bytes' worth on CPUs:
# pointer casts, not vloadN, which PoCL makes a library call (3x slower for a sum).
ELEMENTWISE_SRC = r"""
#define CAT_(x, y) x##y
#define CAT(x, y) CAT_(x, y)
#define BEGIN const size_t i = get_global_id(0) * VW;
#if VW > 1
#define VT CAT(T, VW)
#define VEC(p) (*(__global VT *)(p))
#define CVEC(p) (*(__global const VT *)(p))
#define VECTOR(statement) if (i + VW <= n) { statement; return; }
#else
#define VECTOR(statement)
#endif
#define TAIL for (size_t j = i; j < n && j < i + VW; ++j)

__kernel void copy(const ulong n, __global const T *a, __global T *out)
{ BEGIN VECTOR(VEC(out + i) = CVEC(a + i)) TAIL out[j] = a[j]; }

__kernel void scale(const ulong n, __global const T *a, const S s, __global T *out)
{ BEGIN VECTOR(VEC(out + i) = (T)s * CVEC(a + i)) TAIL out[j] = (T)(s * (S)a[j]); }

__kernel void add(const ulong n, __global const T *a, __global const T *b, __global T *out)
{ BEGIN VECTOR(VEC(out + i) = CVEC(a + i) + CVEC(b + i)) TAIL out[j] = a[j] + b[j]; }

/* STREAM triad: out = a + s * b */
__kernel void triad(const ulong n, __global const T *a, __global const T *b, const S s,
                    __global T *out)
{ BEGIN VECTOR(VEC(out + i) = CVEC(a + i) + (T)s * CVEC(b + i)) TAIL out[j] = (T)((S)a[j] + s * (S)b[j]); }

/* two flops per element read once and written once */
__kernel void square_plus(const ulong n, __global const T *a, __global T *out)
{ BEGIN VECTOR(VEC(out + i) = CVEC(a + i) * CVEC(a + i) + CVEC(a + i)) TAIL out[j] = a[j] * a[j] + a[j]; }
"""

# Stage 1: each group sums its share, then tree-reduces in local memory to one partial; stage 2
# runs the same kernel with one group over the partials. RL (a power of two) is the group size,
# fixed at compile time so the local array has a static size. How a work-item walks the input is
# the device's: GPUs stride by the global size (neighbours read neighbours: coalesced); CPUs
# (CONTIGUOUS) take one contiguous chunk each and sum it VW lanes at a time, since a strided walk
# there touches a new cache line per element and one scalar chain is add-latency bound.
REDUCE_SRC = r"""
#define CAT_(x, y) x##y
#define CAT(x, y) CAT_(x, y)

__kernel __attribute__((reqd_work_group_size(RL, 1, 1)))
void sum(const ulong n, __global const T *a, __global T *partials)
{
    __local ACC scratch[RL];
    const size_t lid = get_local_id(0);
    ACC acc = 0;
#if CONTIGUOUS
    /* chunks a whole number of vectors long, so every vector load is aligned */
    const size_t vectors = (n + VW - 1) / VW;
    const size_t chunk = (vectors + get_global_size(0) - 1) / get_global_size(0) * VW;
    const size_t lo = min((size_t)n, get_global_id(0) * chunk), hi = min((size_t)n, lo + chunk);
    size_t i = lo;
#if VW > 1
    CAT(ACC, VW) lanes = 0;
    for (; i + VW <= hi; i += VW) lanes += *(__global const CAT(T, VW) *)(a + i);
    ACC spilled[VW];
    CAT(vstore, VW)(lanes, 0, spilled);
    for (int v = 0; v < VW; ++v) acc += spilled[v];
#endif
    for (; i < hi; ++i) acc += (ACC)a[i];
#else
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) acc += (ACC)a[i];
#endif
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t half_width = RL / 2; half_width > 0; half_width >>= 1) {
        if (lid < half_width) scratch[lid] += scratch[lid + half_width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partials[get_group_id(0)] = (T)scratch[0];
}
"""

MATMUL_NAIVE_SRC = r"""
/* one work-item per element of C, straight from global memory: the baseline tiling is judged by */
__kernel void matmul_naive(const int M, const int N, const int K,
                           __global const T *A, __global const T *B, __global T *C)
{
    const int col = get_global_id(0), row = get_global_id(1);
    if (row >= M || col >= N) return;
    ACC acc = 0;
    for (int k = 0; k < K; ++k) acc += (ACC)A[(size_t)row * K + k] * (ACC)B[(size_t)k * N + col];
    C[(size_t)row * N + col] = (T)acc;
}
"""

# Work-group (TN/WN, TM/WM). Dimension 0 runs along columns: a work-item owns the V-wide column
# vectors (j*RN + tx)*V, j < WN/V, and the rows i*RM + ty, i < WM. Neighbouring work-items thus
# touch neighbouring addresses: coalesced on GPUs (V = 1), whole aligned vectors on CPUs (V = 8
# floats = one AVX register), where PoCL's loop over work-items does not vectorise by itself.
# Plain `acc += a * b`, not mad(): PoCL's vector mad is a library call, 3x slower than contraction.
MATMUL_TILED_SRC = r"""
#define RN (TN / WN)
#define RM (TM / WM)
#define GROUP (RN * RM)
#define VN (WN / V)
#define CAT_(x, y) x##y
#define CAT(x, y) CAT_(x, y)
#if V == 1
#define TV ACC
#define SPILL(x, p) (*(p) = (x))
#else
#define TV CAT(ACC, V)
#define SPILL(x, p) CAT(vstore, V)(x, 0, p)
#endif

__kernel __attribute__((reqd_work_group_size(RN, RM, 1)))
void matmul_tiled(const int M, const int N, const int K,
                  __global const T *A, __global const T *B, __global T *C)
{
    __local ACC As[TK][TM + 1];   /* k-major, so a work-item's rows are one broadcast each */
    __local TV Bv[TK][TN / V];     /* vector-typed, hence aligned: read without vloadN */
    __local ACC *Bs = (__local ACC *)Bv;
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int lid = ty * RN + tx;
    const int row0 = get_group_id(1) * TM, col0 = get_group_id(0) * TN;
    TV acc[WM][VN];
    for (int i = 0; i < WM; ++i) for (int j = 0; j < VN; ++j) acc[i][j] = (TV)0;

    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int e = lid; e < TM * TK; e += GROUP) {      /* consecutive lid: along a row of A */
            const int m = e / TK, k = e % TK, gr = row0 + m, gk = k0 + k;
            As[k][m] = (gr < M && gk < K) ? (ACC)A[(size_t)gr * K + gk] : (ACC)0;
        }
        for (int e = lid; e < TK * TN; e += GROUP) {      /* consecutive lid: along a row of B */
            const int k = e / TN, n = e % TN, gk = k0 + k, gc = col0 + n;
            Bs[k * TN + n] = (gk < K && gc < N) ? (ACC)B[(size_t)gk * N + gc] : (ACC)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TK; ++k) {
            TV b[VN];
            for (int j = 0; j < VN; ++j) b[j] = Bv[k][j * RN + tx];
            for (int i = 0; i < WM; ++i) {
                const TV a = (TV)(As[k][i * RM + ty]);
                for (int j = 0; j < VN; ++j) acc[i][j] += a * b[j];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < WM; ++i) {
        const int gr = row0 + i * RM + ty;
        if (gr >= M) continue;
        for (int j = 0; j < VN; ++j) {
            const int gc = col0 + (j * RN + tx) * V;
            ACC lanes[V];
            SPILL(acc[i][j], lanes);
            for (int v = 0; v < V; ++v)
                if (gc + v < N) C[(size_t)gr * N + gc + v] = (T)lanes[v];
        }
    }
}
"""

# Counter-based: element i of stream `seed` is a pure function of (seed, i), SplitMix64's finaliser
# over a Weyl sequence keyed by the mixed seed, so no state and nothing generated on the host.
# The top B bits give k in [0, 2^B); k * 2^(1-B) - 1 is exact in T and lies in [-1, 1).
RANDOM_SRC = r"""
inline ulong mix64(ulong z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    return z ^ (z >> 31);
}

__kernel void uniform(const ulong n, const ulong seed, __global T *out)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const ulong bits = mix64(mix64(seed) + ((ulong)i + 1UL) * 0x9E3779B97F4A7C15UL);
    out[i] = (T)((S)(bits >> (64 - RAND_BITS)) * (S)RAND_SCALE - (S)1);
}
"""

# mantissa bits (+1 implicit) each type holds exactly in [-1, 1) at step 2^(1-B)
_RAND_BITS = {"float32": 24, "float64": 53, "float16": 11}

_SOURCES = {
    "elementwise": ELEMENTWISE_SRC,
    "reduce": REDUCE_SRC,
    "matmul_naive": MATMUL_NAIVE_SRC,
    "matmul_tiled": MATMUL_TILED_SRC,
    "random": RANDOM_SRC,
}


@dataclass(frozen=True)
class MatmulTiling:
    """Tile of C per work-group (tile_m × tile_n), k-step, the block each work-item owns
    (work_m rows × work_n columns), and the vector width those columns are computed in."""

    tile_m: int
    tile_n: int
    tile_k: int
    work_m: int
    work_n: int
    vector_width: int = 1

    @property
    def local_size(self) -> tuple[int, int]:
        return (self.tile_n // self.work_n, self.tile_m // self.work_m)

    @property
    def group_items(self) -> int:
        return self.local_size[0] * self.local_size[1]

    def local_memory_bytes(self, acc_itemsize: int) -> int:
        return ((self.tile_m + 1) * self.tile_k + self.tile_k * self.tile_n) * acc_itemsize

    def global_size(self, m: int, n: int) -> tuple[int, int]:
        """Padded up to whole tiles: OpenCL 1.2 demands global sizes divisible by the local size."""
        return (-(-n // self.tile_n) * self.local_size[0], -(-m // self.tile_m) * self.local_size[1])

    def defines(self) -> dict[str, int]:
        return {"TM": self.tile_m, "TN": self.tile_n, "TK": self.tile_k,
                "WM": self.work_m, "WN": self.work_n, "V": self.vector_width}


def _cpu_tilings(acc_itemsize: int) -> tuple[MatmulTiling, ...]:
    # 32-byte (AVX2) column vectors. Measured on PoCL/EPYC by CPU time per call, n=1000 and 2000
    # (interleaved, the host being shared): fp32 is fastest with few work-items per group and big
    # blocks (4 items of 32×32: ~1.6x the 32-item 8×16 layout), fp64 with 64 items of 8×8 (2x its
    # 32×32). 16-wide vectors crashed PoCL's compiler; vloadN and mad() were 3x slower.
    v = max(1, 32 // acc_itemsize)
    best = MatmulTiling(64, 64, 64, 32, 32, v) if acc_itemsize == 4 else MatmulTiling(64, 64, 64, 8, 2 * v, v)
    others = (MatmulTiling(64, 64, 64, 8, 2 * v, v), MatmulTiling(32, 32, 32, 4, v, v),
              MatmulTiling(16, 16, 16, 2, v, v))
    return tuple(dict.fromkeys((best, *others)))  # best first, once


# GPUs: many work-items per group, few registers each, scalar columns for coalescing.
_GPU_TILINGS = (MatmulTiling(64, 64, 16, 4, 4), MatmulTiling(32, 32, 16, 2, 2),
                MatmulTiling(32, 32, 16, 4, 4), MatmulTiling(16, 16, 16, 1, 1), MatmulTiling(8, 8, 8, 1, 1))
# fits any device that can run a kernel at all
_LAST_RESORT = MatmulTiling(1, 1, 1, 1, 1)


def tiling_candidates(is_cpu: bool, max_work_group_size: int, max_work_item_sizes: tuple[int, ...],
                      local_memory_bytes: int, acc_bytes: int) -> list[MatmulTiling]:
    """The tilings, best first, whose group and local arrays fit the device's limits."""
    fitting = []
    for tiling in (*(_cpu_tilings(acc_bytes) if is_cpu else _GPU_TILINGS), _LAST_RESORT):
        nx, ny = tiling.local_size
        if tiling.group_items > max_work_group_size:
            continue
        if len(max_work_item_sizes) >= 2 and (nx > max_work_item_sizes[0] or ny > max_work_item_sizes[1]):
            continue
        if tiling.local_memory_bytes(acc_bytes) > local_memory_bytes:
            continue
        fitting.append(tiling)
    return fitting


def acc_itemsize(dtype: str) -> int:
    """Bytes per element of the accumulator (and local tiles): float for half."""
    return 4 if dtype == "float16" else np.dtype(dtype).itemsize


def vector_lanes(is_cpu: bool, dtype: str) -> int:
    """Elements a work-item handles as one vector: 32 bytes' worth (an AVX register) on CPUs, where
    PoCL does not vectorise across work-items by itself; 1 on GPUs and for half (whose vector sum
    into float lanes would need conversions)."""
    return 1 if dtype == "float16" or not is_cpu else max(1, 32 // np.dtype(dtype).itemsize)


def reduce_defines(is_cpu: bool, dtype: str, group_size: int) -> dict[str, int]:
    """RL, the walk (contiguous chunks on CPUs) and the lanes summed at once."""
    return {"RL": group_size, "CONTIGUOUS": int(is_cpu), "VW": vector_lanes(is_cpu, dtype)}


def reduce_group_count(is_cpu: bool, size: int, group_size: int, compute_units: int) -> int:
    """Stage-1 groups: a few per compute unit on a CPU (long contiguous chunks); on a GPU enough
    to fill it many times over. Never more than there are elements for."""
    wanted = 4 * compute_units if is_cpu else max(group_size, 4 * compute_units)
    return max(1, min(-(-size // group_size), wanted))


def reduce_group_size(max_work_group_size: int) -> int:
    """The largest power of two up to 256 that the device accepts as a work-group."""
    size = 1
    while size * 2 <= min(256, max_work_group_size):
        size *= 2
    return size


class KernelCache:
    """Built programs per (context, dtype, family, defines), and their kernels, built on first use.

    Kernels are cached too: pyopencl makes a new kernel object on every attribute access.
    """

    def __init__(self) -> None:
        # a kernel keeps its program, and the program its context, alive: no id is reused
        self._programs: dict[tuple, Any] = {}
        self._kernels: dict[tuple, Any] = {}

    def kernel(self, context: Any, dtype: str, family: str, name: str,
               defines: dict[str, int] | None = None) -> Any:
        program_key = (context.int_ptr, dtype, family, tuple(sorted((defines or {}).items())))
        cached = self._kernels.get((*program_key, name))
        if cached is None:
            program = self._programs.get(program_key)
            if program is None:
                program = self._programs[program_key] = self._build(context, dtype, family, defines or {})
            cached = self._kernels[(*program_key, name)] = getattr(program, name)
        return cached

    def _build(self, context: Any, dtype: str, family: str, defines: dict[str, int]) -> Any:
        import pyopencl as cl

        if dtype not in _PREAMBLES:
            raise ValueError(f"no OpenCL kernels for dtype {dtype!r}; accepted: {', '.join(_PREAMBLES)}")
        header = _PREAMBLES[dtype]
        if family == "random":
            bits = _RAND_BITS[dtype]
            header += f"#define RAND_BITS {bits}\n#define RAND_SCALE {2.0 ** (1 - bits)!r}\n"
        header += "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items()))
        return cl.Program(context, header + _SOURCES[family]).build()

    def clear(self) -> None:
        self._kernels.clear()
        self._programs.clear()
