//===- ForallMapping.h - GPU mapping attributes of scf.forall ---*- C++ -*-===//
//
// Shared by the passes that prepare or perform the mapping of scf.forall
// loops to GPU blocks and threads.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_TRANSFORMS_FORALLMAPPING_H
#define ATTN_LIB_TRANSFORMS_FORALLMAPPING_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::attn {

/// Whether `forall` has a mapping made only of `MappingAttrs`.
template <typename... MappingAttrs> bool isMappedTo(scf::ForallOp forall) {
  std::optional<ArrayAttr> mapping = forall.getMapping();
  return mapping && !mapping->empty() &&
         llvm::all_of(*mapping, [](Attribute attr) {
           return isa<MappingAttrs...>(attr);
         });
}

/// Whether `op` is inside an scf.forall mapped to one of `MappingAttrs`.
template <typename... MappingAttrs> bool isInsideForallMappedTo(Operation *op) {
  for (auto forall = op->getParentOfType<scf::ForallOp>(); forall;
       forall = forall->getParentOfType<scf::ForallOp>())
    if (isMappedTo<MappingAttrs...>(forall))
      return true;
  return false;
}

} // namespace mlir::attn

#endif // ATTN_LIB_TRANSFORMS_FORALLMAPPING_H
