//===- RegionProgram.h - a score_mod or mask_mod region as data -*- C++ -*-===//
//
// Translates a region of attn.attention into the runtime's RegionProgram
// (AttnRuntime/Region.h): the form kernel bundles record and attn-run's
// and attn-bundle-run's float64 references evaluate, with the same
// semantics, without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_REGIONPROGRAM_H
#define ATTNDIALECT_TRANSFORMS_REGIONPROGRAM_H

#include "AttnRuntime/Region.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Region.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace mlir::attn {

/// The program of `region` (called `name`, score_mod or mask_mod, in
/// messages). `argumentNumber` gives the function argument a tensor that
/// tensor.extract reads is, or -1 when it is none. Fails with the first op
/// the program cannot hold: an op other than arith, math and tensor.extract
/// of a function argument, a non-scalar or unknown type, or a value from
/// above the region that is not an arith.constant.
llvm::Expected<attn_runtime::RegionProgram>
translateRegion(Region &region, StringRef name,
                llvm::function_ref<int64_t(Value)> argumentNumber);

/// The program as the attribute that attn.computes records (the kernel
/// bundle's "program", docs/Bundles.md).
DictionaryAttr regionProgramAttr(const attn_runtime::RegionProgram &program,
                                 MLIRContext *context);

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_REGIONPROGRAM_H
