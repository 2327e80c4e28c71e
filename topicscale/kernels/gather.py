"""Read scattered slices of a file into an array with POSIX pread, in compiled code.

A minibatch of 500 short documents is 1,000 slices (word ids and counts); Python's os.preadv
loop spent about 2 µs a slice on them (2 of the 10 ms of a GCIDE minibatch at K=50), a compiled
loop about half that. libc's pread is declared by name (a symbol the process already has), so
the kernel caches like any other (a ctypes function would be a run-time address, which numba
cannot cache). A small corpus is held in memory instead (corpus/shards.py), where copy_slices
gathers the same slices.
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _pread_into(typingctx, fd, out, out_byte, nbytes, position):
    """pread(fd, (char *) out.data + out_byte, nbytes, position) for a 1-d contiguous array
    `out`; returns the bytes read, 0 at end of file or -1 on error."""
    if not (isinstance(out, types.Array) and out.ndim == 1 and out.layout == "C"):
        return None
    sig = types.int64(types.int64, out, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64, byte_ptr = ir.IntType(64), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i64, [ir.IntType(32), byte_ptr, i64, i64])
        pread = cgutils.get_or_insert_function(builder.module, fnty, "pread")
        data = context.make_array(signature.args[1])(context, builder, args[1]).data
        address = builder.gep(builder.bitcast(data, byte_ptr), [args[2]])
        return builder.call(pread, [builder.trunc(args[0], ir.IntType(32)), address, args[3], args[4]])

    return sig, codegen


@njit(cache=True, nogil=True)
def read_slices(fd, offset, starts, lengths, out, out_starts):
    """out[out_starts[i]:+lengths[i]] = items starts[i]:+lengths[i] of the array stored in file
    `fd` from byte `offset` (items of out's type). A run of slices adjacent both in the file and
    in out is read by one call. Returns -1, or the first slice of a run that could not be read
    whole (the file is shorter than expected, or a read failed)."""
    size = out.itemsize
    n = starts.shape[0]
    i = 0
    while i < n:
        j = i + 1
        while (j < n and starts[j] == starts[j - 1] + lengths[j - 1]
               and out_starts[j] == out_starts[j - 1] + lengths[j - 1]):
            j += 1
        if out_starts[i] < 0 or out_starts[j - 1] + lengths[j - 1] > out.shape[0]:
            raise IndexError("read_slices: a slice falls outside the output array")
        want = (out_starts[j - 1] + lengths[j - 1] - out_starts[i]) * size
        position = offset + starts[i] * size
        done = 0
        while done < want:          # pread may return less than asked (at most 2 GiB a call)
            got = _pread_into(fd, out, out_starts[i] * size + done, want - done, position + done)
            if got <= 0:
                return i
            done += got
        i = j
    return -1


@njit(cache=True, nogil=True)
def copy_slices(source, starts, lengths, out, out_starts):
    """out[out_starts[i]:+lengths[i]] = source[starts[i]:+lengths[i]] (a corpus held in memory:
    the same gather as read_slices without a system call a slice)."""
    for i in range(starts.shape[0]):
        a, b = starts[i], out_starts[i]
        for j in range(lengths[i]):
            out[b + j] = source[a + j]
