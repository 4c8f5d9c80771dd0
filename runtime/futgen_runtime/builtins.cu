// Built-in kernels of the futgen CUDA runtime: the array operations that
// GPUArray does not provide.  They follow the program kernels' calling
// convention (failure, failure_args first; they never fail) and are
// grid-stride loops, so any grid size is correct.  Kernels that only move
// data are by element size (1, 2, 4, 8 bytes), not by type.
#include <stdint.h>

#define FUTGEN_MAX_RANK 8
#define GRID_STRIDE(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (int64_t)gridDim.x * blockDim.x)

// The element offset, in a strided source, of element i of a row-major
// region of `rank` dims with sizes d[] and element strides s[].
__device__ inline int64_t futgen_offset(int64_t i, int32_t rank, const int64_t *d,
                                        const int64_t *s) {
  int64_t off = 0;
  for (int32_t k = rank - 1; k >= 0; k--) {
    off += (i % d[k]) * s[k];
    i /= d[k];
  }
  return off;
}

// out[b][c][r] = in[b][r][c], by 32 x 32 tiles through shared memory, so
// that reads and writes are both coalesced (the thesis's chapter 9.1);
// blocks of 256 threads (32 x 8) take tiles by a grid-stride loop.  A tile's
// place comes from its number by two divisions, and each element's by a
// multiply-add: in 32-bit arithmetic (`I`) wherever the tiles and a batch's
// elements fit, as they nearly always do: 64-bit divisions and products
// cost instructions, and batches of small matrices are bound by them more
// than one large one (H200: 256 matrices of 256 x 256 f32 60.7 us, was
// 62.4; 4096 of 64 x 64 55.2, was 58.7; one of 8192 x 8192 the same).
template <typename T, typename I>
__device__ void futgen_transpose_tiles(T (*tile)[33], T *out, const T *in, I tiles,
                                       I tiles_r, I tiles_c, I rows, I cols) {
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  for (I t = blockIdx.x; t < tiles; t += gridDim.x) {
    const I q = t / tiles_c, b = q / tiles_r;
    const I r0 = (q - b * tiles_r) * 32, c0 = (t - q * tiles_c) * 32;
    const T *src = in + (int64_t)b * rows * cols;
    T *dst = out + (int64_t)b * rows * cols;
    for (int k = ty; k < 32; k += 8)
      if (r0 + k < rows && c0 + tx < cols) tile[k][tx] = src[(r0 + k) * cols + c0 + tx];
    __syncthreads();
    for (int k = ty; k < 32; k += 8)
      if (c0 + k < cols && r0 + tx < rows) dst[(c0 + k) * rows + r0 + tx] = tile[tx][k];
    __syncthreads();
  }
}

template <typename T>
__device__ void futgen_transpose(T (*tile)[33], T *out, const T *in, int64_t batches,
                                 int64_t rows, int64_t cols) {
  const int64_t tiles_r = (rows + 31) / 32, tiles_c = (cols + 31) / 32;
  const int64_t tiles = batches * tiles_r * tiles_c;
  // Indices below 2^31 - 32 leave room for a tile's last row and column.
  const int64_t small = INT32_MAX - 32;
  if (tiles < small && rows * cols < small)
    futgen_transpose_tiles<T, int32_t>(tile, out, in, (int32_t)tiles, (int32_t)tiles_r,
                                       (int32_t)tiles_c, (int32_t)rows, (int32_t)cols);
  else
    futgen_transpose_tiles<T, int64_t>(tile, out, in, tiles, tiles_r, tiles_c, rows, cols);
}

// out[b][c][r] = in[b][r][c] where one side is under 32 (a 32 x 32 tile
// would leave most threads idle, and a gather reads one element per 32-byte
// sector): a block takes a run of whole rows of the narrow side, 1024
// elements of the input that lie together (cols < 32: `chunk` rows of the
// input; rows < 32: `chunk` columns of it, `rows` runs of them), through
// shared memory with an odd stride, so that both the reads and the writes
// of each warp are consecutive.
template <typename T>
__device__ void futgen_transpose_narrow(T *buf, T *out, const T *in, int64_t batches,
                                        int64_t rows, int64_t cols) {
  const bool narrow_cols = cols < rows;
  // Within a run, 32-bit indices: divisions by a run's sizes stay cheap.
  const int side = (int)(narrow_cols ? cols : rows), chunk = 1024 / side, stride = side | 1;
  const int64_t wide = narrow_cols ? rows : cols;
  const int64_t per_batch = (wide + chunk - 1) / chunk;
  for (int64_t t = blockIdx.x; t < batches * per_batch; t += gridDim.x) {
    const int64_t b = t / per_batch, w0 = t % per_batch * chunk;
    const int w = (int)min((int64_t)chunk, wide - w0);
    const T *src = in + b * rows * cols;
    T *dst = out + b * rows * cols;
    for (int e = threadIdx.x; e < w * side; e += blockDim.x) {
      if (narrow_cols) {  // rows w0.. of the input are one run
        buf[e / side * stride + e % side] = src[w0 * cols + e];
      } else {  // each of the `rows` rows gives a run of w columns
        const int r = e / w, c = e % w;
        buf[c * stride + r] = src[r * cols + w0 + c];
      }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < w * side; e += blockDim.x) {
      if (narrow_cols) {  // output row c gets a run of w values
        const int c = e / w, r = e % w;
        dst[c * rows + w0 + r] = buf[r * stride + c];
      } else {  // output rows w0.. are one run
        dst[w0 * rows + e] = buf[e / side * stride + e % side];
      }
    }
    __syncthreads();
  }
}

