//===- WriteKernelBundle.cpp - kernels and launch metadata to files -------===//
//
// The compiler/runtime split (as in IREE): the compiler writes an artifact
// that a small runtime, built without MLIR, loads and launches. Launch
// sizes are written as expressions over the host function's arguments, so
// one bundle serves every problem size.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Target/KernelBundle/Passes.h"
#include "AttnDialect/Transforms/ShapeContract.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::attn {
#define GEN_PASS_DEF_WRITEKERNELBUNDLE
#include "AttnDialect/Target/KernelBundle/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Prints `value` as an expression over the function's arguments, or fails
/// for values the runtime could not compute.
FailureOr<std::string> expression(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      return "%arg" + std::to_string(arg.getArgNumber());
    return failure();
  }
  Operation *op = value.getDefiningOp();
  auto binary = [&](StringRef name, Value a,
                    Value b) -> FailureOr<std::string> {
    FailureOr<std::string> x = expression(a), y = expression(b);
    if (failed(x) || failed(y))
      return failure();
    return (name + "(" + *x + ", " + *y + ")").str();
  };
  return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([](arith::ConstantOp c) -> FailureOr<std::string> {
        if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
          return std::to_string(i.getValue().getSExtValue());
        if (auto f = dyn_cast<FloatAttr>(c.getValue())) {
          // Exact: the runtime passes the bits it parses back.
          SmallString<32> text;
          f.getValue().toString(text, /*FormatPrecision=*/0,
                                /*FormatMaxPadding=*/0);
          std::string type;
          llvm::raw_string_ostream(type) << f.getType();
          return type + "(" + text.str().str() + ")";
        }
        return failure();
      })
      .Case([](attn::WorkspaceOp) -> FailureOr<std::string> {
        return std::string("workspace");
      })
      .Case([](attn::MultiprocessorCountOp) -> FailureOr<std::string> {
        return std::string("sm_count");
      })
      .Case([&](memref::DimOp dim) -> FailureOr<std::string> {
        std::optional<int64_t> index = dim.getConstantIndex();
        FailureOr<std::string> source = expression(dim.getSource());
        if (!index || failed(source))
          return failure();
        return "dim(" + *source + ", " + std::to_string(*index) + ")";
      })
      .Case([&](arith::IndexCastOp o) {
        // Launch sizes are integers either way (shared memory bytes are i32).
        return expression(o.getIn());
      })
      .Case([&](arith::AddIOp o) {
        return binary("add", o.getLhs(), o.getRhs());
      })
      .Case([&](arith::SubIOp o) {
        return binary("sub", o.getLhs(), o.getRhs());
      })
      .Case([&](arith::MulIOp o) {
        return binary("mul", o.getLhs(), o.getRhs());
      })
      .Case([&](arith::DivUIOp o) {
        return binary("div", o.getLhs(), o.getRhs());
      })
      .Case([&](arith::CeilDivUIOp o) {
        return binary("ceildiv", o.getLhs(), o.getRhs());
      })
      .Case([&](arith::MinUIOp o) {
        return binary("min", o.getLhs(), o.getRhs());
      })
      .Case([&](arith::MaxUIOp o) {
        return binary("max", o.getLhs(), o.getRhs());
      })
      .Case([&](affine::AffineApplyOp apply) -> FailureOr<std::string> {
        // Only the forms tiling produces: (s1 - s0) ceildiv c, s0 floordiv c,
        // and sums and products with constants, printed as map + operands.
        SmallVector<std::string> operands;
        for (Value operand : apply.getMapOperands()) {
          FailureOr<std::string> e = expression(operand);
          if (failed(e))
            return failure();
          operands.push_back(*e);
        }
        std::string text;
        llvm::raw_string_ostream os(text);
        os << "affine(" << apply.getAffineMap() << ", [";
        llvm::interleaveComma(operands, os);
        os << "])";
        return text;
      })
      .Default([](Operation *) { return failure(); });
}

