// attn-lower-to-nvvm's strategy: auto takes, per op, the fastest kernel the
// chip has that serves it; simt, mma-sync, wgmma and wgmma-ws put every
// attention op on that kernel or fail naming the op and why. The choice is
// each op's #attn.kernel (stage choose), which the lowerings follow (tile).
// RUN: attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a until=choose" | FileCheck %s --check-prefix=AUTO90A
// RUN: attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a until=tile" | FileCheck %s --check-prefix=TILE90A
// RUN: attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90 until=choose" | FileCheck %s --check-prefix=AUTO90
// RUN: attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_75 until=choose" | FileCheck %s --check-prefix=AUTO75
// RUN: attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a strategy=simt until=choose" | FileCheck %s --check-prefix=SIMT
// RUN: attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a strategy=simt until=tile" | FileCheck %s --check-prefix=SIMT-TILE
// RUN: not attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a strategy=mma-sync until=choose" 2>&1 | FileCheck %s --check-prefix=MMASYNC
// RUN: not attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a strategy=wgmma until=choose" 2>&1 | FileCheck %s --check-prefix=WGMMA
// RUN: not attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a strategy=wgmma-ws until=choose" 2>&1 | FileCheck %s --check-prefix=WGMMAWS
// RUN: not attn-opt %s --split-input-file --attn-lower-to-nvvm="chip=sm_90a strategy=wgmma-ws q-tile=32 until=choose" 2>&1 | FileCheck %s --check-prefix=TILES
// RUN: not attn-opt %s --attn-lower-to-nvvm="chip=sm_90 strategy=wgmma" 2>&1 | FileCheck %s --check-prefix=NOWGMMA
// RUN: not attn-opt %s --attn-lower-to-nvvm="chip=sm_75 strategy=mma-sync" 2>&1 | FileCheck %s --check-prefix=NOMMA
// RUN: not attn-opt %s --attn-lower-to-nvvm="chip=sm_90a strategy=mma" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// A block mask of 32 x 32 blocks cuts the tiles to 32 rows, fewer than a
// warpgroup's 64: auto takes mma.sync, wgmma-ws says why it cannot.
// RUN: attn-run --emit-variant --dtype=bf16 --head-dim=128 --mask=document --given-block-mask=32 > %t.blocks32.mlir
// RUN: attn-opt %t.blocks32.mlir --attn-lower-to-nvvm="chip=sm_90a until=choose" | FileCheck %s --check-prefix=BLOCKS32
// RUN: not attn-opt %t.blocks32.mlir --attn-lower-to-nvvm="chip=sm_90a strategy=wgmma-ws until=choose" 2>&1 | FileCheck %s --check-prefix=BLOCKS32-WS

// FlashAttention-3's 128 x 128 tiles, two Q buffers, 40/232 registers.
// AUTO90A-LABEL: func.func @d128
// AUTO90A: kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 128, query_buffers = 2, producer_registers = 40, consumer_registers = 232>
// D = 256 leaves room for one Q buffer and kv-tiles of 64.
// AUTO90A-LABEL: func.func @d256
// AUTO90A: kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 64, producer_registers = 40, consumer_registers = 232>
// AUTO90A-LABEL: func.func @d48
// AUTO90A: kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 64, bands = 2>
// AUTO90A-LABEL: func.func @f32
// AUTO90A: kernel = #attn.kernel<simt, q_tile = 64, kv_tile = 64>

// TILE90A-LABEL: func.func @d128
// TILE90A: gpu.launch
// TILE90A: nvvm.setmaxregister
// TILE90A: wgmma.mma_async
// TILE90A-LABEL: func.func @d48
// TILE90A: gpu.launch
// TILE90A-NOT: wgmma
// TILE90A: nvvm.mma.sync
// TILE90A-LABEL: func.func @f32
// TILE90A-NOT: gpu.launch
// TILE90A: scf.forall
// TILE90A: attn.attention {{.*}}kernel = #attn.kernel<simt, q_tile = 64, kv_tile = 64>

// AUTO90-LABEL: func.func @d128
// AUTO90: kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 32, bands = 2>

