"""Python mask_mod and score_mod functions as attn regions.

FlexAttention's mods are Python functions: ``score_mod(score, b, h, q_idx,
kv_idx)`` returns the score to use, ``mask_mod(b, h, q_idx, kv_idx)``
whether to keep it. ``trace`` runs each once on symbolic values that record
what it computes: arithmetic (``+ - * / // %``, unary minus, ``abs``),
comparisons, ``& | ^ ~``, ``**`` by a small int, and the functions of
numpy or torch that have an attn op (``where``, ``tanh``, ``exp``,
``exp2``, ``log``, ``sqrt``, ``abs``, ``minimum``, ``maximum``, ``clamp``
or ``clip``,
``logical_and/or/not``; as tensor methods too, with ``float()`` and
``to(dtype)``). Arrays the function reads from its closure or its module's
globals (numpy arrays, torch tensors: float32, int32 or int64), and torch
tensors read in the functions it calls, become captured arguments of the
kernel, of dynamic sizes, read in place at every call, so neither a changed
value nor a changed size needs a recompile. Python control flow on a
traced value, or an op attn cannot lower, raises a TraceError (a TypeError)
naming the function, the line and the op.

Integer ``//`` and ``%`` follow Python (floor division, the divisor's sign);
``/`` divides as floats. Mixing integers and floats converts the integers
to float32, as the region computes in float32.
"""

import traceback
import types

__all__ = ["TraceError", "Traced", "trace"]


class TraceError(TypeError):
    """A mod that attn cannot trace: raised naming the function, the line
    and what it did."""


_FLOAT, _INDEX, _BOOL = "f32", "index", "i1"
_INTS = (_INDEX, "i32", "i64")
_ELEMENT_TYPES = {"float32": "f32", "int32": "i32", "int64": "i64"}
_CMPI = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq",
         "ne": "ne"}
_CMPF = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq",
         "ne": "une"}
_UNARY = {"tanh": "math.tanh", "exp": "math.exp", "exp2": "math.exp2",
          "log": "math.log", "sqrt": "math.sqrt"}


