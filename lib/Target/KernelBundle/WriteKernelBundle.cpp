//===- WriteKernelBundle.cpp - kernels and launch metadata to files -------===//
//
// The compiler/runtime split (as in IREE): the compiler writes an artifact
// that a small runtime, built without MLIR, loads and launches. Launch
// sizes are written as expression trees over the host function's argument
// sizes, so one bundle serves every problem size. The format is
// docs/Bundles.md; the runtime's reader (AttnRuntime/Bundle.h) is its only
// reader, and the bundle written here must load in it.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Target/KernelBundle/Passes.h"
#include "AttnDialect/Transforms/Computes.h"
#include "AttnDialect/Transforms/ShapeContract.h"
#include "AttnRuntime/Bundle.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FileSystem.h"
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

/// `value` as JSON text (strings quoted and escaped).
std::string json(const llvm::json::Value &value) {
  std::string text;
  llvm::raw_string_ostream(text) << value;
  return text;
}

std::string binary(StringRef op, const std::string &lhs,
                   const std::string &rhs) {
  return "{\"op\": \"" + op.str() + "\", \"lhs\": " + lhs +
         ", \"rhs\": " + rhs + "}";
}

std::string constant(int64_t value) {
  return "{\"const\": " + std::to_string(value) + "}";
}

/// The comparison of a cmpi predicate; sizes are non-negative, so signed
/// and unsigned compare alike.
StringRef comparison(arith::CmpIPredicate predicate) {
  switch (predicate) {
  case arith::CmpIPredicate::eq:
    return "eq";
  case arith::CmpIPredicate::ne:
    return "ne";
  case arith::CmpIPredicate::slt:
  case arith::CmpIPredicate::ult:
    return "lt";
  case arith::CmpIPredicate::sle:
  case arith::CmpIPredicate::ule:
    return "le";
  case arith::CmpIPredicate::sgt:
  case arith::CmpIPredicate::ugt:
    return "gt";
  case arith::CmpIPredicate::sge:
  case arith::CmpIPredicate::uge:
    return "ge";
  }
  return "";
}

/// Translates a host function's values into the bundle's JSON: integer
/// expression trees over its arguments' sizes, and kernel operands. Fails
/// for values the runtime could not compute.
class HostTranslator {
public:
  HostTranslator(func::FuncOp func, ArrayRef<std::string> argNames)
      : func(func), argNames(argNames) {}

