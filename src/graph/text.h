// Canonical text form of the FACT graph (docs/02-graph-format.md): printer and parser.
//
//   graph Model {
//     input %x : f32[8,4]{4,1}
//     parameter %p_w : f32[4,4]{4,1} = "w"
//     %mm : f32[8,4]{4,1} = aten.mm.default(%x, %p_w)
//     output (%mm)
//   }
#pragma once

#include <string>
#include <string_view>

#include "graph/graph.h"

namespace fact::graph {

/// The canonical text of a graph: one item per line, two-space indent, final newline.
std::string print_text(const Graph& graph);

/// Parses the text form and validates the graph. Throws fact::Error with
/// "<source>:<line>:<column>: <what was expected>, found <what was there>".
Graph parse_text(std::string_view text, std::string_view source = "<text>");

/// True when `op` is a word the text form reads as an op name: a letter or '_', then
/// letters, digits, '_' and '.' (aten.mm.default). Graph validation requires it of every
/// node's op, so every graph that reads, from JSON or text, prints as text that reads back.
bool is_op_name(std::string_view op);

/// True when `name` reads back after '%' in the text form: one or more letters, digits, '_'
/// and '.' (value names as torch.fx makes them: x, linear_1, split.0).
bool is_value_name(std::string_view name);

/// Pieces of the text form, shared with other printers (e.g. the plan text).
std::string format_type(const TensorType& type);  // f32[8,4]{4,1}
std::string format_arg(const Arg& arg);           // %x, 2, 1e-05, "s", [1, 2], dtype(f32)
/// Shortest text that reads back to the same double, always with '.' or an exponent
/// (2.0, 1e-05), or inf, -inf, nan.
std::string format_double(double value);
/// Double-quoted with \" \\ \n \t \r escapes.
std::string quote(std::string_view s);

}  // namespace fact::graph
