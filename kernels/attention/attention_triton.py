"""Flash attention forward in Triton, from first principles.

O = softmax(Q K^T / sqrt(D) [+ causal mask]) V for q, k, v of shape B x H x S x D.
Never materializes the S x S scores: each program owns BLOCK_M query rows of one head,
keeps them in registers, and walks the keys and values in BLOCK_N blocks:

    s = q @ k_j^T * scale * log2(e)          (fp32, tensor cores for 16-bit inputs)
    m_new = max(m, rowmax(s))                 online softmax (Milakov & Gimelshein):
    p = exp2(s - m_new)                       the running max m, the running sum l and
    alpha = exp2(m - m_new)                   the output accumulator are rescaled by
    l = l * alpha + rowsum(p)                 alpha whenever the max grows
    acc = acc * alpha + p @ v_j               (p rounded to the input dtype, as FA2)

and writes acc / l once. Reads Q, K, V and writes O: 4 B H S D itemsize bytes, plus
K and V once more per extra query block, which L2 absorbs (the grid's fast axis walks
the query blocks of one head, so their K/V blocks are shared in L2).

Causal: key blocks wholly above the diagonal are skipped (half the work), blocks wholly
below it run without a mask, and only the BLOCK_M-wide diagonal band is masked. The
heaviest query blocks (last rows: most keys) are launched first, so the light ones fill
the tail of the grid. Key blocks past S (S not a multiple of BLOCK_N) are masked in a
separate last step, so the main loop carries no masks.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
HEAD_DIMS = (16, 32, 64, 128, 256)


@triton.jit
def _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, start, stop, S, stride_kn, stride_vn,
            offs_m, offs_n, qk_scale,
            BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, BOUNDS: tl.constexpr,
            IEEE: tl.constexpr):
    """Key/value blocks [start, stop): CAUSAL_MASK masks keys after each query row,
    BOUNDS masks (and does not load) keys at or past S."""
    k_ptrs += start * stride_kn
    v_ptrs += start * stride_vn
    for start_n in range(start, stop, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        keys = start_n + offs_n
        if BOUNDS:  # noqa: SIM108 (a constexpr branch: one of them is compiled)
            k = tl.load(k_ptrs, mask=keys[:, None] < S, other=0.0)
        else:
            k = tl.load(k_ptrs)
        if IEEE:  # noqa: SIM108
            s = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        s = s * qk_scale
        if CAUSAL_MASK:
            s = tl.where(offs_m[:, None] >= keys[None, :], s, float("-inf"))
        if BOUNDS:
            s = tl.where(keys[None, :] < S, s, float("-inf"))
        # Every row has a finite m_i after its first block (its first key is always
        # visible), so a fully masked row later gives p = 0 and alpha = 1, never NaN.
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if BOUNDS:  # noqa: SIM108
            v = tl.load(v_ptrs, mask=keys[:, None] < S, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = acc * alpha[:, None]
        if IEEE:
            acc = tl.dot(p.to(v.dtype), v, acc, input_precision="ieee")
        else:
            acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, S, qk_scale,
                           stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                           stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
                           HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, IEEE: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    if CAUSAL:  # noqa: SIM108 (heaviest query blocks first)
        start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = q_ptr + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qs + offs_d[None, :]
    k_ptrs = k_ptr + b * stride_kb + h * stride_kh + offs_n[:, None] * stride_ks + offs_d[None, :]
    v_ptrs = v_ptr + b * stride_vb + h * stride_vh + offs_n[:, None] * stride_vs + offs_d[None, :]
    q = tl.load(q_ptrs, mask=offs_m[:, None] < S, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    if CAUSAL:
        # Below the diagonal band: every key precedes every query row of the block.
        diagonal = start_m * BLOCK_M
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, 0, diagonal, S,
                                stride_ks, stride_vs, offs_m, offs_n, qk_scale,
                                BLOCK_N, False, False, IEEE)
        # The band itself, masked; keys past S are masked too (the last block may overhang).
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, diagonal,
                                diagonal + BLOCK_M, S, stride_ks, stride_vs, offs_m, offs_n,
                                qk_scale, BLOCK_N, True, True, IEEE)
    else:
        full = (S // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, 0, full, S,
                                stride_ks, stride_vs, offs_m, offs_n, qk_scale,
                                BLOCK_N, False, False, IEEE)
        if full < S:
            acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptrs, v_ptrs, full, full + BLOCK_N, S,
                                    stride_ks, stride_vs, offs_m, offs_n, qk_scale,
                                    BLOCK_N, False, True, IEEE)
    out = acc / l_i[:, None]
    o_ptrs = o_ptr + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :]
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < S)


# (BLOCK_M, BLOCK_N, num_warps, num_stages). Chosen by compiling for sm_90 (Triton 3.9,
# D = 128, 16-byte aligned operands, as a launch specializes them) and keeping the tiles
# ptxas fits without spilling: 16-bit ones use wgmma with cp.async-pipelined K/V (128-224
# KB of shared memory, ~210-250 registers); 128 x 64 at 4 warps spills ~1 KB and is left
# out. fp32 (IEEE, no tensor cores) holds its operands in registers: only narrow tiles fit.
TILES_16BIT = ((128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 3), (64, 64, 4, 3))
TILES_FP32 = ((64, 16, 8, 2), (32, 16, 4, 2))


def _configs():
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s)
            for m, n, w, s in (*TILES_16BIT, *TILES_FP32)]


def _prune(configs, named_args, **kwargs):
    ieee = bool(kwargs.get("IEEE", named_args.get("IEEE")))
    tiles = TILES_FP32 if ieee else TILES_16BIT
    return [c for c in configs
            if (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages) in tiles]


_tuned_kernel = triton.autotune(
    configs=_configs(), key=["S", "HEAD_DIM", "CAUSAL", "IEEE"],
    prune_configs_by={"early_config_prune": _prune},
)(flash_attention_kernel)


def flash_attention(q, k, v, mask, out):
    """out = attention(q, k, v), causal when mask == 2 (the family's `mask` axis)."""
    batch, heads, seq, dim = q.shape
    if dim not in HEAD_DIMS:
        raise ValueError(f"flash_attention takes head dims {HEAD_DIMS}, got D={dim}")
    for t in (q, k, v, out):
        if t.stride(-1) != 1:
            raise ValueError("the last (head) dimension must be contiguous")
    causal = mask == 2
    ieee = q.dtype == torch.float32
    args = (q, k, v, out, heads, seq, dim**-0.5 * LOG2E,
            q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), out.stride(2))
    if q.is_cuda:
        def grid(meta):
            return (triton.cdiv(seq, meta["BLOCK_M"]), batch * heads)

        _tuned_kernel[grid](*args, HEAD_DIM=dim, CAUSAL=causal, IEEE=ieee)
    else:
        # The Triton interpreter (no GPU): one small tile, no autotuning.
        block = 16
        flash_attention_kernel[(triton.cdiv(seq, block), batch * heads)](
            *args, HEAD_DIM=dim, CAUSAL=causal, IEEE=ieee, BLOCK_M=block, BLOCK_N=block)