  /// An integer expression for `value`.
  FailureOr<std::string> index(Value value) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return failure();
    auto binaryOf = [&](StringRef name, Value a,
                        Value b) -> FailureOr<std::string> {
      FailureOr<std::string> x = index(a), y = index(b);
      if (failed(x) || failed(y))
        return failure();
      return binary(name, *x, *y);
    };
    return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
        .Case([](arith::ConstantOp c) -> FailureOr<std::string> {
          // i1 true is 1, not -1.
          if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
            return constant(
                i.getType().isInteger(1)
                    ? static_cast<int64_t>(i.getValue().getZExtValue())
                    : i.getValue().getSExtValue());
          return failure();
        })
        .Case([](attn::MultiprocessorCountOp) -> FailureOr<std::string> {
          return std::string("{\"op\": \"sm_count\"}");
        })
        .Case([&](memref::DimOp dim) -> FailureOr<std::string> {
          std::optional<int64_t> index = dim.getConstantIndex();
          int64_t arg = argumentOf(dim.getSource());
          if (!index || arg < 0)
            return failure();
          return "{\"dim\": {\"arg\": " + json(argNames[arg]) +
                 ", \"index\": " + std::to_string(*index) + "}}";
        })
        .Case([&](arith::IndexCastOp o) {
          // Launch sizes are integers either way (shared memory bytes are i32).
          return index(o.getIn());
        })
        .Case([&](arith::AddIOp o) {
          return binaryOf("add", o.getLhs(), o.getRhs());
        })
        .Case([&](arith::SubIOp o) {
          return binaryOf("sub", o.getLhs(), o.getRhs());
        })
        .Case([&](arith::MulIOp o) {
          return binaryOf("mul", o.getLhs(), o.getRhs());
        })
        .Case([&](arith::DivUIOp o) {
          return binaryOf("div", o.getLhs(), o.getRhs());
        })
        .Case([&](arith::CeilDivUIOp o) {
          return binaryOf("ceildiv", o.getLhs(), o.getRhs());
        })
        .Case([&](arith::MinUIOp o) {
          return binaryOf("min", o.getLhs(), o.getRhs());
        })
        .Case([&](arith::MaxUIOp o) {
          return binaryOf("max", o.getLhs(), o.getRhs());
        })
        .Case([&](arith::CmpIOp o) {
          return binaryOf(comparison(o.getPredicate()), o.getLhs(), o.getRhs());
        })
        .Case([&](arith::SelectOp o) -> FailureOr<std::string> {
          FailureOr<std::string> cond = index(o.getCondition()),
                                 then = index(o.getTrueValue()),
                                 otherwise = index(o.getFalseValue());
          if (failed(cond) || failed(then) || failed(otherwise))
            return failure();
          return "{\"op\": \"select\", \"cond\": " + *cond +
                 ", \"then\": " + *then + ", \"else\": " + *otherwise + "}";
        })
        .Case([&](affine::AffineApplyOp apply) -> FailureOr<std::string> {
          SmallVector<std::string> operands;
          for (Value operand : apply.getMapOperands()) {
            FailureOr<std::string> e = index(operand);
            if (failed(e))
              return failure();
            operands.push_back(*e);
          }
          AffineMap map = apply.getAffineMap();
          return affine(map.getResult(0), map.getNumDims(), operands);
        })
        .Default([](Operation *) { return failure(); });
  }

  /// A kernel operand: an argument's buffer or tensor map, the workspace or
  /// the scratch buffer, an f32 constant or an integer.
  FailureOr<std::string> operand(Value value) {
    int64_t arg = argumentOf(value);
    if (arg >= 0)
      return "{\"kind\": \"buffer\", \"arg\": " + json(argNames[arg]) + "}";
    if (auto workspace = value.getDefiningOp<attn::WorkspaceOp>())
      return std::string(workspace.getScratch() ? "{\"kind\": \"scratch\"}"
                                                : "{\"kind\": \"workspace\"}");
    if (auto map = value.getDefiningOp<attn::TensorMapOp>()) {
      int64_t source = argumentOf(map.getSource());
      if (source < 0)
        return failure();
      std::string box;
      for (int64_t size : map.getBox())
        box += (box.empty() ? "" : ", ") + std::to_string(size);
      return "{\"kind\": \"tensor_map\", \"arg\": " + json(argNames[source]) +
             ", \"box\": [" + box + "]}";
    }
    if (auto c = value.getDefiningOp<arith::ConstantOp>())
      if (auto f = dyn_cast<FloatAttr>(c.getValue())) {
        if (!f.getType().isF32())
          return failure();
        return "{\"kind\": \"f32\", \"value\": " + f32(f.getValue()) + "}";
      }
    FailureOr<std::string> e = index(value);
    if (failed(e))
      return failure();
    return "{\"kind\": \"int\", \"value\": " + *e + "}";
  }

