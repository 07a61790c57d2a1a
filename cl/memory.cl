/* Plain data movement for uploads, fills and same-dtype copies, in units of 4, 2 or 1
 * bytes (the largest that divides both offsets and the length). These are kernels rather
 * than clEnqueueWriteBuffer / FillBuffer / CopyBuffer so that every byte of a block is
 * written by a kernel: oclgrind's uninitialized-value checker (21.10) loses track of host
 * writes at nonzero offsets into a buffer, and kiln's buffers are ranges of large blocks. */

__kernel void copy_u32(const __global uint *src, ulong src_off, __global uint *dst, ulong dst_off, long n) {
    long i = get_global_id(0);
    if (i < n) dst[dst_off + i] = src[src_off + i];
}
__kernel void copy_u16(const __global ushort *src, ulong src_off, __global ushort *dst, ulong dst_off, long n) {
    long i = get_global_id(0);
    if (i < n) dst[dst_off + i] = src[src_off + i];
}
__kernel void copy_u8(const __global uchar *src, ulong src_off, __global uchar *dst, ulong dst_off, long n) {
    long i = get_global_id(0);
    if (i < n) dst[dst_off + i] = src[src_off + i];
}

__kernel void fill_u32(__global uint *dst, ulong dst_off, long n, uint value) {
    long i = get_global_id(0);
    if (i < n) dst[dst_off + i] = value;
}
__kernel void fill_u16(__global ushort *dst, ulong dst_off, long n, uint value) {
    long i = get_global_id(0);
    if (i < n) dst[dst_off + i] = (ushort)value;
}
