// RUN: attn-opt %s --attn-choose-kernel="chip=sm_90a strategy=wgmma-ws" --attn-attention-to-mma | FileCheck %s
// RUN: attn-opt %s --attn-choose-kernel="chip=sm_90a strategy=mma-sync" --attn-attention-to-mma | FileCheck %s --check-prefix=MMA-SYNC

// The persistent kernel: one block per SM (at most one per tile), a
// zeroed two-word workspace for the tile counter, TMA tensor maps of Q, K
// and V (a tile's rows by a 64-column swizzled tile), 384 threads (two
// consumer warpgroups and the producer), two Q buffers, two K and V
// buffers and the mbarriers in shared memory.
// CHECK-LABEL: func.func @causal_bf16
// CHECK: %[[QB:.*]] = arith.ceildivui %{{.*}}, %c128
// CHECK: %[[T1:.*]] = arith.muli %[[QB]], %{{.*}}
// CHECK: %[[TILES:.*]] = arith.muli %[[T1]], %{{.*}}
// CHECK: %[[SMS:.*]] = attn.multiprocessor_count
// CHECK: %[[GRID:.*]] = arith.minui %[[TILES]], %[[SMS]]
// CHECK: %[[WS:.*]] = attn.workspace %{{.*}} : memref<?xi32>
// CHECK: %[[QMAP:.*]] = attn.tensor_map %{{.*}} box [1, 1, 128, 64] : memref<?x8x?x128xbf16> -> !llvm.ptr
// CHECK: %[[KMAP:.*]] = attn.tensor_map %{{.*}} box [1, 1, 128, 64] : memref<?x2x?x128xbf16> -> !llvm.ptr
// CHECK: %[[VMAP:.*]] = attn.tensor_map %{{.*}} box [1, 1, 128, 64] : memref<?x2x?x128xbf16> -> !llvm.ptr
// CHECK: gpu.launch blocks({{.*}}) in (%[[GX:.*]] = %[[GRID]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c384, {{.*}}) dynamic_shared_memory_size %c197768_i32
// CHECK: memref.view {{.*}} to memref<2x2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<16xi64, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2xi32, #gpu.address_space<workgroup>>
// Thread 0 initializes the barriers: full ones wait for the producer's
// first thread (and its copies' bytes), empty ones for the consumers' 256,
// the tile slots for 1 and 384.
// CHECK: mbarrier.init.shared::cta.b64 [$0], $1;{{.*}} %c1_i32
// CHECK: mbarrier.init.shared::cta.b64 [$0], $1;{{.*}} %c256_i32
// CHECK: mbarrier.init.shared::cta.b64 [$0], $1;{{.*}} %c1_i32
// CHECK: mbarrier.init.shared::cta.b64 [$0], $1;{{.*}} %c384_i32
// CHECK: gpu.barrier
// The producer gives up registers, takes tiles from the workspace's
// counter, and its first thread copies with TMA: two boxes a tile, whose
// bytes its buffer's full barrier expects.
// CHECK: scf.if
// CHECK-NEXT: nvvm.setmaxregister decrease 40
// CHECK: scf.while
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[WS]][%c0{{.*}}]
// CHECK: mbarrier.arrive.shared::cta.b64
// CHECK: scf.condition
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;{{.*}} %c32768_i32
// CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes {{.*}}, %[[QMAP]], %c0_i32
// CHECK: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes {{.*}}, %[[QMAP]], %c64_i32
// CHECK: scf.for
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: mbarrier.arrive.expect_tx.shared::cta.b64
// CHECK: cp.async.bulk.tensor.4d{{.*}}, %[[KMAP]],
// CHECK: cp.async.bulk.tensor.4d{{.*}}, %[[KMAP]],
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: mbarrier.arrive.expect_tx.shared::cta.b64
// CHECK: cp.async.bulk.tensor.4d{{.*}}, %[[VMAP]],
// CHECK: cp.async.bulk.tensor.4d{{.*}}, %[[VMAP]],
// The last block out zeroes the workspace again.
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[WS]][%c1{{.*}}]
// CHECK: %[[LAST:.*]] = arith.subi %[[GX]], %c1
// CHECK: scf.if
// CHECK: memref.store %c0_i32{{.*}}, %[[WS]]
// CHECK: memref.store %c0_i32{{.*}}, %[[WS]]
// The consumers take the registers and the same tiles, and wait for each
// buffer instead of at block barriers; TMA writes through the async proxy
// that wgmma reads through, so no proxy fence.
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 232
// CHECK: scf.while
// CHECK: scf.condition
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-NOT: nvvm.fence.proxy
// CHECK-NOT: gpu.barrier
// CHECK: wgmma.mma_async
// CHECK-NOT: gpu.barrier
// CHECK: mbarrier.arrive.shared::cta.b64
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator

// strategy=mma-sync on the same chip: mma.sync's kernel.
// MMA-SYNC-LABEL: func.func @causal_bf16
// MMA-SYNC-NOT: attn.workspace
// MMA-SYNC: threads({{.*}}) in (%{{.*}} = %c128
// MMA-SYNC-NOT: setmaxregister
func.func @causal_bf16(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                       %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>,
                       %lse: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>)
      outs(%o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {causal}
      -> tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
  return %r#0, %r#1 : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}
