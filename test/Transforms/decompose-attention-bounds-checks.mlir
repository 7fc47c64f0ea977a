// RUN: attn-opt %s --attn-decompose-attention="kv-tile=16 bounds-checks" --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-decompose-attention="kv-tile=16" --split-input-file | FileCheck %s --check-prefix=OFF

// With bounds checks, a region's read of a captured tensor happens only
// when its index is inside the tensor; otherwise the host is told which
// argument, dim, index and size, and the read yields 0. Integer divisions
// divide by 1 instead of 0 (or of -1 under INT_MIN) and report it.
// CHECK: func.func private @attnReportRegionError(i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @captured
// CHECK: linalg.generic
// CHECK: %[[SIZE:.*]] = tensor.dim %[[CAP:.*]], %c0
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[KV:.*]], %[[SIZE]] : index
// CHECK: %[[READ:.*]] = scf.if %[[OK]] -> (f32) {
// CHECK:   tensor.extract %[[CAP]][%[[KV]]] : tensor<?xf32>
// CHECK: } else {
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[SCORE:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[ARG:.*]] = arith.constant 4 : i64
// CHECK: call @attnReportRegionError(%[[ONE]], %[[SCORE]], %[[ARG]],
// CHECK: scf.yield %{{.*}} : f32
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// CHECK: arith.andi
// CHECK: arith.ori
// CHECK: scf.if
// CHECK:   call @attnReportRegionError
// CHECK: %[[SAFE:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK: arith.divsi %{{.*}}, %[[SAFE]] : i64
// OFF-NOT: attnReportRegionError
// OFF-LABEL: func.func @captured
// OFF: tensor.extract
// OFF-NOT: scf.if
// OFF: return
func.func @captured(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>,
                    %cap: tensor<?xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %x = tensor.extract %cap[%kv] : tensor<?xf32>
        %i = arith.index_cast %qi : index to i64
        %j = arith.index_cast %kv : index to i64
        %d = arith.divsi %i, %j : i64
        %df = arith.sitofp %d : i64 to f32
        %y = arith.addf %x, %df : f32
        %r = arith.addf %s, %y : f32
        attn.yield %r : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// -----

// A captured scalar has no index to check; reads and divisions nested in a
// region's own control flow are checked like the others.
// CHECK-LABEL: func.func @scalar_and_nested
// CHECK: tensor.extract %{{.*}}[] : tensor<f32>
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK:   %[[OK:.*]] = arith.cmpi ult
// CHECK:   scf.if %[[OK]] -> (f32) {
// CHECK:     tensor.extract
// CHECK:   call @attnReportRegionError
// CHECK:   scf.if
// CHECK:     call @attnReportRegionError
// CHECK:   arith.remui
// OFF-LABEL: func.func @scalar_and_nested
// OFF-NOT: attnReportRegionError
func.func @scalar_and_nested(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                             %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>,
                             %bias: tensor<f32>, %table: tensor<?xf32>)
    -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %x = tensor.extract %bias[] : tensor<f32>
        %near = arith.cmpi ult, %kv, %qi : index
        %y = scf.if %near -> (f32) {
          %t = tensor.extract %table[%kv] : tensor<?xf32>
          %m = arith.remui %qi, %kv : index
          %mi = arith.index_cast %m : index to i64
          %mf = arith.sitofp %mi : i64 to f32
          %u = arith.addf %t, %mf : f32
          scf.yield %u : f32
        } else {
          scf.yield %x : f32
        }
        %r = arith.addf %s, %y : f32
        attn.yield %r : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
