// attn-choose-kernel refuses, naming why, an attention_grad that the
// backward's kernels cannot compute, or whose given kernel the chip cannot
// run; the verifier refuses a kernel the op cannot run on.
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_80 --verify-diagnostics

// f32 would need tf32, which misses the f32 tolerance.
func.func @f32(%q: tensor<?x4x?x64xf32>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) {
  // expected-error @+1 {{cannot run on the mma_sync backward kernel: it needs f16 or bf16 inputs, not 'f32'}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>)
      -> tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>
}

// -----

// mma.sync's k16 steps.
func.func @d40(%q: tensor<?x4x?x40xf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>) {
  // expected-error @+1 {{cannot run on the mma_sync backward kernel: its head dims (40, 40) are not multiples of 16 up to 256}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>)
      -> tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>, tensor<?x4x?x40xf16>
}

// -----

// Head dims over 128 split into column slices of whole k16 steps: D = 256
// and Dv = 144 have none (16 and 9 steps).
func.func @d256_dv144(%q: tensor<?x4x?x256xf16>, %v: tensor<?x4x?x144xf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x144xf16>) {
  // expected-error @+1 {{cannot run on the mma_sync backward kernel: its head dims (256, 144) split into no column slices of at most 128 that are multiples of 16}}
  %r:3 = attn.attention_grad ins(%q, %q, %v, %v, %v, %l : tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x144xf16>, tensor<?x4x?x144xf16>, tensor<?x4x?x144xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %v : tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x144xf16>)
      -> tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x144xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x256xf16>, tensor<?x4x?x256xf16>, tensor<?x4x?x144xf16>
}

// -----

// dO is an mma operand: it must be of the inputs' type.
func.func @f32_grad_output(%q: tensor<?x4x?x64xf16>, %do: tensor<?x4x?x64xf32>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  // expected-error @+1 {{its grad_output is an mma operand, so it must be 'f16' as Q is, not 'f32'}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %do, %l : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>)
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

// Given tiles of 128 x 128 in two stages need more than sm_80's shared
// memory at D = 128.
func.func @too_big(%q: tensor<?x4x?x128xf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>) {
  // expected-error @+1 {{has a backward kernel whose tiles take 210944 bytes of shared memory, more than sm_80's 166912 per block}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>)
      {kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 128>}
      -> tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>
}

// -----

// The backward's kernels have one band of 16 rows a warp.
func.func @given_bands(%q: tensor<?x4x?x64xf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  // expected-error @+1 {{has kernel #attn.kernel<mma_sync, q_tile = 128, kv_tile = 64, bands = 2>, but the backward's kernels are mma_sync and wgmma of one band}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>)
      {kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 64, bands = 2>}
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

// wgmma is sm_90a's.
func.func @given_wgmma(%q: tensor<?x4x?x64xf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  // expected-error @+1 {{has kernel #attn.kernel<wgmma, q_tile = 128, kv_tile = 128>, which needs wgmma: only sm_90a has it, not sm_80}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>)
      {kernel = #attn.kernel<wgmma, q_tile = 128, kv_tile = 128>}
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

// wgmma reads whole swizzled tiles.
func.func @wgmma_d48(%q: tensor<?x4x?x48xbf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>) {
  // expected-error @+1 {{cannot run on the wgmma backward kernel: it serves head dims of 16, 32, 64 and 128, not D = 48, Dv = 48}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>)
      {kernel = #attn.kernel<wgmma, q_tile = 64, kv_tile = 64>}
      -> tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>, tensor<?x4x?x48xbf16>
}

// -----

// wgmma's head dims stop at 128: its blocks take no column slices.
func.func @wgmma_d256(%q: tensor<?x4x?x256xbf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>) {
  // expected-error @+1 {{cannot run on the wgmma backward kernel: it serves head dims of 16, 32, 64 and 128, not D = 256, Dv = 256}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>)
      {kernel = #attn.kernel<wgmma, q_tile = 64, kv_tile = 64>}
      -> tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>
}

// -----

// A wgmma block owns whole warpgroups of 64 rows: the dK/dV block's
// kv-tile too.
func.func @wgmma_kv32(%q: tensor<?x4x?x64xbf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) {
  // expected-error @+1 {{has kernel #attn.kernel<wgmma, q_tile = 64, kv_tile = 32>: the wgmma backward's tiles are 64 or 128 rows (whole warpgroups), with two stages}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
      {kernel = #attn.kernel<wgmma, q_tile = 64, kv_tile = 32>}
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>
}

// -----

// A tile walks whole blocks of the lists: 32-row blocks are finer than
// the backward's 64-row tiles.
func.func @small_blocks(%q: tensor<?x4x?x64xf16>, %l: tensor<?x4x?xf32>,
                        %bm: !attn.block_mask<q_block = 32, kv_block = 128>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  // expected-error @+1 {{has a block mask of 32 x 128 blocks, which mma_sync tiles of 64 x 64 do not divide}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 32, kv_block = 128>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %keep = arith.cmpi uge, %i, %j : index
        attn.yield %keep : i1
      }
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}