private:
  int64_t argumentOf(Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != &func.getBody().front())
      return -1;
    return arg.getArgNumber();
  }

  /// The shortest text that reads back as the same f32 (the runtime parses
  /// it as f32), or "inf", "-inf", "nan".
  static std::string f32(const APFloat &value) {
    if (value.isNaN())
      return "\"nan\"";
    if (value.isInfinity())
      return value.isNegative() ? "\"-inf\"" : "\"inf\"";
    SmallString<32> text;
    value.toString(text, /*FormatPrecision=*/0, /*FormatMaxPadding=*/0);
    return text.str().str();
  }

  /// An affine expression's tree: the forms tiling produces ((s1 - s0)
  /// ceildiv c, s0 floordiv c, sums and products with constants).
  std::string affine(AffineExpr expr, unsigned numDims,
                     ArrayRef<std::string> operands) {
    if (auto c = dyn_cast<AffineConstantExpr>(expr))
      return constant(c.getValue());
    if (auto d = dyn_cast<AffineDimExpr>(expr))
      return operands[d.getPosition()];
    if (auto s = dyn_cast<AffineSymbolExpr>(expr))
      return operands[numDims + s.getPosition()];
    auto b = cast<AffineBinaryOpExpr>(expr);
    StringRef name = b.getKind() == AffineExprKind::Add        ? "add"
                     : b.getKind() == AffineExprKind::Mul      ? "mul"
                     : b.getKind() == AffineExprKind::FloorDiv ? "floordiv"
                     : b.getKind() == AffineExprKind::CeilDiv  ? "ceildiv"
                                                               : "mod";
    return binary(name, affine(b.getLHS(), numDims, operands),
                  affine(b.getRHS(), numDims, operands));
  }

  func::FuncOp func;
  ArrayRef<std::string> argNames;
};

/// An attribute of attn.computes as JSON.
llvm::json::Value attributeJson(Attribute attr) {
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute field : dict)
      object[field.getName().strref()] = attributeJson(field.getValue());
    return object;
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array list;
    for (Attribute element : array)
      list.push_back(attributeJson(element));
    return list;
  }
  if (auto text = dyn_cast<StringAttr>(attr))
    return text.str();
  if (auto flag = dyn_cast<BoolAttr>(attr))
    return flag.getValue();
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getInt();
  if (auto number = dyn_cast<FloatAttr>(attr))
    return number.getValueAsDouble();
  return nullptr;
}

/// Writes bundle.json by hand (llvm::json::OStream) so that each launch
/// expression stays on one line.
class BundleJsonWriter {
public:
  explicit BundleJsonWriter(llvm::raw_ostream &os) : out(os, /*Indent=*/2) {}

  llvm::json::OStream out;