struct WriteKernelBundlePass
    : attn::impl::WriteKernelBundleBase<WriteKernelBundlePass> {
  using WriteKernelBundleBase::WriteKernelBundleBase;

  LogicalResult writeFile(const std::string &path, StringRef contents) {
    std::error_code error;
    llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_None);
    if (error)
      return getOperation().emitError()
             << "attn-write-kernel-bundle: cannot write '" << path
             << "': " << error.message();
    os << contents;
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::json::Array binaries;
    for (auto binary : module.getOps<gpu::BinaryOp>()) {
      if (binary.getObjects().size() != 1) {
        binary.emitOpError() << "must hold exactly one object (one target)";
        return signalPassFailure();
      }
      auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
      bool isPtx = object.getFormat() == gpu::CompilationTarget::Assembly;
      if (!isPtx && object.getFormat() != gpu::CompilationTarget::Binary) {
        binary.emitOpError() << "holds a format the runtime cannot load; use "
                                "format=isa or format=bin";
        return signalPassFailure();
      }
      // The name becomes a file name next to bundle.json: nothing that
      // could leave the bundle's directory (the runtime loads only plain
      // names, too).
      StringRef name = binary.getName();
      if (name.empty() || name.starts_with(".") ||
          !llvm::all_of(name, [](char c) {
            return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.' ||
                   c == '$';
          })) {
        binary.emitOpError()
            << "has a name that cannot be a file name in the bundle (use "
               "letters, digits, '_', '-', '.' and '$', not starting with "
               "'.')";
        return signalPassFailure();
      }
      std::string file = prefix + name.str() + (isPtx ? ".ptx" : ".cubin");
      if (failed(writeFile(file, object.getObject().getValue())))
        return signalPassFailure();
      std::string target;
      llvm::raw_string_ostream(target) << object.getTarget();
      binaries.push_back(
          llvm::json::Object{{"name", binary.getName()},
                             {"file", llvm::sys::path::filename(file).str()},
                             {"format", isPtx ? "ptx" : "cubin"},
                             {"target", target}});
    }

    llvm::json::Array functions;
    for (auto func : module.getOps<func::FuncOp>()) {
      llvm::json::Array launches;
      bool failedExpression = false;
      func.walk([&](gpu::LaunchFuncOp launch) {
        auto all = [&](ValueRange values) {
          llvm::json::Array out;
          for (Value v : values) {
            FailureOr<std::string> e = expression(v);
            if (failed(e)) {
              launch.emitOpError()
                  << "has a launch operand the bundle cannot describe as an "
                     "expression over the function's arguments";
              failedExpression = true;
              return out;
            }
            out.push_back(*e);
          }
          return out;
        };
        // Dynamic shared memory per block, "0" when the kernel has none.
        llvm::json::Value sharedBytes("0");
        if (Value shared = launch.getDynamicSharedMemorySize()) {
          llvm::json::Array bytes = all({shared});
          if (bytes.empty())
            return;
          sharedBytes = std::move(bytes[0]);
        }
        // Bytes of the runtime's zeroed workspace that the launch needs,
        // "0" when it takes none; one workspace operand at most, as the
        // runtime has one.
        llvm::json::Value workspaceBytes("0");
        SmallVector<attn::WorkspaceOp> workspaces;
        for (Value operand : launch.getKernelOperands())
          if (auto workspace = operand.getDefiningOp<attn::WorkspaceOp>())
            workspaces.push_back(workspace);
        if (workspaces.size() > 1) {
          launch.emitOpError()
              << "takes " << workspaces.size()
              << " attn.workspace buffers; the runtime has one";
          failedExpression = true;
          return;
        }
        if (!workspaces.empty()) {
          llvm::json::Array words = all({workspaces[0].getWords()});
          if (words.empty())
            return;
          workspaceBytes = ("mul(" + *words[0].getAsString() + ", 4)").str();
        }
        gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
        gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
        launches.push_back(llvm::json::Object{
            {"module", launch.getKernelModuleName().getValue()},
            {"kernel", launch.getKernelName().getValue()},
            {"grid", all({grid.x, grid.y, grid.z})},
            {"block", all({block.x, block.y, block.z})},
            {"shared_memory_bytes", sharedBytes},
            {"workspace_bytes", workspaceBytes},
            {"operands", all(launch.getKernelOperands())}});
      });
      if (failedExpression)
        return signalPassFailure();
      if (launches.empty())
        continue;
      llvm::json::Array args;
      for (Type type : func.getArgumentTypes()) {
        std::string text;
        llvm::raw_string_ostream(text) << type;
        args.push_back(text);
      }
      llvm::json::Object entry{{"name", func.getName()},
                               {"args", std::move(args)},
                               {"launches", std::move(launches)}};
      if (auto attr =
              func->getAttrOfType<DictionaryAttr>(kShapeContractAttrName)) {
        FailureOr<attn_runtime::ShapeContract> contract =
            shapeContractFromAttr(func, attr);
        if (failed(contract)) {
          func.emitOpError() << "has a malformed " << kShapeContractAttrName;
          return signalPassFailure();
        }
        llvm::json::Array constraints;
        for (const attn_runtime::ShapeConstraint &c : contract->constraints)
          constraints.push_back(llvm::json::Object{
              {"kind", attn_runtime::ShapeConstraint::kindName(c.kind)},
              {"lhs", llvm::json::Array{c.lhs.arg, c.lhs.dim}},
              {"rhs", llvm::json::Array{c.rhs.arg, c.rhs.dim}},
              {"what", c.what}});
        llvm::json::Array names;
        for (const std::string &name : contract->argNames)
          names.push_back(name);
        entry["shape_contract"] =
            llvm::json::Object{{"names", std::move(names)},
                               {"constraints", std::move(constraints)}};
      }
      functions.push_back(std::move(entry));
    }

    std::string json;
    llvm::raw_string_ostream os(json);
    os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                     {"version", 1},
                                     {"binaries", std::move(binaries)},
                                     {"functions", std::move(functions)}}));
    os << "\n";
    if (failed(writeFile(prefix + "bundle.json", json)))
      return signalPassFailure();
  }
};

} // namespace