// AUTO75-LABEL: func.func @d128
// AUTO75: kernel = #attn.kernel<simt,

// SIMT-LABEL: func.func @d128
// SIMT: kernel = #attn.kernel<simt, q_tile = 64, kv_tile = 64>
// SIMT-LABEL: func.func @d256
// SIMT: kernel = #attn.kernel<simt, q_tile = 64, kv_tile = 32>

// SIMT-TILE-LABEL: func.func @d128
// SIMT-TILE-NOT: gpu.launch
// SIMT-TILE: scf.forall

// MMASYNC-NOT: error
// MMASYNC: error: 'attn.attention' op cannot run on strategy mma-sync: it needs f16 or bf16 inputs (f32 would need tf32, which misses the f32 tolerance)
// MMASYNC-NOT: error

// WGMMA: error: 'attn.attention' op cannot run on strategy wgmma: wgmma serves head dims of 16, 32, 64, 128 and 256, not D = 48, Dv = 48
// WGMMA: error: 'attn.attention' op cannot run on strategy wgmma: it needs f16 or bf16 inputs

// WGMMAWS: error: 'attn.attention' op cannot run on strategy wgmma-ws: wgmma serves head dims of 16, 32, 64, 128 and 256, not D = 48, Dv = 48
// WGMMAWS: error: 'attn.attention' op cannot run on strategy wgmma-ws: it needs f16 or bf16 inputs

// TILES: error: 'attn.attention' op has no wgmma-ws tiles that fit 232448 bytes of shared memory per block (q-tile 32, a multiple of 64

// NOWGMMA: attn-lower-to-nvvm: strategy wgmma needs wgmma, which only sm_90a has, not sm_90
// NOMMA: attn-lower-to-nvvm: strategy mma-sync needs sm_80 or newer, not sm_75
// UNKNOWN: for the --strategy option: Cannot find option named 'mma'!

// BLOCKS32: kernel = #attn.kernel<mma_sync, q_tile = 32, kv_tile = 32
// BLOCKS32-WS: error: 'attn.attention' op has a block mask of 32 x 32 blocks, which no wgmma-ws tiles divide (q-tile 32, kv-tile 32)

func.func @d128(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>,
                %v: tensor<?x?x?x128xbf16>, %o: tensor<?x?x?x128xbf16>)
    -> tensor<?x?x?x128xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>)
      outs(%o : tensor<?x?x?x128xbf16>) {causal} -> tensor<?x?x?x128xbf16>
  return %r : tensor<?x?x?x128xbf16>
}

// -----

func.func @d256(%q: tensor<?x?x?x256xbf16>, %k: tensor<?x?x?x256xbf16>,
                %v: tensor<?x?x?x256xbf16>, %o: tensor<?x?x?x256xbf16>)
    -> tensor<?x?x?x256xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x256xbf16>, tensor<?x?x?x256xbf16>, tensor<?x?x?x256xbf16>)
      outs(%o : tensor<?x?x?x256xbf16>) -> tensor<?x?x?x256xbf16>
  return %r : tensor<?x?x?x256xbf16>
}

// -----

func.func @d48(%q: tensor<?x?x?x48xbf16>, %k: tensor<?x?x?x48xbf16>,
               %v: tensor<?x?x?x48xbf16>, %o: tensor<?x?x?x48xbf16>)
    -> tensor<?x?x?x48xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x48xbf16>, tensor<?x?x?x48xbf16>, tensor<?x?x?x48xbf16>)
      outs(%o : tensor<?x?x?x48xbf16>) -> tensor<?x?x?x48xbf16>
  return %r : tensor<?x?x?x48xbf16>
}

// -----

func.func @f32(%q: tensor<?x?x?x64xf32>, %k: tensor<?x?x?x64xf32>,
               %v: tensor<?x?x?x64xf32>, %o: tensor<?x?x?x64xf32>)
    -> tensor<?x?x?x64xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>)
      outs(%o : tensor<?x?x?x64xf32>) -> tensor<?x?x?x64xf32>
  return %r : tensor<?x?x?x64xf32>
}
