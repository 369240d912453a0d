"""OpenCL C for the statistics workloads on the kernel-only pyopencl backend.

Each kernel does a workload's whole timed call in one launch (plus one small reduction). Random
numbers are made in-kernel from a counter-based generator: nothing is drawn on the host and no
draw is written to memory (the bootstrap's resample indices alone are made once, by a kernel, and
kept, so the float64 host reference can use the same ones). Written once against `T` (float or
double).

The generator is Philox-4×32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC 2011), bit for bit Random123's philox4x32_10 (the tests check its known-answer
vectors; cuRAND's Philox4_32_10 is the same design): a draw is a pure function of
(key = seed, counter), so any work-item can make any draw, in any order, and float and double
kernels given the same seed use the same bits (the float one keeps the top 24 of its double's 53).
Reductions are per-group trees in local memory, then one group over the partials. Branches are
selects, or depend only on loop counters every work-item shares, following seed 000's advice to
avoid divergent branching.
"""
from __future__ import annotations


PREAMBLES = {
    # a uniform on [0, 1) from 32-bit words: float keeps the top 24 bits of `hi`, double 53 bits of
    # (hi, lo) -- so a float draw is its double twin truncated, and both kernels see the same stream
    "float32": "#define T float\n#define U01(hi, lo) ((float)((hi) >> 8) * 0x1.0p-24f)\n",
    "float64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#define T double\n"
               "#define U01(hi, lo) ((double)(((ulong)((hi) >> 5) << 26) | ((lo) >> 6)) * 0x1.0p-53)\n",
}

COMMON_SRC = r"""
/* Philox-4x32-10: four random 32-bit words from a 128-bit counter and a 64-bit key. The 32x32-bit
   products are taken as one 64-bit product (hi and lo halves) and the state kept in scalars:
   PoCL runs this 8x faster than with mul_hi() on a uint4, GPUs compile both to mul.hi/mul.lo */
inline uint4 philox(uint c0, uint c1, uint c2, uint c3, uint k0, uint k1)
{
    #pragma unroll
    for (int round = 0; round < 10; ++round) {
        const ulong p0 = (ulong)0xD2511F53u * c0, p1 = (ulong)0xCD9E8D57u * c2;
        const uint n0 = (uint)(p1 >> 32) ^ c1 ^ k0, n2 = (uint)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint)p1;
        c3 = (uint)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return (uint4)(c0, c1, c2, c3);
}

/* draw `index` of stream `stream`: the counter is (index, stream), the key the seed */
inline uint4 draw(const ulong index, const uint stream, const ulong seed)
{
    return philox((uint)index, (uint)(index >> 32), stream, 0u, (uint)seed, (uint)(seed >> 32));
}

/* Box-Muller: two independent standard normals from one draw's two uniforms (1 - u is in (0, 1]) */
inline void normal_pair(const uint4 bits, T *z0, T *z1)
{
    const T radius = sqrt((T)-2 * log((T)1 - U01(bits.x, bits.y)));
    T c;
    const T s = sincos((T)6.283185307179586 * U01(bits.z, bits.w), &c);
    *z0 = radius * c;
    *z1 = radius * s;
}

/* in-place tree sum of scratch[0..RL) (all work-items of the group must call it) */
inline void tree_sum(__local T *scratch, const size_t lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t half_width = RL / 2; half_width > 0; half_width >>= 1) {
        if (lid < half_width) scratch[lid] += scratch[lid + half_width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

"""

REDUCE_SRC = r"""
/* out[c] = scale * sum over rows of in[row * COLS + c]: one group of RL over the partials */
__kernel __attribute__((reqd_work_group_size(RL, 1, 1)))
void reduce_columns(const ulong rows, const T scale, __global const T *in, __global T *out)
{
    __local T scratch[RL];
    const size_t lid = get_local_id(0);
    for (int c = 0; c < COLS; ++c) {
        T acc = 0;
        for (ulong r = lid; r < rows; r += RL) acc += in[r * COLS + c];
        scratch[lid] = acc;
        tree_sum(scratch, lid);
        if (lid == 0) out[c] = scratch[0] * scale;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
"""