  void expressions(StringRef key, ArrayRef<std::string> values) {
    out.attributeArray(key, [&] {
      for (const std::string &value : values)
        out.rawValue(value);
    });
  }
};

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

  /// A launch's entry, or failure (reported on the launch).
  LogicalResult writeLaunch(BundleJsonWriter &w, HostTranslator &host,
                            gpu::LaunchFuncOp launch) {
    auto cannot = [&](StringRef what) {
      return launch.emitOpError()
             << "has " << what
             << " the bundle cannot describe in terms of the function's "
                "arguments";
    };
    auto indices = [&](ValueRange values, SmallVector<std::string> &out) {
      for (Value v : values) {
        FailureOr<std::string> e = host.index(v);
        if (failed(e))
          return failure();
        out.push_back(*e);
      }
      return success();
    };
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    SmallVector<std::string> grids, blocks, shared, operands;
    if (failed(indices({grid.x, grid.y, grid.z}, grids)) ||
        failed(indices({block.x, block.y, block.z}, blocks)))
      return cannot("a launch size");
    // Dynamic shared memory per block, 0 when the kernel has none.
    if (Value bytes = launch.getDynamicSharedMemorySize()) {
      if (failed(indices({bytes}, shared)))
        return cannot("dynamic shared memory");
    } else {
      shared.push_back(constant(0));
    }
    // Bytes of the runtime's zeroed workspace and of its scratch buffer
    // that the launch needs, 0 when it takes none; one operand of each at
    // most, as the runtime has one of each.
    std::string bufferBytes[2] = {constant(0), constant(0)};
    SmallVector<attn::WorkspaceOp> buffers[2];
    for (Value operand : launch.getKernelOperands())
      if (auto workspace = operand.getDefiningOp<attn::WorkspaceOp>())
        buffers[workspace.getScratch()].push_back(workspace);
    for (int scratch : {0, 1}) {
      if (buffers[scratch].empty())
        continue;
      if (buffers[scratch].size() > 1)
        return launch.emitOpError()
               << "takes " << buffers[scratch].size() << " attn.workspace"
               << (scratch ? " scratch" : "")
               << " buffers; the runtime has one";
      FailureOr<std::string> words = host.index(buffers[scratch][0].getWords());
      if (failed(words))
        return cannot("a workspace size");
      bufferBytes[scratch] = binary("mul", *words, constant(4));
    }
    for (Value v : launch.getKernelOperands()) {
      FailureOr<std::string> o = host.operand(v);
      if (failed(o))
        return cannot("a kernel operand");
      operands.push_back(*o);
    }
    w.out.object([&] {
      w.out.attribute("module", launch.getKernelModuleName().getValue());
      w.out.attribute("kernel", launch.getKernelName().getValue());
      w.expressions("grid", grids);
      w.expressions("block", blocks);
      w.out.attributeBegin("shared_memory_bytes");
      w.out.rawValue(shared[0]);
      w.out.attributeEnd();
      w.out.attributeBegin("workspace_bytes");
      w.out.rawValue(bufferBytes[0]);
      w.out.attributeEnd();
      w.out.attributeBegin("scratch_bytes");
      w.out.rawValue(bufferBytes[1]);
      w.out.attributeEnd();
      w.expressions("operands", operands);
    });
    return success();
  }

  /// The function's entry, or failure (reported).
  LogicalResult writeFunction(BundleJsonWriter &w, func::FuncOp func) {
    FailureOr<attn_runtime::ShapeContract> contract;
    if (auto attr =
            func->getAttrOfType<DictionaryAttr>(kShapeContractAttrName)) {
      contract = shapeContractFromAttr(func, attr);
      if (failed(contract))
        return func.emitOpError()
               << "has a malformed " << kShapeContractAttrName;
    }
    // Launch operands name arguments: the contract's names where they are
    // unique, else "argument N".
    SmallVector<std::string> names;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      std::string name = "argument " + std::to_string(i);
      if (succeeded(contract) && !contract->argNames[i].empty() &&
          !llvm::is_contained(names, contract->argNames[i]))
        name = contract->argNames[i];
      names.push_back(name);
    }
    HostTranslator host(func, names);
    auto args = [&]() -> LogicalResult {
      for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
        // A named copy: lambdas may not capture structured bindings in C++17.
        size_t i = index;
        auto memref = dyn_cast<MemRefType>(type);
        std::string dtype;
        if (memref)
          llvm::raw_string_ostream(dtype) << memref.getElementType();
        if (!memref || !memref.getLayout().isIdentity() ||
            memref.getMemorySpace() || !attn_runtime::dtypeBytes(dtype))
          return func.emitOpError()
                 << "argument " << i << " has type " << type
                 << ", which a kernel bundle cannot pass (a memref of f16, "
                    "bf16, f32, f64, i1, i8, i16, i32, i64 or index with the "
                    "default layout and memory space)";
        w.out.object([&] {
          w.out.attribute("name", names[i]);
          w.out.attribute("dtype", dtype);
          w.out.attributeArray("shape", [&] {
            for (int64_t size : memref.getShape())
              if (ShapedType::isDynamic(size))
                w.out.value(nullptr);
              else
                w.out.value(size);
          });
        });
      }
      return success();
    };
    LogicalResult result = success();
    w.out.object([&] {
      w.out.attribute("name", func.getName());
      w.out.attributeBegin("args");
      w.out.arrayBegin();
      result = args();
      w.out.arrayEnd();
      w.out.attributeEnd();
      if (auto computes = func->getAttrOfType<ArrayAttr>(kComputesAttrName))
        w.out.attribute("computes", attributeJson(computes));
      if (succeeded(contract)) {
        w.out.attributeObject("shape_contract", [&] {
          w.out.attributeArray("constraints", [&] {
            for (const attn_runtime::ShapeConstraint &c :
                 contract->constraints) {
              llvm::json::Object entry{
                  {"kind", attn_runtime::ShapeConstraint::kindName(c.kind)},
                  {"lhs", llvm::json::Array{c.lhs.arg, c.lhs.dim}},
                  {"what", c.what}};
              if (c.rhsValue)
                entry["rhs_value"] = *c.rhsValue;
              else
                entry["rhs"] = llvm::json::Array{c.rhs.arg, c.rhs.dim};
              if (c.rhsBlock != 1)
                entry["rhs_block"] = c.rhsBlock;
              w.out.value(std::move(entry));
            }
          });
        });
      }
      w.out.attributeBegin("launches");
      w.out.arrayBegin();
      func.walk([&](gpu::LaunchFuncOp launch) {
        if (succeeded(result))
          result = writeLaunch(w, host, launch);
      });
      w.out.arrayEnd();
      w.out.attributeEnd();
    });
    return result;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string json;
    llvm::raw_string_ostream os(json);
    BundleJsonWriter w(os);
    bool failedAny = false;
    w.out.objectBegin();
    w.out.attribute("format", attn_runtime::kBundleFormat);
    w.out.attribute("version", attn_runtime::kBundleVersion);
    w.out.attributeBegin("binaries");
    w.out.arrayBegin();
    for (auto binary : module.getOps<gpu::BinaryOp>())
      if (failed(writeBinary(w, binary))) {
        failedAny = true;
        break;
      }
    w.out.arrayEnd();
    w.out.attributeEnd();
    w.out.attributeBegin("functions");
    w.out.arrayBegin();
    for (auto func : module.getOps<func::FuncOp>()) {
      bool launches = false;
      func.walk([&](gpu::LaunchFuncOp) { launches = true; });
      if (failedAny || !launches)
        continue;
      failedAny = failed(writeFunction(w, func));
    }
    w.out.arrayEnd();
    w.out.attributeEnd();
    w.out.objectEnd();
    os << "\n";
    if (failedAny)
      return signalPassFailure();

    // One format, one reader: what this writes must load in the runtime.
    attn_runtime::Bundle loaded;
    std::string error;
    std::string directory = llvm::sys::path::parent_path(prefix).str();
    if (!attn_runtime::Bundle::parse(json, directory, loaded, error,
                                     prefix + "bundle.json")) {
      module.emitError() << "attn-write-kernel-bundle: the runtime cannot "
                            "load the bundle: "
                         << error;
      return signalPassFailure();
    }
    if (failed(writeFile(prefix + "bundle.json", json)))
      return signalPassFailure();
  }

  LogicalResult writeBinary(BundleJsonWriter &w, gpu::BinaryOp binary) {
    if (binary.getObjects().size() != 1)
      return binary.emitOpError() << "must hold exactly one object (one "
                                     "target)";
    auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    bool isPtx = object.getFormat() == gpu::CompilationTarget::Assembly;
    if (!isPtx && object.getFormat() != gpu::CompilationTarget::Binary)
      return binary.emitOpError() << "holds a format the runtime cannot "
                                     "load; use format=isa or format=bin";
    // The name becomes a file name next to bundle.json: nothing that could
    // leave the bundle's directory (the runtime loads only plain names, too).
    StringRef name = binary.getName();
    if (name.empty() || name.starts_with(".") ||
        !llvm::all_of(name, [](char c) {
          return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.' ||
                 c == '$';
        }))
      return binary.emitOpError()
             << "has a name that cannot be a file name in the bundle (use "
                "letters, digits, '_', '-', '.' and '$', not starting with "
                "'.')";
    std::string file = prefix + name.str() + (isPtx ? ".ptx" : ".cubin");
    if (failed(writeFile(file, object.getObject().getValue())))
      return failure();
    std::string target;
    llvm::raw_string_ostream(target) << object.getTarget();
    w.out.object([&] {
      w.out.attribute("name", name);
      w.out.attribute("file", llvm::sys::path::filename(file));
      w.out.attribute("format", isPtx ? "ptx" : "cubin");
      w.out.attribute("target", target);
    });
    return success();
  }
};

} // namespace
