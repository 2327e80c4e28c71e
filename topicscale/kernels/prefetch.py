"""Ask the CPU to start loading a row of a matrix before a kernel needs it.

The local steps gather one topic row per distinct word of a document. On a large vocabulary the
rows of a minibatch's words do not fit in the core's cache, so each gather waits for memory, and a
step that does little arithmetic per row (CVB0: one pass over K a word) waits on every one.
A prefetch a few words ahead overlaps those waits with the work on the current word. It is a hint
(llvm.prefetch: no fault, no effect on results), declared by name, so kernels that use it cache.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

CACHE_LINE = 64
# how many rows ahead of the one in use the kernels prefetch (GCIDE, CVB0 at K=50: 1 ahead 1.2x,
# 2 ahead 1.5x, 4 and 8 ahead 1.6x faster than none)
PREFETCH_AHEAD = 4


@intrinsic
def prefetch_row(typingctx, matrix, i):
    """Prefetch (for reading, into every cache level) each cache line of row i of a 2-d C-contiguous
    array. i must be a valid row: the address is computed, never checked."""
    if not (isinstance(matrix, types.Array) and matrix.ndim == 2 and matrix.layout == "C"
            and isinstance(i, types.Integer)):
        return None
    sig = types.void(matrix, i)

    def codegen(context, builder, signature, args):
        byte_ptr, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]), "llvm.prefetch.p0i8")
        array = context.make_array(signature.args[0])(context, builder, args[0])
        row_stride = cgutils.unpack_tuple(builder, array.strides, 2)[0]
        row_bytes = builder.mul(cgutils.unpack_tuple(builder, array.shape, 2)[1],
                                context.get_constant(types.intp, signature.args[0].dtype.bitwidth // 8))
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        row = builder.gep(builder.bitcast(array.data, byte_ptr), [builder.mul(index, row_stride)])
        with cgutils.for_range_slice(builder, context.get_constant(types.intp, 0), row_bytes,
                                     context.get_constant(types.intp, CACHE_LINE)) as (offset, _):
            # read (0), high temporal locality (3), data cache (1)
            builder.call(prefetch, [builder.gep(row, [offset]), i32(0), i32(3), i32(1)])
        # the row's last byte, whose line the strides miss when the row starts mid-line
        last = builder.sub(row_bytes, context.get_constant(types.intp, 1))
        builder.call(prefetch, [builder.gep(row, [last]), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