MONTECARLO_SRC = r"""
/* per group: [sum of max(S_T - K, 0), sum of its squares] over its share of the n draws */
__kernel __attribute__((reqd_work_group_size(RL, 1, 1)))
void call_payoffs(const ulong n, const ulong seed, const T drift, const T vol, const T spot,
                  const T strike, __global T *partials)
{
    __local T sums[RL], squares[RL];
    const size_t lid = get_local_id(0);
    T s = 0, q = 0;
    for (ulong pair = get_global_id(0); 2 * pair < n; pair += get_global_size(0)) {
        T z0, z1;
        normal_pair(draw(pair, 0u, seed), &z0, &z1);
        const T pay0 = fmax(spot * exp(drift + vol * z0) - strike, (T)0);
        const T pay1 = (2 * pair + 1 < n) ? fmax(spot * exp(drift + vol * z1) - strike, (T)0) : (T)0;
        s += pay0 + pay1;
        q += pay0 * pay0 + pay1 * pay1;
    }
    sums[lid] = s;
    squares[lid] = q;
    tree_sum(sums, lid);
    tree_sum(squares, lid);
    if (lid == 0) {
        partials[2 * get_group_id(0)] = sums[0];
        partials[2 * get_group_id(0) + 1] = squares[0];
    }
}
"""

QUADRATURE_SRC = r"""
/* per group: the weighted sum of exp(-x^2/2) over its share of the intervals + 1 grid points;
   SIMPSON (0/1) picks the rule's weights: trapezoid 1 (ends 1/2), Simpson 4 odd / 2 even (ends 1) */
__kernel __attribute__((reqd_work_group_size(RL, 1, 1)))
void quadrature(const ulong intervals, const T lower, const T h, __global T *partials)
{
    __local T scratch[RL];
    const size_t lid = get_local_id(0);
    const T end_weight = SIMPSON ? (T)1 : (T)0.5;
    T acc = 0;
    for (ulong i = get_global_id(0); i <= intervals; i += get_global_size(0)) {
        const T x = lower + h * (T)i;
        const T inner = SIMPSON ? (T)(2 + 2 * (int)(i & 1UL)) : (T)1;
        const T weight = (i == 0 || i == intervals) ? end_weight : inner;
        acc += weight * exp((T)-0.5 * x * x);
    }
    scratch[lid] = acc;
    tree_sum(scratch, lid);
    if (lid == 0) partials[get_group_id(0)] = scratch[0];
}
"""

KDE_SRC = r"""
/* out[i] = mean_j exp(scale * |x_i - x_j|^2) for n points of D dims: direct differences, the
   points staged TILE at a time in local memory, one work-item per output point */
__kernel __attribute__((reqd_work_group_size(TILE, 1, 1)))
void kernel_means(const int n, const T scale, __global const T *points, __global T *out)
{
    __local T tile[TILE * D];
    const int i = get_global_id(0), lid = get_local_id(0);
    T own[D];
    for (int k = 0; k < D; ++k) own[k] = (i < n) ? points[(size_t)i * D + k] : (T)0;
    T acc = 0;
    for (int first = 0; first < n; first += TILE) {
        for (int e = lid; e < TILE * D; e += TILE)
            tile[e] = (first + e / D < n) ? points[(size_t)first * D + e] : (T)0;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int count = min(TILE, n - first);
        for (int j = 0; j < count; ++j) {
            T distance2 = 0;
            for (int k = 0; k < D; ++k) {
                const T diff = own[k] - tile[j * D + k];
                distance2 += diff * diff;
            }
            acc += exp(scale * distance2);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < n) out[i] = acc / (T)n;
}
"""

MCMC_SRC = r"""
/* one work-item walks one random-walk Metropolis chain on N(0, [[1, rho], [rho, 1]]); the moment
   sums of each batch of kept states go to sums[(batch * chains + chain) * 5 + k]. The branches on
   t are the same for every chain (no divergence); the accept is a select. */
__kernel void metropolis(const uint chains, const uint steps, const uint burn_in, const uint per_batch,
                         const uint batches, const ulong seed, const T step_sd, const T rho,
                         __global T *sums, __global uint *accepted)
{
    const uint chain = get_global_id(0);
    if (chain >= chains) return;
    const T factor = (T)-0.5 / ((T)1 - rho * rho), two_rho = (T)2 * rho;
    T x1 = 0, x2 = 0, log_p = 0, m[5] = {0, 0, 0, 0, 0};
    uint count = 0;
    for (uint t = 0; t < steps; ++t) {
        T z1, z2;
        normal_pair(draw(2UL * t, chain, seed), &z1, &z2);
        const uint4 bits = draw(2UL * t + 1UL, chain, seed);
        const T u = U01(bits.x, bits.y);
        const T y1 = x1 + step_sd * z1, y2 = x2 + step_sd * z2;
        const T log_p_y = (y1 * y1 - two_rho * y1 * y2 + y2 * y2) * factor;
        const int accept = log((T)1 - u) < log_p_y - log_p;
        x1 = accept ? y1 : x1;
        x2 = accept ? y2 : x2;
        log_p = accept ? log_p_y : log_p;
        count += accept;
        const int kept = (int)t - (int)burn_in;
        if (kept >= 0 && kept < (int)(per_batch * batches)) {
            m[0] += x1; m[1] += x2; m[2] += x1 * x1; m[3] += x2 * x2; m[4] += x1 * x2;
            if ((kept + 1) % per_batch == 0) {
                __global T *cell = sums + ((size_t)(kept / per_batch) * chains + chain) * 5;
                for (int k = 0; k < 5; ++k) { cell[k] = m[k]; m[k] = 0; }
            }
        }
    }
    accepted[chain] = count;
}
"""