#define DIMS_PARAMS                                                            \
  int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4, int64_t d5,      \
      int64_t d6, int64_t d7, int64_t s0, int64_t s1, int64_t s2, int64_t s3,  \
      int64_t s4, int64_t s5, int64_t s6, int64_t s7
#define DIMS_ARRAYS                                                            \
  const int64_t d[FUTGEN_MAX_RANK] = {d0, d1, d2, d3, d4, d5, d6, d7};         \
  const int64_t s[FUTGEN_MAX_RANK] = {s0, s1, s2, s3, s4, s5, s6, s7};

#define BY_SIZE(NAME, BYTES, T)                                                \
  extern "C" __global__ void futgen_fill_##BYTES(                              \
      int32_t *failure, int64_t *failure_args, T *out, int64_t n, T v) {       \
    GRID_STRIDE(i, n) out[i] = v;                                              \
  }                                                                            \
  extern "C" __global__ void futgen_tile_##BYTES(                              \
      int32_t *failure, int64_t *failure_args, T *out, int64_t n,              \
      const T *in, int64_t m) {                                                \
    GRID_STRIDE(i, n) out[i] = in[i % m];                                      \
  }                                                                            \
  extern "C" __global__ void futgen_gather_##BYTES(                            \
      int32_t *failure, int64_t *failure_args, T *out, int64_t n,              \
      const T *in, int64_t offset, int32_t rank, DIMS_PARAMS) {                \
    DIMS_ARRAYS                                                                \
    GRID_STRIDE(i, n) out[i] = in[offset + futgen_offset(i, rank, d, s)];      \
  }                                                                            \
  extern "C" __global__ void futgen_scatter_##BYTES(                           \
      int32_t *failure, int64_t *failure_args, T *dst, int64_t n,              \
      const T *src, int64_t offset, int32_t rank, DIMS_PARAMS) {               \
    DIMS_ARRAYS                                                                \
    GRID_STRIDE(i, n) dst[offset + futgen_offset(i, rank, d, s)] = src[i];     \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(256) futgen_transpose_##BYTES(  \
      int32_t *failure, int64_t *failure_args, T *out, const T *in,            \
      int64_t batches, int64_t rows, int64_t cols) {                           \
    __shared__ T tile[32][33];                                                 \
    futgen_transpose(tile, out, in, batches, rows, cols);                      \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(256)                            \
      futgen_transpose_narrow_##BYTES(int32_t *failure, int64_t *failure_args, \
                                      T *out, const T *in, int64_t batches,    \
                                      int64_t rows, int64_t cols) {            \
    __shared__ T buf[1024 + 1024 / 2];                                         \
    futgen_transpose_narrow(buf, out, in, batches, rows, cols);                \
  }

BY_SIZE(u8, 1, uint8_t)
BY_SIZE(u16, 2, uint16_t)
BY_SIZE(u32, 4, uint32_t)
BY_SIZE(u64, 8, uint64_t)

// iota for every integer type: start + i*stride computed in 64 bits and
// truncated, which is Futhark's wrapping semantics.
#define IOTA(NAME, T)                                                          \
  extern "C" __global__ void futgen_iota_##NAME(                               \
      int32_t *failure, int64_t *failure_args, T *out, int64_t n,              \
      int64_t start, int64_t stride) {                                         \
    GRID_STRIDE(i, n) out[i] = (T)(start + i * stride);                        \
  }

IOTA(int8, int8_t)
IOTA(int16, int16_t)
IOTA(int32, int32_t)
IOTA(int64, int64_t)
IOTA(uint8, uint8_t)
IOTA(uint16, uint16_t)
IOTA(uint32, uint32_t)
IOTA(uint64, uint64_t)
IOTA(float32, float)
IOTA(float64, double)