class _Region:
    """The ops of one region, in order, for the function being traced."""

    def __init__(self, fn, captures):
        self.fn = fn
        self.captures = captures
        self.lines = []
        self.count = 0

    def fail(self, what):
        """A TraceError at the innermost line of the traced function."""
        code = getattr(self.fn, "__code__", None)
        line = next((frame.lineno for frame in
                     reversed(traceback.extract_stack())
                     if code and frame.filename == code.co_filename
                     and code.co_firstlineno <= frame.lineno), None)
        where = f" (line {line})" if line else ""
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        raise TraceError(f"attn: {name}{where}: {what}")

    def op(self, text, type_):
        name = f"%v{self.count}"
        self.count += 1
        self.lines.append(f"        {name} = {text}")
        return Value(self, name, type_)

    def constant(self, value, type_):
        if type_ == _BOOL:
            return self.op(f"arith.constant {'true' if value else 'false'}",
                           _BOOL)
        if type_ == _FLOAT:
            value = float(value)
            if value != value or value in (float("inf"), float("-inf")):
                bits = {"inf": "0x7F800000", "-inf": "0xFF800000"}.get(
                    str(value), "0x7FC00000")
                return self.op(f"arith.constant {bits} : f32", _FLOAT)
            return self.op(f"arith.constant {value:.9e} : f32", _FLOAT)
        return self.op(f"arith.constant {int(value)} : {type_}", type_)

    def value(self, x, like):
        """x (a Value or a Python number) as a Value, constants typed as
        `like` would take them."""
        if isinstance(x, Value):
            if x.region is not self:
                self.fail("a value traced in another function")
            return x
        x = _scalar(x)
        if isinstance(x, bool):
            return self.constant(x, _BOOL if like == _BOOL else like)
        if isinstance(x, int):
            return self.constant(x, like if like in _INTS else _FLOAT)
        if isinstance(x, float):
            return self.constant(x, _FLOAT)
        self.fail(f"cannot use a {type(x).__name__} in a traced expression")

    def cast(self, v, type_):
        if v.type == type_:
            return v
        if type_ == _FLOAT:
            if v.type == _BOOL:
                return self.op(f"arith.uitofp {v.name} : i1 to f32", _FLOAT)
            i64 = self.cast(v, "i64")
            return self.op(f"arith.sitofp {i64.name} : i64 to f32", _FLOAT)
        if v.type == _FLOAT:
            self.fail("a float used as an integer (an index or a bit "
                      "operation)")
        if v.type == _BOOL:
            return self.op(f"arith.extui {v.name} : i1 to {type_}", type_)
        if _INDEX in (v.type, type_):
            return self.op(f"arith.index_cast {v.name} : {v.type} to {type_}",
                           type_)
        wider = v.type == "i32" and type_ == "i64"
        return self.op(f"arith.{'extsi' if wider else 'trunci'} {v.name} : "
                       f"{v.type} to {type_}", type_)

    def common(self, x, y, floats=False):
        """x and y as Values of one type: f32 if either is a float (or
        `floats`), i1 if both are booleans, else index."""
        x, y = _scalar(x), _scalar(y)
        kinds = [v.type if isinstance(v, Value) else
                 _BOOL if isinstance(v, bool) else
                 _INDEX if isinstance(v, int) else _FLOAT for v in (x, y)]
        if floats or _FLOAT in kinds:
            type_ = _FLOAT
        elif kinds == [_BOOL, _BOOL]:
            type_ = _BOOL
        elif kinds[0] == kinds[1]:
            type_ = kinds[0]
        else:
            type_ = _INDEX
        return (self.cast(self.value(x, type_), type_),
                self.cast(self.value(y, type_), type_))

    def binary(self, name, x, y):
        if name == "truediv":
            x, y = self.common(x, y, floats=True)
            return self.op(f"arith.divf {x.name}, {y.name} : f32", _FLOAT)
        x, y = self.common(x, y)
        t = x.type
        if name in _CMPI:
            if t == _FLOAT:
                return self.op(f"arith.cmpf {_CMPF[name]}, {x.name}, {y.name}"
                               " : f32", _BOOL)
            return self.op(f"arith.cmpi {_CMPI[name]}, {x.name}, {y.name} : "
                           f"{t}", _BOOL)
        if name in ("and", "or", "xor"):
            if t == _FLOAT:
                self.fail(f"'{name}' of floats")
            return self.op(f"arith.{name}i {x.name}, {y.name} : {t}", t)
        if t == _BOOL:
            x, y = self.cast(x, _INDEX), self.cast(y, _INDEX)
            t = _INDEX
        if t == _FLOAT:
            ops = {"add": "addf", "sub": "subf", "mul": "mulf",
                   "minimum": "minimumf", "maximum": "maximumf"}
            if name not in ops:
                self.fail(f"'{name}' of floats has no attn op")
            return self.op(f"arith.{ops[name]} {x.name}, {y.name} : f32", t)
        if name == "floordiv":
            return self.op(f"arith.floordivsi {x.name}, {y.name} : {t}", t)
        if name == "mod":
            # Python's modulo takes the divisor's sign.
            r = self.op(f"arith.remsi {x.name}, {y.name} : {t}", t)
            zero = self.constant(0, t)
            nonzero = self.op(f"arith.cmpi ne, {r.name}, {zero.name} : {t}",
                              _BOOL)
            rneg = self.op(f"arith.cmpi slt, {r.name}, {zero.name} : {t}",
                           _BOOL)
            yneg = self.op(f"arith.cmpi slt, {y.name}, {zero.name} : {t}",
                           _BOOL)
            signs = self.op(f"arith.xori {rneg.name}, {yneg.name} : i1", _BOOL)
            fix = self.op(f"arith.andi {nonzero.name}, {signs.name} : i1",
                          _BOOL)
            shifted = self.op(f"arith.addi {r.name}, {y.name} : {t}", t)
            return self.op(f"arith.select {fix.name}, {shifted.name}, {r.name}"
                           f" : {t}", t)
        ops = {"add": "addi", "sub": "subi", "mul": "muli",
               "minimum": "minsi", "maximum": "maxsi"}
        return self.op(f"arith.{ops[name]} {x.name}, {y.name} : {t}", t)

    def unary(self, name, x):
        x = self.value(x, _FLOAT)
        if name == "neg":
            if x.type == _FLOAT:
                return self.op(f"arith.negf {x.name} : f32", _FLOAT)
            return self.binary("sub", 0, x)
        if name == "invert":
            if x.type == _FLOAT:
                self.fail("'~' of a float")
            ones = self.constant(True if x.type == _BOOL else -1, x.type)
            return self.op(f"arith.xori {x.name}, {ones.name} : {x.type}",
                           x.type)
        if name == "abs":
            if x.type == _FLOAT:
                return self.op(f"math.absf {x.name} : f32", _FLOAT)
            x = self.cast(x, _INDEX) if x.type == _BOOL else x
            return self.op(f"math.absi {x.name} : {x.type}", x.type)
        x = self.cast(x, _FLOAT)
        return self.op(f"{_UNARY[name]} {x.name} : f32", _FLOAT)

    def where(self, condition, x, y):
        condition = self.value(condition, _BOOL)
        if condition.type != _BOOL:
            self.fail("where's condition is not a comparison or a boolean")
        x, y = self.common(x, y)
        return self.op(f"arith.select {condition.name}, {x.name}, {y.name} : "
                       f"{x.type}", x.type)

    def call(self, name, args, kwargs=None):
        """numpy's or torch's function `name` on traced values."""
        if name in ("clamp", "clip"):  # torch's and numpy's
            return self.value(args[0], _FLOAT).clamp(*args[1:],
                                                      **(kwargs or {}))
        if kwargs:
            self.fail(f"{name}() with keywords")
        if name in _UNARY or name in ("abs", "absolute", "negative"):
            name = {"absolute": "abs", "negative": "neg"}.get(name, name)
            return self.unary(name, args[0])
        if name in ("minimum", "maximum", "add", "subtract", "multiply",
                    "true_divide", "divide", "floor_divide", "remainder"):
            name = {"subtract": "sub", "multiply": "mul",
                    "true_divide": "truediv", "divide": "truediv",
                    "floor_divide": "floordiv",
                    "remainder": "mod"}.get(name, name)
            return self.binary(name, args[0], args[1])
        if name in ("logical_and", "logical_or", "logical_xor"):
            x, y = (self.value(a, _BOOL) for a in args[:2])
            if _BOOL not in (x.type, y.type) or x.type != y.type:
                self.fail(f"{name} of non-booleans")
            return self.binary(name[8:], x, y)
        if name == "logical_not":
            return self.unary("invert", args[0])
        if name == "where" and len(args) == 3:
            return self.where(*args)
        self.fail(f"{name}() has no attn op (supported: where, tanh, exp, "
                  "exp2, log, sqrt, abs, minimum, maximum, logical_and, "
                  "logical_or, logical_not and the arithmetic operators)")


