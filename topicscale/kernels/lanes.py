"""Loops over topics (or words) written as explicit 512-bit vectors: 8 float64 or 16 float32 lanes.

numba leaves vectorising to LLVM's loop vectoriser (its SLP vectoriser is off). That cannot sum
in vector lanes without reassociating, so CVB0's normaliser of eq. 5 was summed in scalar
partial sums, reloading every g_k. Each loop also ran as an unrolled vector body, a narrower
epilogue and a scalar remainder (K=50 in float64: 32 + 16 + 2). CVB0's word step is a chain: the
update of word p feeds the g of word p+1, then its sum and its step. Short loops with long
remainders were most of the time at K=50.

These intrinsics emit the loops directly, as blocks of 512 bits with the last block masked:
- blend_weigh: one pass over the topics updates N^Theta for one word and weighs the next word's
  row, summing as it goes (sum_blocks, in a fixed order);
- add_scaled_rows: the mean-field kernels' multiply-add of four rows, the same bits as their loop.
Results are deterministic, and the same bits on any CPU: an AVX2 machine splits each 512-bit
operation into two 256-bit ones.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

LANES = 8                       # float64 lanes of a 512-bit block (sum_blocks sums these)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def _bits(ir_float):
    return 64 if isinstance(ir_float, ir.DoubleType) else 32


def _vector_of(ir_float):
    """The 512-bit vector of a float type: 8 doubles or 16 floats."""
    return ir.VectorType(ir_float, 512 // _bits(ir_float))


class _Block:
    """Vector loads and stores of the `vector.count` elements at index k of a buffer; masked when
    the block runs past the end (masked-off lanes load 0 and are not stored)."""

    def __init__(self, builder, vector, k, mask=None):
        self.builder, self.vector, self.k, self.mask = builder, vector, k, mask
        self.align = _bits(vector.element) // 8            # the elements' alignment, not the vector's

    def _address(self, data):
        return self.builder.bitcast(self.builder.gep(data, [self.k]), self.vector.as_pointer())

    def _masked(self, name, returns, args):
        suffix = f"v{self.vector.count}f{_bits(self.vector.element)}"
        return cgutils.get_or_insert_function(self.builder.module, ir.FunctionType(returns, args),
                                              f"llvm.masked.{name}.{suffix}.p0{suffix}")

    def load(self, data):
        if self.mask is None:
            return self.builder.load(self._address(data), align=self.align)
        fn = self._masked("load", self.vector, [self.vector.as_pointer(), _I32, self.mask.type, self.vector])
        return self.builder.call(fn, [self._address(data), _I32(self.align), self.mask, ir.Constant(self.vector, None)])

    def store(self, value, data):
        if self.mask is None:
            self.builder.store(value, self._address(data), align=self.align)
            return
        fn = self._masked("store", ir.VoidType(), [self.vector, self.vector.as_pointer(), _I32, self.mask.type])
        self.builder.call(fn, [value, self._address(data), _I32(self.align), self.mask])


def _splat(builder, x, count):
    """A vector of `count` copies of x."""
    one = builder.insert_element(ir.Constant(ir.VectorType(x.type, count), None), x, _I32(0))
    zeros = ir.Constant(ir.VectorType(_I32, count), [0] * count)
    return builder.shuffle_vector(one, ir.Constant(one.type, None), zeros)


def _last_block(builder, vector, K, full):
    """The masked block [full, full + lanes) for the K - full elements left (0 < K - full < lanes)."""
    lanes = ir.Constant(ir.VectorType(_I64, vector.count), list(range(vector.count)))
    left = builder.sub(K, full)
    left = _splat(builder, builder.sext(left, _I64) if left.type != _I64 else left, vector.count)
    return _Block(builder, vector, full, builder.icmp_signed("<", lanes, left))


def sum_blocks(builder, vector, K, body):
    """sum over the blocks of [0, K) of body(block) (a vector whose masked-off lanes must be 0:
    blend_weigh's are, from zero loads, while its scalars are finite), in this order:
    blocks 0, 2, 4, ... summed in one vector and blocks 1, 3, 5, ... in another (the last block,
    masked, in whichever its index gives), the two added, then the 8 lanes of a float64 vector as
    ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). tests/reference.py:lane_sum is the same."""
    assert vector.count == LANES
    zero = ir.Constant(vector, None)
    even, odd = cgutils.alloca_once_value(builder, zero), cgutils.alloca_once_value(builder, zero)

    def add(acc, value):
        builder.store(builder.fadd(builder.load(acc), value), acc)

    full = builder.and_(K, ir.Constant(K.type, -LANES))
    pairs = builder.and_(K, ir.Constant(K.type, -2 * LANES))
    with cgutils.for_range_slice(builder, ir.Constant(K.type, 0), pairs, ir.Constant(K.type, 2 * LANES)) as (k, _):
        add(even, body(_Block(builder, vector, k)))
        add(odd, body(_Block(builder, vector, builder.add(k, ir.Constant(K.type, LANES)))))
    one_more = builder.icmp_signed(">", full, pairs)          # an even full block after the pairs
    with builder.if_then(one_more):
        add(even, body(_Block(builder, vector, pairs)))
    with builder.if_then(builder.icmp_signed(">", K, full)):
        last = body(_last_block(builder, vector, K, full))     # odd after one_more, else even
        a, b = builder.load(even), builder.load(odd)
        builder.store(builder.select(one_more, a, builder.fadd(a, last)), even)
        builder.store(builder.select(one_more, builder.fadd(b, last), b), odd)
    total = builder.fadd(builder.load(even), builder.load(odd))
    lane = [builder.extract_element(total, _I32(i)) for i in range(LANES)]
    two = [builder.fadd(lane[i], lane[i + 1]) for i in range(0, LANES, 2)]
    return builder.fadd(builder.fadd(two[0], two[1]), builder.fadd(two[2], two[3]))


def each_block(builder, vector, K, body):
    """body(block) for each block of [0, K), the last one masked."""
    full = builder.and_(K, ir.Constant(K.type, -vector.count))
    with cgutils.for_range_slice(builder, ir.Constant(K.type, 0), full, ir.Constant(K.type, vector.count)) as (k, _):
        body(_Block(builder, vector, k))
    with builder.if_then(builder.icmp_signed(">", K, full)):
        body(_last_block(builder, vector, K, full))


def _length(context, builder, ty, value):
    return cgutils.unpack_tuple(builder, context.make_array(ty)(context, builder, value).shape, 1)[0]


def _vector(ty, dtype=types.float64):
    return isinstance(ty, types.Array) and ty.ndim == 1 and ty.layout == "C" and ty.dtype == dtype


def _absent(ty):
    return isinstance(ty, types.NoneType)


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

        vector = _vector_of(ir.DoubleType())

        def splat(i):
            return _splat(builder, context.cast(builder, args[i], signature.args[i], types.float64), LANES)

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

        K = _length(context, builder, signature.args[0], args[0])
        if with_row:
            return sum_blocks(builder, vector, K, body)
        each_block(builder, vector, K, body)
        return context.get_constant(types.float64, 0.0)

    return sig, codegen


@intrinsic
def add_scaled_rows(typingctx, y, a0, x0, a1, x1, a2, x2, a3, x3):
    """y_i <- (((y_i + a0 x0_i) + a1 x1_i) + a2 x2_i) + a3 x3_i for i < len(y), in blocks of 512 bits
    (16 float32 or 8 float64; the last masked): the same operations in the same order as the loop,
    so the same bits, without its narrower epilogue and scalar remainder. y and x: 1-d
    C-contiguous arrays of one float type, each x at least len(y) long."""
    if not (isinstance(y, types.Array) and isinstance(y.dtype, types.Float)
            and all(_vector(x, y.dtype) for x in (y, x0, x1, x2, x3))
            and all(isinstance(a, types.Float) for a in (a0, a1, a2, a3))):
        return None
    sig = types.void(y, a0, x0, a1, x1, a2, x2, a3, x3)

    def codegen(context, builder, signature, args):
        dtype = signature.args[0].dtype
        vector = _vector_of(context.get_value_type(dtype))
        data = [context.make_array(signature.args[i])(context, builder, args[i]).data for i in (0, 2, 4, 6, 8)]
        scale = [_splat(builder, context.cast(builder, args[i], signature.args[i], dtype), vector.count)
                 for i in (1, 3, 5, 7)]

        def body(block):
            v = block.load(data[0])
            for a, x in zip(scale, data[1:]):
                v = builder.fadd(v, builder.fmul(a, block.load(x)))
            block.store(v, data[0])

        each_block(builder, vector, _length(context, builder, signature.args[0], args[0]), body)
        return context.get_dummy_value()

    return sig, codegen
