"""CVB0's loops over a word's topics, written as explicit vectors of 8 float64 lanes.

numba leaves vectorising to LLVM's loop vectoriser (its SLP vectoriser is off). That cannot sum
in vector lanes without reassociating, so the normaliser of eq. 5 was summed in scalar partial
sums, reloading every g_k. Each loop over K also ran as an unrolled vector body, a narrower
epilogue and a scalar remainder (K=50: 32 + 16 + 2). The word step is a chain: the update of
word p feeds the g of word p+1, then its sum and its step. Short loops with long remainders were
most of the time at K=50.

blend_weigh emits the loops directly, as blocks of 8 topics with the last block masked. One pass
over the topics updates N^Theta for one word and weighs the next word's row, summing as it goes
(sum_blocks). The order of every sum is fixed, so results are deterministic. They are the same
bits on any CPU: an AVX2 machine splits each 8-lane operation into two 4-lane ones.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

LANES = 8
_F64 = ir.DoubleType()
_VEC = ir.VectorType(_F64, LANES)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


class _Block:
    """Vector loads and stores of the LANES float64 at index k of a buffer; masked when the block
    runs past the end (masked-off lanes load 0 and are not stored)."""

    def __init__(self, builder, k, mask=None):
        self.builder, self.k, self.mask = builder, k, mask

    def _address(self, data):
        return self.builder.bitcast(self.builder.gep(data, [self.k]), _VEC.as_pointer())

    def load(self, data):
        if self.mask is None:
            return self.builder.load(self._address(data), align=8)
        masked_load = cgutils.get_or_insert_function(
            self.builder.module, ir.FunctionType(_VEC, [_VEC.as_pointer(), _I32, self.mask.type, _VEC]),
            "llvm.masked.load.v8f64.p0v8f64")
        return self.builder.call(masked_load, [self._address(data), _I32(8), self.mask, ir.Constant(_VEC, None)])

    def store(self, value, data):
        if self.mask is None:
            self.builder.store(value, self._address(data), align=8)
            return
        masked_store = cgutils.get_or_insert_function(
            self.builder.module, ir.FunctionType(ir.VoidType(), [_VEC, _VEC.as_pointer(), _I32, self.mask.type]),
            "llvm.masked.store.v8f64.p0v8f64")
        self.builder.call(masked_store, [value, self._address(data), _I32(8), self.mask])


def _splat(builder, x):
    """A vector of LANES copies of x."""
    one = builder.insert_element(ir.Constant(ir.VectorType(x.type, LANES), None), x, _I32(0))
    return builder.shuffle_vector(one, ir.Constant(one.type, None), ir.Constant(ir.VectorType(_I32, LANES), [0] * LANES))


def _last_block(builder, K, K8):
    """The masked block [K8, K8 + LANES) for K - K8 elements left (0 < K - K8 < LANES)."""
    lanes = ir.Constant(ir.VectorType(_I64, LANES), list(range(LANES)))
    left = _splat(builder, builder.sext(builder.sub(K, K8), _I64) if K.type != _I64 else builder.sub(K, K8))
    return _Block(builder, K8, builder.icmp_signed("<", lanes, left))


def sum_blocks(builder, K, body):
    """sum over the blocks of [0, K) of body(block) (a vector; 0 in masked-off lanes), in this order:
    blocks 0, 2, 4, ... summed in one vector and blocks 1, 3, 5, ... in another (the last block,
    masked, in whichever its index gives), the two added, then the lanes as
    ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). tests/reference.py:lane_sum is the same."""
    zero = ir.Constant(_VEC, None)
    even, odd = cgutils.alloca_once_value(builder, zero), cgutils.alloca_once_value(builder, zero)

    def add(acc, value):
        builder.store(builder.fadd(builder.load(acc), value), acc)

    K8 = builder.and_(K, ir.Constant(K.type, -LANES))
    K16 = builder.and_(K, ir.Constant(K.type, -2 * LANES))
    with cgutils.for_range_slice(builder, ir.Constant(K.type, 0), K16, ir.Constant(K.type, 2 * LANES)) as (k, _):
        add(even, body(_Block(builder, k)))
        add(odd, body(_Block(builder, builder.add(k, ir.Constant(K.type, LANES)))))
    one_more = builder.icmp_signed(">", K8, K16)              # an even full block after the pairs
    with builder.if_then(one_more):
        add(even, body(_Block(builder, K16)))
    with builder.if_then(builder.icmp_signed(">", K, K8)):
        last = body(_last_block(builder, K, K8))               # odd after one_more, else even
        a, b = builder.load(even), builder.load(odd)
        builder.store(builder.select(one_more, a, builder.fadd(a, last)), even)
        builder.store(builder.select(one_more, builder.fadd(b, last), b), odd)
    total = builder.fadd(builder.load(even), builder.load(odd))
    lane = [builder.extract_element(total, _I32(i)) for i in range(LANES)]
    pairs = [builder.fadd(lane[i], lane[i + 1]) for i in range(0, LANES, 2)]
    return builder.fadd(builder.fadd(pairs[0], pairs[1]), builder.fadd(pairs[2], pairs[3]))


def each_block(builder, K, body):
    """body(block) for each block of [0, K), the last one masked."""
    K8 = builder.and_(K, ir.Constant(K.type, -LANES))
    with cgutils.for_range_slice(builder, ir.Constant(K.type, 0), K8, ir.Constant(K.type, LANES)) as (k, _):
        body(_Block(builder, k))
    with builder.if_then(builder.icmp_signed(">", K, K8)):
        body(_last_block(builder, K, K8))


def _vector(ty):
    return isinstance(ty, types.Array) and ty.ndim == 1 and ty.layout == "C" and ty.dtype == types.float64


def _absent(ty):
    return isinstance(ty, (types.NoneType, types.Omitted))


@intrinsic
def blend_weigh(typingctx, n_theta, keep, scale, g, out, share, row, alpha):
    """For every topic k < K = len(n_theta), in one pass over blocks of 8 (the last masked); each
    part is left out when its argument is None:
        out_k      = share g_k                       (out, share: word p's entry statistic)
        n_theta_k <- keep n_theta_k + scale g_k      (keep, scale: eq. 9 for word p)
        g_k        = row_k (n_theta_k + alpha_k)     (row: eq. 5, unnormalised, for word p + 1)
    Returns sum_k g_k summed as sum_blocks does (0.0 without row). Arrays: float64, 1-d,
    C-contiguous, at least K long; the products round as written (no fused multiply-add)."""
    with_out, with_blend, with_row = not _absent(out), not _absent(keep), not _absent(row)
    arrays = [n_theta, g, alpha] + ([out] if with_out else []) + ([row] if with_row else [])
    scalars = ([keep, scale] if with_blend else []) + ([share] if with_out else [])
    parts_agree = _absent(keep) == _absent(scale) and _absent(out) == _absent(share)
    if not (parts_agree and all(_vector(a) for a in arrays) and all(isinstance(s, types.Float) for s in scalars)):
        return None
    sig = types.float64(n_theta, keep, scale, g, out, share, row, alpha)

    def codegen(context, builder, signature, args):
        def data(i):
            return context.make_array(signature.args[i])(context, builder, args[i]).data

        def splat(i):
            return _splat(builder, context.cast(builder, args[i], signature.args[i], types.float64))

        nt, g_, a = data(0), data(3), data(7)
        o, sh = (data(4), splat(5)) if with_out else (None, None)
        kp, sc = (splat(1), splat(2)) if with_blend else (None, None)
        r = data(6) if with_row else None

        def body(block):
            before = block.load(g_)
            if with_out:
                block.store(builder.fmul(sh, before), o)
            theta = block.load(nt)
            if with_blend:
                theta = builder.fadd(builder.fmul(kp, theta), builder.fmul(sc, before))
                block.store(theta, nt)
            if not with_row:
                return None
            weighed = builder.fmul(block.load(r), builder.fadd(theta, block.load(a)))
            block.store(weighed, g_)
            return weighed

        K = cgutils.unpack_tuple(builder, context.make_array(signature.args[0])(context, builder, args[0]).shape, 1)[0]
        if with_row:
            return sum_blocks(builder, K, body)
        each_block(builder, K, body)
        return context.get_constant(types.float64, 0.0)

    return sig, codegen
