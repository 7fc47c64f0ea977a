// Region ops at the edges of what is defined (wrapping, truncation, negative
// operands of rounding divisions, unsigned views of negative values, i1
// extensions, -0.0, NaN through maxnumf): the compiled kernel and the
// reference must agree at every position (reference-defined.test).
func.func @defined(%q: tensor<1x2x?x16xf32>, %k: tensor<1x2x?x16xf32>,
                   %v: tensor<1x2x?x16xf32>, %o: tensor<1x2x?x16xf32>)
    -> tensor<1x2x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>)
      outs(%o : tensor<1x2x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        // q * 37 + kv * 11 truncated to i8.
        %c37 = arith.constant 37 : index
        %c11 = arith.constant 11 : index
        %qa = arith.muli %qi, %c37 : index
        %ka = arith.muli %kv, %c11 : index
        %sum = arith.addi %qa, %ka : index
        %t1 = arith.index_cast %sum : index to i8
        // INT64_MAX + q + 1 wraps to INT64_MIN + q: minus INT64_MIN and q, 0.
        %max = arith.constant 9223372036854775807 : i64
        %min = arith.constant -9223372036854775808 : i64
        %one64 = arith.constant 1 : i64
        %q64 = arith.index_cast %qi : index to i64
        %w1 = arith.addi %max, %q64 : i64
        %w2 = arith.addi %w1, %one64 : i64
        %w3 = arith.subi %w2, %min : i64
        %t2 = arith.subi %w3, %q64 : i64
        // An i8 product wraps.
        %q8 = arith.index_cast %qi : index to i8
        %k8 = arith.index_cast %kv : index to i8
        %t3 = arith.muli %q8, %k8 : i8
        // |INT32_MIN| wraps to INT32_MIN.
        %min32 = arith.constant -2147483648 : i32
        %abs = math.absi %min32 : i32
        %isMin = arith.cmpi eq, %abs, %min32 : i32
        %t4 = arith.extui %isMin : i1 to i8
        // Shifts of ~q (negative) and q by kv mod 8.
        %c8 = arith.constant 8 : i8
        %ones8 = arith.constant -1 : i8
        %amount = arith.remui %k8, %c8 : i8
        %nq8 = arith.xori %q8, %ones8 : i8
        %t5 = arith.shrsi %nq8, %amount : i8
        %t6 = arith.shrui %nq8, %amount : i8
        %t7 = arith.shli %q8, %amount : i8
        // Rounding divisions of d = q - kv - 3, negative and positive.
        %q32 = arith.index_cast %qi : index to i32
        %k32 = arith.index_castui %kv : index to i32
        %c3 = arith.constant 3 : i32
        %d0 = arith.subi %q32, %k32 : i32
        %d = arith.subi %d0, %c3 : i32
        %c2 = arith.constant 2 : i32
        %cm2 = arith.constant -2 : i32
        %cm3 = arith.constant -3 : i32
        %c7 = arith.constant 7 : i32
        %cbig = arith.constant 1000000000 : i32
        %t8 = arith.ceildivsi %d, %cm2 : i32
        %t9 = arith.floordivsi %d, %c2 : i32
        %t10 = arith.divsi %d, %cm3 : i32
        %t11 = arith.remsi %d, %cm3 : i32
        %t12 = arith.remui %d, %c7 : i32
        %t13 = arith.ceildivui %d, %cbig : i32
        %t14 = arith.minsi %d, %c2 : i32
        %t15 = arith.maxui %d, %c7 : i32
        %t16 = arith.divui %d, %cbig : i32
        %t16b = arith.minui %d, %c7 : i32
        %t16c = arith.maxsi %d, %cm3 : i32
        // i1 extensions: sign gives -1, zero gives 1.
        %c0 = arith.constant 0 : i32
        %lt = arith.cmpi slt, %d, %c0 : i32
        %t17 = arith.extsi %lt : i1 to i32
        %t18 = arith.extui %lt : i1 to i32
        %t18b = arith.select %lt, %t17, %t18 : i32
        // q * 300 truncated to i8; i8 -1 zero-extended to 255.
        %c300 = arith.constant 300 : i32
        %q300 = arith.muli %q32, %c300 : i32
        %t19 = arith.trunci %q300 : i32 to i8
        %ui = arith.index_castui %ones8 : i8 to index
        %t20 = arith.index_cast %ui : index to i32
        // Conversions: -2.5 (q + 1) truncated toward zero; 2.5 (kv + 1).
        %one32 = arith.constant 1 : i32
        %q1 = arith.addi %q32, %one32 : i32
        %k1 = arith.addi %k32, %one32 : i32
        %q1f = arith.sitofp %q1 : i32 to f32
        %k1f = arith.uitofp %k1 : i32 to f32
        %cm25 = arith.constant -2.5 : f32
        %c25 = arith.constant 2.5 : f32
        %qm = arith.mulf %q1f, %cm25 : f32
        %km = arith.mulf %k1f, %c25 : f32
        %t21 = arith.fptosi %qm : f32 to i32
        %t22 = arith.fptoui %km : f32 to i8
        // Integer terms as floats, signed or unsigned.
        %f1 = arith.sitofp %t1 : i8 to f32
        %f2 = arith.sitofp %t2 : i64 to f32
        %f3 = arith.sitofp %t3 : i8 to f32
        %f4 = arith.uitofp %t4 : i8 to f32
        %f5 = arith.sitofp %t5 : i8 to f32
        %f6 = arith.uitofp %t6 : i8 to f32
        %f7 = arith.sitofp %t7 : i8 to f32
        %f8 = arith.sitofp %t8 : i32 to f32
        %f9 = arith.sitofp %t9 : i32 to f32
        %f10 = arith.sitofp %t10 : i32 to f32
        %f11 = arith.sitofp %t11 : i32 to f32
        %f12 = arith.uitofp %t12 : i32 to f32
        %f13 = arith.uitofp %t13 : i32 to f32
        %f14 = arith.sitofp %t14 : i32 to f32
        %f15 = arith.sitofp %t15 : i32 to f32
        %f16 = arith.uitofp %t16 : i32 to f32
        %f16b = arith.sitofp %t16b : i32 to f32
        %f16c = arith.sitofp %t16c : i32 to f32
        %f18 = arith.sitofp %t18b : i32 to f32
        %f19 = arith.sitofp %t19 : i8 to f32
        %f20 = arith.sitofp %t20 : i32 to f32
        %f21 = arith.sitofp %t21 : i32 to f32
        %f22 = arith.uitofp %t22 : i8 to f32
        %f23 = arith.sitofp %lt : i1 to f32
        %f24 = arith.uitofp %lt : i1 to f32
        // -0.0 and +0.0: maximumf gives +0, minimumf -0 (1/x tells).
        %pz = arith.constant 0.0 : f32
        %nz = arith.constant -0.0 : f32
        %onef = arith.constant 1.0 : f32
        %mx = arith.maximumf %nz, %pz : f32
        %mn = arith.minimumf %pz, %nz : f32
        %imx = arith.divf %onef, %mx : f32
        %imn = arith.divf %onef, %mn : f32
        %mxPos = arith.cmpf ogt, %imx, %pz : f32
        %mnNeg = arith.cmpf olt, %imn, %pz : f32
        %f25 = arith.uitofp %mxPos : i1 to f32
        %f26 = arith.uitofp %mnNeg : i1 to f32
        // NaN: maxnumf and minnumf drop it, maximumf keeps it.
        %nan = arith.divf %pz, %pz : f32
        %mnum = arith.maxnumf %nan, %onef : f32
        %mnum2 = arith.minnumf %onef, %nan : f32
        %mxnan = arith.maximumf %nan, %onef : f32
        %isNaN = arith.cmpf uno, %mxnan, %mxnan : f32
        %f27 = arith.uitofp %isNaN : i1 to f32
        %half = arith.constant 0.5 : f32
        %f28 = math.fma %q1f, %half, %mnum : f32
        %f29 = arith.subf %mnum2, %onef : f32
        // The terms, summed and scaled into a bias.
        %a1 = arith.addf %f1, %f2 : f32
        %a2 = arith.addf %a1, %f3 : f32
        %a3 = arith.addf %a2, %f4 : f32
        %a4 = arith.addf %a3, %f5 : f32
        %a5 = arith.addf %a4, %f6 : f32
        %a6 = arith.addf %a5, %f7 : f32
        %a7 = arith.addf %a6, %f8 : f32
        %a8 = arith.addf %a7, %f9 : f32
        %a9 = arith.addf %a8, %f10 : f32
        %a10 = arith.addf %a9, %f11 : f32
        %a11 = arith.addf %a10, %f12 : f32
        %a12 = arith.addf %a11, %f13 : f32
        %a13 = arith.addf %a12, %f14 : f32
        %a14 = arith.addf %a13, %f15 : f32
        %a15 = arith.addf %a14, %f16 : f32
        %a16 = arith.addf %a15, %f16b : f32
        %a17 = arith.addf %a16, %f16c : f32
        %a18 = arith.addf %a17, %f18 : f32
        %a19 = arith.addf %a18, %f19 : f32
        %a20 = arith.addf %a19, %f20 : f32
        %a21 = arith.addf %a20, %f21 : f32
        %a22 = arith.addf %a21, %f22 : f32
        %a23 = arith.addf %a22, %f23 : f32
        %a24 = arith.addf %a23, %f24 : f32
        %a25 = arith.addf %a24, %f25 : f32
        %a26 = arith.addf %a25, %f26 : f32
        %a27 = arith.addf %a26, %f27 : f32
        %a28 = arith.addf %a27, %f28 : f32
        %a29 = arith.addf %a28, %f29 : f32
        %scale = arith.constant 0.01 : f32
        %bias = arith.mulf %a29, %scale : f32
        %biased = arith.addf %s, %bias : f32
        attn.yield %biased : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        // floor((q - kv) / 4) >= -2: kv <= q + 8 (a window from negatives).
        %d = arith.subi %qi, %kv : index
        %c4 = arith.constant 4 : index
        %cm2 = arith.constant -2 : index
        %f = arith.floordivsi %d, %c4 : index
        %keep = arith.cmpi sge, %f, %cm2 : index
        attn.yield %keep : i1
      }
      -> tensor<1x2x?x16xf32>
  return %r : tensor<1x2x?x16xf32>
}

// Document ids of exactly M = N = 4 positions: the reference never evaluates
// the mask at a padding position (q >= M or kv >= N), where this would read
// past the ids.
func.func @exact_fit(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>,
                     %v: tensor<1x1x4x16xf32>, %o: tensor<1x1x4x16xf32>,
                     %doc: tensor<4xi32>) -> tensor<1x1x4x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32>)
      outs(%o : tensor<1x1x4x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %dq = tensor.extract %doc[%qi] : tensor<4xi32>
        %dk = tensor.extract %doc[%kv] : tensor<4xi32>
        %keep = arith.cmpi eq, %dq, %dk : i32
        attn.yield %keep : i1
      }
      -> tensor<1x1x4x16xf32>
  return %r : tensor<1x1x4x16xf32>
}
