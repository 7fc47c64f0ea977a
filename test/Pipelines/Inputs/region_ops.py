"""Prints one attention function per op that a region may use (every op the
CPU reference interpreter evaluates), so that a lit test can lower them all
to PTX. Usage: region_ops.py"""

HEADER = """func.func @{name}(%q: tensor<?x2x?x16xf16>, %k: tensor<?x2x?x16xf16>,
    %v: tensor<?x2x?x16xf16>, %o: tensor<?x2x?x16xf16>, %cap: tensor<?xf32>,
    %ids: tensor<?xi32>) -> tensor<?x2x?x16xf16> {{
  %res = attn.attention ins(%q, %k, %v : tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>)
      outs(%o : tensor<?x2x?x16xf16>)
      score_mod {{
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %i = arith.index_cast %qi : index to i64
        %j = arith.index_cast %kv : index to i64
        %one = arith.constant 1 : i64
        %j1 = arith.addi %j, %one : i64
        %x = arith.sitofp %i : i64 to f32
{body}
        attn.yield %r : f32
      }}
      -> tensor<?x2x?x16xf16>
  return %res : tensor<?x2x?x16xf16>
}}
"""

# op -> the body computing %r (f32) from %s, %i, %j1 (i64, never 0), %x.
INT_BINARY = ["addi", "subi", "muli", "divsi", "divui", "remsi", "remui",
              "ceildivsi", "floordivsi", "maxsi", "maxui", "minsi", "minui",
              "andi", "ori", "xori"]
FLOAT_BINARY = ["addf", "subf", "mulf", "divf", "maximumf", "minimumf",
                "maxnumf", "minnumf"]
MATH_UNARY = ["absf", "exp", "exp2", "log", "sqrt", "tanh"]

bodies = {}
for op in INT_BINARY:
    bodies[op] = f"""        %n = arith.{op} %i, %j1 : i64
        %f = arith.sitofp %n : i64 to f32
        %r = arith.addf %s, %f : f32"""
for op in FLOAT_BINARY:
    bodies[op] = f"""        %r = arith.{op} %s, %x : f32"""
for op in MATH_UNARY:
    bodies[op] = f"""        %r = math.{op} %s : f32"""
bodies["absi"] = """        %n = math.absi %i : i64
        %f = arith.sitofp %n : i64 to f32
        %r = arith.addf %s, %f : f32"""
bodies["fma"] = """        %r = math.fma %s, %x, %s : f32"""
bodies["negf"] = """        %r = arith.negf %s : f32"""
bodies["cmpf_select"] = """        %c = arith.cmpf olt, %s, %x : f32
        %r = arith.select %c, %s, %x : f32"""
bodies["cmpi"] = """        %c = arith.cmpi slt, %i, %j1 : i64
        %z = arith.constant 0.0 : f32
        %r = arith.select %c, %s, %z : f32"""
bodies["casts"] = """        %t = arith.trunci %i : i64 to i32
        %e = arith.extsi %t : i32 to i64
        %u = arith.extui %t : i32 to i64
        %a = arith.addi %e, %u : i64
        %idx = arith.index_castui %a : i64 to index
        %back = arith.index_cast %idx : index to i64
        %f = arith.uitofp %back : i64 to f32
        %half = arith.truncf %f : f32 to f16
        %g = arith.extf %half : f16 to f32
        %n = arith.fptosi %g : f32 to i32
        %nf = arith.sitofp %n : i32 to f32
        %r = arith.addf %s, %nf : f32"""
bodies["extract"] = """        %c = tensor.extract %cap[%h] : tensor<?xf32>
        %d = tensor.extract %ids[%kv] : tensor<?xi32>
        %df = arith.sitofp %d : i32 to f32
        %e = arith.addf %c, %df : f32
        %r = arith.addf %s, %e : f32"""

for name, body in bodies.items():
    print(HEADER.format(name=name, body=body))
