"""Compiled CPU kernels with bounds checks (compile_cpu's default): what a
region does wrong is an error after the call, naming the region, the
argument and the index, never a crash."""

import numpy as np
import pytest

import attn
from conftest import needs_compiler

pytestmark = needs_compiler

T = "tensor<1x1x?x16xf32>"


def kernel_of(region):
    return attn.compile_cpu(attn.Module.parse(f"""
    func.func @f(%q: {T}, %k: {T}, %v: {T}, %o: {T},
                 %c: tensor<?xf32>) -> {T} {{
      %r = attn.attention ins(%q, %k, %v : {T}, {T}, {T}) outs(%o : {T})
          {region} -> {T}
      return %r : {T}
    }}"""))


def call(kernel, capture):
    q = np.ones((1, 1, 4, 16), np.float32)
    out = np.full_like(q, np.nan)
    kernel(q, q, q, out, np.asarray(capture, np.float32))
    return out


def test_read_of_an_empty_capture():
    kernel = kernel_of("""score_mod {
          ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
            %x = tensor.extract %c[%j] : tensor<?xf32>
            attn.yield %x : f32
          }""")
    # The contract ties %c to the kv length (indexed by kv).
    with pytest.raises(ValueError, match="argument 4 dim 0"):
        call(kernel, [])
    assert np.isfinite(call(kernel, [0, 1, 2, 3])).all()


def test_division_by_zero_in_a_mask():
    kernel = kernel_of("""mask_mod {
          ^bb0(%b: index, %h: index, %i: index, %j: index):
            %r0 = arith.remui %i, %j : index
            %c0 = arith.constant 0 : index
            %keep = arith.cmpi eq, %r0, %c0 : index
            attn.yield %keep : i1
          }""")
    with pytest.raises(RuntimeError, match="mask_mod divides 0 by zero"):
        call(kernel, [0])


def test_signed_overflow_in_a_division():
    kernel = kernel_of("""mask_mod {
          ^bb0(%b: index, %h: index, %i: index, %j: index):
            %min = arith.constant -9223372036854775808 : i64
            %m1 = arith.constant -1 : i64
            %one = arith.constant 1 : i64
            %jj = arith.index_cast %j : index to i64
            %d = arith.subi %m1, %jj : i64
            %e = arith.addi %d, %jj : i64
            %x = arith.divsi %min, %e : i64
            %keep = arith.cmpi ne, %x, %one : i64
            attn.yield %keep : i1
          }""")
    with pytest.raises(RuntimeError, match="by -1, which overflows"):
        call(kernel, [0])
