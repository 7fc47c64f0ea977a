// Region ops whose result is undefined for some position: attn-run's
// reference names the op and the position (reference-undefined.test).

// q / (q - kv): kv = q divides by zero.
func.func @divui_zero(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %d = arith.subi %qi, %kv : index
        %x = arith.divui %qi, %d : index
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// INT32_MIN rem -1 overflows (x86 idiv traps).
func.func @remsi_i32_min(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %min = arith.constant -2147483648 : i32
        %m1 = arith.constant -1 : i32
        %x = arith.remsi %min, %m1 : i32
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// INT16_MIN ceildiv -1 overflows.
func.func @ceildivsi_i16_min(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %min = arith.constant -32768 : i16
        %m1 = arith.constant -1 : i16
        %x = arith.ceildivsi %min, %m1 : i16
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// floordiv by kv: kv = 0 divides by zero.
func.func @floordivsi_zero(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %qi8 = arith.index_cast %qi : index to i8
        %kv8 = arith.index_cast %kv : index to i8
        %x = arith.floordivsi %qi8, %kv8 : i8
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// 1 << (kv + 30) in i32: poison from kv = 2 on.
func.func @shli_width(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %one = arith.constant 1 : i32
        %kv32 = arith.index_cast %kv : index to i32
        %c30 = arith.constant 30 : i32
        %amount = arith.addi %kv32, %c30 : i32
        %x = arith.shli %one, %amount : i32
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// A shift by -1, read unsigned: poison.
func.func @shrsi_negative(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %one = arith.constant 1 : i64
        %m1 = arith.constant -1 : i64
        %x = arith.shrsi %one, %m1 : i64
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// INT64_MAX + q with nsw: poison from q = 1 on.
func.func @addi_nsw(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %max = arith.constant 9223372036854775807 : i64
        %q64 = arith.index_cast %qi : index to i64
        %x = arith.addi %max, %q64 overflow<nsw> : i64
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// Truncating 256 to i8 with nuw: poison.
func.func @trunci_nuw(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %big = arith.constant 256 : i32
        %x = arith.trunci %big overflow<nuw> : i32 to i8
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// 7 / 2 marked exact: poison.
func.func @divsi_exact(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %seven = arith.constant 7 : i32
        %two = arith.constant 2 : i32
        %x = arith.divsi %seven, %two exact : i32
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// fptosi of NaN: poison.
func.func @fptosi_nan(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %zero = arith.constant 0.0 : f32
        %nan = arith.divf %zero, %zero : f32
        %x = arith.fptosi %nan : f32 to i32
        attn.yield %s : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// fptoui of -1.5: poison.
func.func @fptoui_negative(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %c = arith.constant -1.5 : f32
        %x = arith.fptoui %c : f32 to i32
        attn.yield %s : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// fptosi of 3e9 to i32: poison.
func.func @fptosi_large(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %c = arith.constant 3.0e9 : f32
        %x = arith.fptosi %c : f32 to i32
        attn.yield %s : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// A NaN result with fastmath<nnan>: poison.
func.func @nnan(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %zero = arith.constant 0.0 : f32
        %nan = arith.divf %zero, %zero fastmath<nnan> : f32
        attn.yield %s : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// Reads index kv - 1 of a captured tensor: -1 at kv = 0.
func.func @extract_negative(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>, %bias: tensor<?xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %c1 = arith.constant 1 : index
        %i = arith.subi %kv, %c1 : index
        %x = tensor.extract %bias[%i] : tensor<?xf32>
        %y = arith.addf %s, %x : f32
        attn.yield %y : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// Reads document ids [kv] of a static tensor of 3: past its end at kv = 3.
func.func @extract_past_end(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>, %doc: tensor<3xi32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %d = tensor.extract %doc[%kv] : tensor<3xi32>
        %c0 = arith.constant 0 : i32
        %keep = arith.cmpi sge, %d, %c0 : i32
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// Uses a value computed above the region that is not a constant.
func.func @from_above(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
    %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %k, %c2 : tensor<1x1x?x16xf32>
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %keep = arith.cmpi ult, %kv, %n : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
