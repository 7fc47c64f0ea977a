//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

// One file per family of ops; the order here is the order of the generated
// docs.
include "AttnDialect/IR/AttentionOps.td"
include "AttnDialect/IR/SoftmaxOps.td"
include "AttnDialect/IR/BlockMaskOps.td"
include "AttnDialect/IR/HostOps.td"

//===----------------------------------------------------------------------===//
// attn.yield
//===----------------------------------------------------------------------===//

def Attn_YieldOp : Attn_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["AttentionOp", "AttentionGradOp", "CreateBlockMaskOp"]>]> {
  let summary = "yields the value of a score_mod or mask_mod region";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing to build */ }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // ATTN_OPS_TD