TTEST_SRC = r"""
/* per group: how many of its replicates the pooled two-sample t-test rejects, for each of CELLS
   effect sizes; replicate r of cell c draws its n pairs (x_k, y_k − effect) from stream c at
   counters r·n + k. One-pass sums: n = 20 values of order 1 cancel nothing that matters. Counts
   are kept in T: exact up to 2^24 replicates per cell in float. */
__kernel __attribute__((reqd_work_group_size(RL, 1, 1)))
void t_tests(const ulong replicates, const uint n, const ulong seed, const T critical,
             __constant T *effects, __global T *partials)
{
    __local T scratch[RL];
    const size_t lid = get_local_id(0);
    for (uint cell = 0; cell < CELLS; ++cell) {
        T rejected = 0;
        for (ulong r = get_global_id(0); r < replicates; r += get_global_size(0)) {
            T sx = 0, sxx = 0, sy = 0, syy = 0;
            for (uint k = 0; k < n; ++k) {
                T x, y;
                normal_pair(draw(r * n + k, cell, seed), &x, &y);
                y += effects[cell];
                sx += x; sxx += x * x; sy += y; syy += y * y;
            }
            const T pooled = (sxx - sx * sx / n + syy - sy * sy / n) / (T)(2 * n - 2);
            const T t = (sy - sx) / (T)n / sqrt(pooled * (T)2 / (T)n);
            rejected += fabs(t) > critical ? (T)1 : (T)0;
        }
        scratch[lid] = rejected;
        tree_sum(scratch, lid);
        if (lid == 0) partials[get_group_id(0) * CELLS + cell] = scratch[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
"""

BOOTSTRAP_SRC = r"""
/* the resample indices, once (not timed): row b, column i is a uniform integer in [0, n) from
   counter b·n + i, by multiply-shift of 32 random bits (bias below n / 2^32) */
__kernel void resample_indices(const uint resamples, const uint n, const ulong seed, __global uint *out)
{
    const size_t cell = get_global_id(0);
    if (cell >= (size_t)resamples * n) return;
    out[cell] = (uint)(((ulong)draw(cell, 0u, seed).x * n) >> 32);
}

/* one work-item per resample: the mean of y (STAT 0) or the least-squares slope of y on x (STAT 2)
   over the n observations its row of indices picks (two passes for the slope, as on the host) */
__kernel void bootstrap(const uint resamples, const uint n, __global const T *x, __global const T *y,
                        __global const uint *indices, __global T *out)
{
    const uint b = get_global_id(0);
    if (b >= resamples) return;
    __global const uint *row = indices + (size_t)b * n;
    T sx = 0, sy = 0;
    for (uint i = 0; i < n; ++i) { sy += y[row[i]]; if (STAT == 2) sx += x[row[i]]; }
    if (STAT == 0) { out[b] = sy / (T)n; return; }
    const T mx = sx / (T)n, my = sy / (T)n;
    T sxy = 0, sxx = 0;
    for (uint i = 0; i < n; ++i) {
        const T dx = x[row[i]] - mx;
        sxy += dx * (y[row[i]] - my);
        sxx += dx * dx;
    }
    out[b] = sxy / sxx;
}
"""

SOURCES = {"reduce": REDUCE_SRC, "montecarlo": MONTECARLO_SRC, "quadrature": QUADRATURE_SRC, "kde": KDE_SRC,
           "ttest": TTEST_SRC, "bootstrap": BOOTSTRAP_SRC, "mcmc": MCMC_SRC}

def kernel_source(dtype: str, family: str, defines: dict[str, int]) -> str:
    """The OpenCL C of one kernel family for `dtype`, with its compile-time constants."""
    header = PREAMBLES[dtype] + "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items()))
    return header + COMMON_SRC + SOURCES[family]
