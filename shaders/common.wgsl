// WGSL helpers shared by kernel families. A family's WGSL pulls a section in with a line
// `#include NAME` (py_core/kernels/family.py expands it when the shader is loaded).

// == wg_reduce
// Sum and max of v over a workgroup of WG invocations (the family defines WG), returned to every
// invocation; a fixed tree order, so the result is the same every run.
var<workgroup> red: array<f32, WG>;

fn wg_sum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

fn wg_max(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

// == mix32
// lowbias32 (Chris Wellons' integer hash): a bijection of u32 with good avalanche. The same in
// py_core/kernels/transformer_embedding (mix32), so Python and PyTorch draw the same numbers.
fn mix32(x0: u32) -> u32 {
  var x = x0;
  x ^= x >> 16u;
  x *= 0x7feb352du;
  x ^= x >> 15u;
  x *= 0x846ca68bu;
  x ^= x >> 16u;
  return x;
}

// == hash32
// A counter-based hash: the counter-th u32 of the stream `key`.
#include mix32
fn hash32(key: u32, counter: u32) -> u32 { return mix32(mix32(key ^ counter)); }

// == gelu
// GELU's tanh approximation, y = 0.5 x (1 + tanh(k0 (x + k1 x^3))) (torch.nn.GELU(approximate=
// "tanh"); GPT-2 used it), and its derivative: the elementwise kernels and the matmul epilogues.
const K0 = 0.7978845608028654;  // sqrt(2 / pi)
const K1 = 0.044715;

// tanh without overflow: exp of a non-positive argument only (some backends' tanh is NaN for
// large inputs).
fn tanh_(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  return sign(u) * (1.0 - e) / (1.0 + e);
}

fn gelu(x: f32) -> f32 { return 0.5 * x * (1.0 + tanh_(K0 * (x + K1 * x * x * x))); }

fn gelu_grad(x: f32) -> f32 {
  let t = tanh_(K0 * (x + K1 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * K0 * (1.0 + 3.0 * K1 * x * x);
}

// == epilogue
// The epilogue of one element (r, c) of C in transformer_matmul's contract, which matmul_f16
// shares (its Params, flags and bindings p, C, bias, R, G): alpha, then bias, residual, GELU
// gradient, accumulation, and the GELU beside the stored value.
#include gelu
fn store1(c_base: u32, r: u32, c: u32, acc: f32) {
  if (r >= p.M || c >= p.N) { return; }
  let f = p.flags;
  var v = p.alpha * acc;
  if ((f & BIAS) != 0u) { v += bias[p.bias_off + c]; }
  let at = c_base + r * p.ldc + c;
  if ((f & RESIDUAL) != 0u) { v += R[at]; }
  if ((f & GELU_GRAD) != 0u) { v *= gelu_grad(R[at]); }
  if ((f & ACCUMULATE) != 0u) { v += C[at]; }
  C[at] = v;
  if ((f & GELU) != 0u) { G[at] = gelu(v); }
}

// == pcg
// PCG hash (O'Neill); hash3 keys a stream by (seed, what, index). Same in forest.py.
fn pcg(x: u32) -> u32 {
  let s = x * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

fn hash3(a: u32, b: u32, c: u32) -> u32 { return pcg(pcg(pcg(a) + b) + c); }