def _scalar(x):
    """A numpy or torch scalar as the Python number it holds."""
    if not isinstance(x, (bool, int, float, Value)) and \
            getattr(x, "shape", None) == () and hasattr(x, "item"):
        return x.item()
    return x


def _operator(name, reflected=False):
    def method(self, other):
        if reflected:
            return self.region.binary(name, other, self)
        return self.region.binary(name, self, other)
    return method


class Value:
    """A traced scalar: an SSA value of the region being built."""

    __array_priority__ = 1000

    def __init__(self, region, name, type_):
        self.region, self.name, self.type = region, name, type_

    __hash__ = object.__hash__

    def __neg__(self):
        return self.region.unary("neg", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return self.region.unary("abs", self)

    def __invert__(self):
        return self.region.unary("invert", self)

    def __pow__(self, exponent):
        if isinstance(exponent, bool) or not isinstance(exponent, int) or \
                not 1 <= exponent <= 8:
            self.region.fail("'**' other than by an int from 1 to 8 has no "
                             "attn op (exp2 and log do)")
        result = self
        for _ in range(exponent - 1):
            result = result * self
        return result

    def __rpow__(self, base):
        self.region.fail("'**' with a traced exponent has no attn op (use "
                         "exp2 or exp)")

    def __bool__(self):
        self.region.fail("Python control flow on a traced value (if, while, "
                         "and, or, not, a chained comparison): use & | ~ "
                         "and where()")

    def __index__(self):
        self.region.fail("a traced value used as a Python int (an index "
                         "into a list, range(), int())")

    __int__ = __index__

    def __float__(self):
        self.region.fail("a traced value used as a Python float")

    # The tensor methods mods call on torch's index and score tensors.
    def abs(self):
        return self.region.unary("abs", self)

    def float(self):
        return self.region.cast(self, _FLOAT)

    @property
    def device(self):
        """None: a traced value lives wherever the kernel runs."""
        return None

    def to(self, dtype=None, *args, **kwargs):
        name = str(kwargs.get("dtype", dtype)).replace("torch.", "")
        if name in ("None", "cpu") or name.startswith("cuda"):
            return self  # a device: FlexAttention's and_masks moves results

        if name.startswith(("float", "bfloat", "half")):
            return self.float()
        if name.startswith(("int", "long")):
            return self.region.cast(self, _INDEX)
        if name == "bool":
            return self != 0
        self.region.fail(f".to({name}) has no attn op")

    def clamp(self, min=None, max=None):
        result = self
        if min is not None:
            result = self.region.binary("maximum", result, min)
        if max is not None:
            result = self.region.binary("minimum", result, max)
        return result

    def new_ones(self, size=(), dtype=None, **kwargs):
        """FlexAttention's noop_mask: a true (or 1) of the given type
        (`device` and the like are the kernel's)."""
        if tuple(size) != ():
            self.region.fail("new_ones of a shape other than ()")
        if "bool" in str(dtype):
            return self.region.constant(True, _BOOL)
        return self.region.constant(1, _FLOAT if "float" in str(dtype)
                                    else _INDEX)

    def tanh(self):
        return self.region.unary("tanh", self)

    def exp(self):
        return self.region.unary("exp", self)

    def exp2(self):
        return self.region.unary("exp2", self)

    def log(self):
        return self.region.unary("log", self)

    def sqrt(self):
        return self.region.unary("sqrt", self)

    def __array_ufunc__(self, ufunc, method, *args, **kwargs):
        if method != "__call__" or kwargs:
            self.region.fail(f"numpy.{ufunc.__name__}.{method} has no attn op")
        return self.region.call(ufunc.__name__, args)

    def __array_function__(self, func, types_, args, kwargs):
        if kwargs:
            self.region.fail(f"numpy.{func.__name__} with keywords")
        return self.region.call(func.__name__, args)

    @classmethod
    def __torch_function__(cls, func, types_, args=(), kwargs=None):
        region = next(a.region for a in _flatten(args) if isinstance(a, Value))
        if func.__name__ == "__getitem__" and not isinstance(args[0], Value):
            # A tensor read where the tracer did not stand in for it (in a
            # function the mod calls: FlexAttention's and_masks, say).
            return _Captured(args[0], region)[args[1]]
        return region.call(func.__name__, args, kwargs)

    def __repr__(self):
        return f"<attn traced {self.type} {self.name}>"


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or",
              "xor"):
    setattr(Value, f"__{_name}__", _operator(_name))
    setattr(Value, f"__r{_name}__", _operator(_name, reflected=True))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Value, f"__{_name}__", _operator(_name))
