// #attn.kernel: what each kind takes, printed with its defaults left out,
// and every combination no kernel can run refused where it is written.
// RUN: attn-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @kinds
// CHECK: kernel = #attn.kernel<simt, q_tile = 32, kv_tile = 16>
// CHECK: kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 64, bands = 2>
// CHECK: kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 32, stages = 1>
// CHECK: kernel = #attn.kernel<wgmma, q_tile = 128, kv_tile = 128>
// CHECK: kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 64, query_buffers = 2, producer_registers = 24, consumer_registers = 240>
func.func @kinds(%q: tensor<1x2x?x128xbf16>, %o: tensor<1x2x?x128xbf16>)
    -> tensor<1x2x?x128xbf16> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>)
      outs(%o : tensor<1x2x?x128xbf16>) {kernel = #attn.kernel<simt, q_tile = 32, kv_tile = 16>} -> tensor<1x2x?x128xbf16>
  %1 = attn.attention ins(%q, %q, %q : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>)
      outs(%0 : tensor<1x2x?x128xbf16>) {kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 64, bands = 2, stages = 2>} -> tensor<1x2x?x128xbf16>
  %2 = attn.attention ins(%q, %q, %q : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>)
      outs(%1 : tensor<1x2x?x128xbf16>) {kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 32, stages = 1>} -> tensor<1x2x?x128xbf16>
  %3 = attn.attention ins(%q, %q, %q : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>)
      outs(%2 : tensor<1x2x?x128xbf16>) {kernel = #attn.kernel<wgmma, q_tile = 128, kv_tile = 128>} -> tensor<1x2x?x128xbf16>
  %4 = attn.attention ins(%q, %q, %q : tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>)
      outs(%3 : tensor<1x2x?x128xbf16>) {kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 64, query_buffers = 2, producer_registers = 24, consumer_registers = 240>} -> tensor<1x2x?x128xbf16>
  return %4 : tensor<1x2x?x128xbf16>
}

// -----

// expected-error @+1 {{mma_sync needs q_tile and kv_tile to be multiples of 16 and kv_tile at most 256, but got 24 and 64}}
#bad = #attn.kernel<mma_sync, q_tile = 24, kv_tile = 64>

// -----

// expected-error @+1 {{expected positive q_tile and kv_tile, but got 0 and 16}}
#bad = #attn.kernel<simt, q_tile = 0, kv_tile = 16>

// -----

// expected-error @+1 {{simt has no bands or stages to set}}
#bad = #attn.kernel<simt, q_tile = 64, kv_tile = 64, bands = 2>

// -----

// expected-error @+1 {{q_tile 16 in bands of 2 x 16 rows needs whole warps, 32 at most}}
#bad = #attn.kernel<mma_sync, q_tile = 16, kv_tile = 16, bands = 2>

// -----

// expected-error @+1 {{q_tile 1024 in bands of 1 x 16 rows needs whole warps, 32 at most}}
#bad = #attn.kernel<mma_sync, q_tile = 1024, kv_tile = 16>

// -----

// expected-error @+1 {{expected 1 or 2 stages, but got 3}}
#bad = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 16, stages = 3>

// -----

// expected-error @+1 {{wgmma needs q_tile in whole warpgroups of 64 rows, one band and 2 stages, but got q_tile 32, 1 bands and 2 stages}}
#bad = #attn.kernel<wgmma, q_tile = 32, kv_tile = 64>

// -----

// expected-error @+1 {{wgmma_ws needs q_tile in whole warpgroups of 64 rows, one band and 2 stages, but got q_tile 128, 1 bands and 1 stages}}
#bad = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 64, stages = 1, producer_registers = 40, consumer_registers = 232>

// -----

// expected-error @+1 {{query_buffers and the register split are wgmma_ws's, not mma_sync's}}
#bad = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64, query_buffers = 2>

// -----

// 40 x 128 + 248 x 256 registers are more than the register file.
// expected-error @+1 {{expected producer and consumer registers to be multiples of 8 from 24 to 256 that 128 + 256 threads hold in 65536, but got 40 and 248}}
#bad = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 64, producer_registers = 40, consumer_registers = 248>

// -----

// expected-error @+1 {{expected producer and consumer registers to be multiples of 8}}
#bad = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 64>

// -----

// expected-error @+1 {{expected 1 or 2 query_buffers, but got 3}}
#bad = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 64, query_buffers = 3, producer_registers = 40, consumer_registers = 232>

// -----

// expected-error @+2 {{expected ::mlir::attn::KernelKind to be one of: simt, mma_sync, wgmma, wgmma_ws}}
// expected-error @+1 {{failed to parse Attn_KernelAttr parameter 'kind'}}
#bad = #attn.kernel<tf32, q_tile = 64, kv_tile = 64>

// -----

func.func @f32_on_tensor_cores(%q: tensor<1x2x?x64xf32>, %o: tensor<1x2x?x64xf32>)
    -> tensor<1x2x?x64xf32> {
  // expected-error @+1 {{cannot run on a mma_sync kernel: it needs f16 or bf16 inputs, not 'f32'}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>)
      outs(%o : tensor<1x2x?x64xf32>) {kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64>} -> tensor<1x2x?x64xf32>
  return %0 : tensor<1x2x?x64xf32>
}

// -----

func.func @narrow_on_tensor_cores(%q: tensor<1x2x?x24xf16>, %o: tensor<1x2x?x24xf16>)
    -> tensor<1x2x?x24xf16> {
  // expected-error @+1 {{cannot run on a mma_sync kernel: its head dims (24, 24) are not multiples of 16}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x2x?x24xf16>, tensor<1x2x?x24xf16>, tensor<1x2x?x24xf16>)
      outs(%o : tensor<1x2x?x24xf16>) {kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64>} -> tensor<1x2x?x24xf16>
  return %0 : tensor<1x2x?x24xf16>
}

// -----

func.func @d48_on_wgmma(%q: tensor<1x2x?x48xf16>, %o: tensor<1x2x?x48xf16>)
    -> tensor<1x2x?x48xf16> {
  // expected-error @+1 {{cannot run on a wgmma_ws kernel: wgmma serves head dims of 16, 32, 64, 128 and 256, not D = 48, Dv = 48}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x2x?x48xf16>, tensor<1x2x?x48xf16>, tensor<1x2x?x48xf16>)
      outs(%o : tensor<1x2x?x48xf16>) {kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 128, producer_registers = 40, consumer_registers = 232>} -> tensor<1x2x?x48xf16>
  return %0 : tensor<1x2x?x48xf16>
}

// -----

func.func @tiles_cut_blocks(%q: tensor<1x2x?x64xf16>, %o: tensor<1x2x?x64xf16>,
                            %num: tensor<1x1x4xi32>, %idx: tensor<1x1x4x4xi32>)
    -> tensor<1x2x?x64xf16> {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x4xi32>, tensor<1x1x4x4xi32>) : <q_block = 64, kv_block = 64>
  // expected-error @+1 {{has a block mask of 64 x 64 blocks, which mma_sync tiles of 128 x 64 do not divide}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
      outs(%o : tensor<1x2x?x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 64, kv_block = 64>)
      {kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 64, bands = 2>}
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x2x?x64xf16>
  return %0 : tensor<1x2x?x64xf16>
}
