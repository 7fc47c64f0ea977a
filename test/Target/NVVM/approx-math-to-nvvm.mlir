// RUN: attn-opt %s --attn-approx-math-to-nvvm | FileCheck %s

// CHECK-LABEL: func.func @f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%{{.*}}) : (f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"(%{{.*}}) : (f32) -> f32
// CHECK: nvvm.inline_ptx "tanh.approx.f32 $0, $1;"
// exp(x) = exp2(x * log2(e)); log(x) = log2(x) * ln(2)
// CHECK: arith.constant 1.44269502 : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: arith.constant 0.693147182 : f32
// CHECK: llvm.intr.fma
// CHECK-NOT: math.
func.func @f32(%x: f32, %y: f32) -> (f32, f32, f32, f32, f32, f32) {
  %a = math.exp2 %x : f32
  %b = math.log2 %x : f32
  %c = math.tanh %x fastmath<afn> : f32
  %d = math.exp %x : f32
  %e = math.log %x : f32
  %f = math.fma %x, %y, %x : f32
  return %a, %b, %c, %d, %e, %f : f32, f32, f32, f32, f32, f32
}

// Without `afn` (f32 attention, whose tolerance tanh.approx's 2^-11 would
// exceed), tanh is computed from ex2.approx: a Taylor polynomial below
// |x| = 1/16, 1 - 2 / (e^(2|x|) + 1) with x's sign above.
// CHECK-LABEL: func.func @tanh_precise
// CHECK-NOT: inline_ptx
// CHECK: %[[AX:.*]] = llvm.call_intrinsic "llvm.nvvm.fabs"(%[[X:.*]]) : (f32) -> f32
// CHECK: arith.constant -0.0539682545 : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.divf
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[X]],
// CHECK: %[[SMALL:.*]] = arith.cmpf olt, %[[AX]],
// CHECK: arith.select %[[SMALL]]
func.func @tanh_precise(%x: f32) -> f32 {
  %a = math.tanh %x : f32
  return %a : f32
}

// Other types are left to the usual lowering.
// CHECK-LABEL: func.func @f64
// CHECK: math.exp2 %{{.*}} : f64
func.func @f64(%x: f64) -> f64 {
  %a = math.exp2 %x : f64
  return %a : f64
}

// Exact ops become the intrinsics of their PTX instructions, not inline PTX:
// a constant operand would be an immediate constraint LLVM refuses for f32.
// CHECK-LABEL: func.func @exact_of_constants
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%[[C:.*]]) : (f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.fabs"(%[[C]]) : (f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.fmax.f"(%{{.*}}, %[[C]]) : (f32, f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.fmin.f"(%{{.*}}, %[[C]]) : (f32, f32) -> f32
func.func @exact_of_constants(%x: f32) -> (f32, f32, f32, f32) {
  %c = arith.constant 0xFF800000 : f32
  %a = math.sqrt %c : f32
  %b = math.absf %c : f32
  %d = arith.maxnumf %x, %c : f32
  %e = arith.minnumf %x, %c : f32
  return %a, %b, %d, %e : f32, f32, f32, f32
}