del _name


def _flatten(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _flatten(a)
        else:
            yield a


class _Captures:
    """The arrays the traced functions read, each an argument once."""

    def __init__(self):
        self.arrays, self.types, self.names = [], [], []

    def argument(self, array, type_):
        for i, known in enumerate(self.arrays):
            if known is array:
                return self.names[i]
        name = f"capture{len(self.arrays)}"
        self.arrays.append(array)
        self.types.append(type_)
        self.names.append(name)
        return name


class _Captured:
    """An array a traced function reads, standing in for it while tracing:
    indexing it with traced values reads the captured argument."""

    def __init__(self, array, region):
        self.array, self.region = array, region
        self.shape = tuple(int(d) for d in array.shape)
        dtype = str(array.dtype).replace("torch.", "")
        if dtype not in _ELEMENT_TYPES:
            region.fail(f"captures a {dtype} array; attn reads float32, "
                        "int32 and int64 ones")
        self.element = _ELEMENT_TYPES[dtype]
        # Dynamic sizes: one kernel serves every size of the array (a
        # table that grows with the sequence, say).
        self.tensor_type = "tensor<" + "?x" * len(self.shape) + \
            self.element + ">"


    def __len__(self):
        return self.shape[0]

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != len(self.shape):
            self.region.fail(f"reads a captured array of {len(self.shape)} "
                             f"dims with {len(index)} indices (each read "
                             "must give one element)")
        names = []
        for i in index:
            if isinstance(i, slice) or i is None or i is Ellipsis:
                self.region.fail("slices a captured array (each read must "
                                 "give one element)")
            names.append(self.region.cast(self.region.value(i, _INDEX),
                                          _INDEX).name)
        name = self.region.captures.argument(self.array, self.tensor_type)
        return self.region.op(f"tensor.extract %{name}[{', '.join(names)}] "
                              f": {self.tensor_type}", self.element)


def _is_array(x):
    return (hasattr(x, "shape") and hasattr(x, "dtype")
            and not isinstance(x, (Value, _Captured, type))
            and hasattr(x, "__getitem__"))


def _with_captures(fn, region):
    """fn with the arrays of its closure and of the globals it names
    replaced by _Captured stand-ins."""
    if not isinstance(fn, types.FunctionType):
        region.fail("is not a Python function")
    closure = None
    if fn.__closure__:
        closure = tuple(types.CellType(_Captured(c.cell_contents, region))
                        if _is_array(_cell(c)) else c for c in fn.__closure__)
    names = set(fn.__code__.co_names)
    globals_ = dict(fn.__globals__)
    for name in names:
        if name in globals_ and _is_array(globals_[name]):
            globals_[name] = _Captured(globals_[name], region)
    copy = types.FunctionType(fn.__code__, globals_, fn.__name__,
                              fn.__defaults__, closure)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


class Traced:
    """What `trace` returns: the regions' bodies (MLIR ops of the block and
    its attn.yield; empty for a mod not given), the captured arrays in
    argument order with their tensor types, and which captures the
    score_mod reads as floats (those a backward can learn)."""

    def __init__(self, mask_body, score_body, captures, learnable):
        self.mask_body, self.score_body = mask_body, score_body
        self.arrays = list(captures.arrays)
        self.argument_names = list(captures.names)
        self.tensor_types = list(captures.types)
        self.learnable = learnable

    @property
    def arguments(self):
        """", %name: type" for each capture, in order."""
        return "".join(f", %{n}: {t}" for n, t in
                       zip(self.argument_names, self.tensor_types))


def trace(mask_mod=None, score_mod=None):
    """Traces FlexAttention-style mods into attn region bodies (Traced)."""
    captures = _Captures()
    bodies = []
    for fn, args, result in ((mask_mod, ("b", "h", "q", "kv"), _BOOL),
                             (score_mod, ("s", "b", "h", "q", "kv"), _FLOAT)):
        if fn is None:
            bodies.append("")
            continue
        region = _Region(fn, captures)
        values = [Value(region, "%" + a, _FLOAT if a == "s" else _INDEX)
                  for a in args]
        out = _with_captures(fn, region)(*values)
        if result == _BOOL:
            out = region.value(out, _BOOL)
            if out.type != _BOOL:
                region.fail("mask_mod returns a non-boolean (a comparison "
                            "or a combination of them keeps a score)")
        else:
            if isinstance(out, Value) and out.type == _BOOL:
                region.fail("score_mod returns a boolean")
            out = region.cast(region.value(out, _FLOAT), _FLOAT)
        region.lines.append(f"        attn.yield {out.name} : {out.type}")
        bodies.append("\n" + "\n".join(region.lines))
    learnable = [name for name, type_ in zip(captures.names, captures.types)
                 if type_.endswith("xf32>") or type_ == "tensor<f32>"]
    if score_mod is not None:
        learnable = [n for n in learnable if f"%{n}[" in bodies[1]]
    else:
        learnable = []
    return Traced(bodies[0], bodies[1], captures, learnable)
