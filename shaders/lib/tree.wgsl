// Sections of a tree model grown level by level on the GPU: the random forest's (shaders/forest.wgsl
// includes them all), for any other tree model to include (`#include NAME`). They expect what
// forest.wgsl declares before them: the uniform `p: Params` at binding 0 with the forest's fields
// (py_core/kernels/forest/__init__.py: PARAMS) and its constants (FAMILY.consts); bindings keep
// the forest's numbers, a prefix a kernel (hb_, sp_, al_, fi_, ...).

// == tree_grid
fn linear(wid: vec3u, nwg: vec3u) -> u32 { return wid.x + wid.y * nwg.x; }

// == tree_binned
// ---- the binned matrix: a row's bins in FW words, four of 8 bits a word, or two of 16 (p.b16,
// where a feature has more than 256 bins) --------------------------------------------------------
fn bin_word(f: u32) -> u32 { return f >> (2u - p.b16); }  // feature f's word in its row

fn bin_in(word: u32, f: u32) -> u32 {  // feature f's bin from its word
  let bits = 8u << p.b16;
  return (word >> (bits * (f & ((4u >> p.b16) - 1u)))) & ((1u << bits) - 1u);
}

// == tree_x
#include tree_f64
// ---- X: rows of f32, or of f64 read as the f32 nearest each --------------------------------
@group(0) @binding(1) var<storage, read> X: array<u32>;

fn x_bits(r: u32, f: u32) -> u32 {
  let i = r * p.F + f;
  if (p.xd == 0u) { return X[i]; }
  return f64_to_f32_bits(X[2u * i], X[2u * i + 1u]);
}

fn x_at(r: u32, f: u32) -> f32 { return bitcast<f32>(x_bits(r, f)); }
