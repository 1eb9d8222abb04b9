// The canonical passes (canonical.h), one per file; the order they run in is
// canonicalize.cpp's kPasses.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "discover/canonical/canonical.h"

namespace fact::discover::canonical {

/// What a pass works on: the graph so far and what was dropped or rewritten before.
struct Work {
  graph::Graph& graph;
  std::vector<DroppedNode>& dropped;
  std::set<std::string>& rewritten;
};

/// Removes the nodes of `drops` (each names a node of w.graph) and makes every reference to
/// a dropped node's output read its same_as instead (chains of drops followed).
void apply_drops(Work& w, std::vector<DroppedNode> drops);

/// True when `op` is one of `ops`.
template <size_t N>
bool is_one_of(std::string_view op, const std::string_view (&ops)[N]) {
  for (auto o : ops)
    if (o == op) return true;
  return false;
}

/// True when `value` is read by no node of `g` and is not one of its outputs.
bool unread(const graph::GraphIndex& g, const std::string& value);

/// The base name of an ATen op, "relu_" of "aten.relu_.default"; "" when `op` is not
/// "aten.<base>.<overload>".
std::string_view aten_base_name(std::string_view op);

/// True when `op` writes into its first argument (ATen's convention: the base name ends in
/// one '_', as aten.relu_.default, aten.add_.Tensor; aten.__and__ is not one).
bool is_in_place(std::string_view op);

/// True when `op` always returns a view of its first argument (ATen's view ops: view,
/// _unsafe_view, expand, t, transpose, permute, slice, select, (un)squeeze, split, chunk,
/// unbind, narrow, as_strided, diagonal, unfold, unflatten, movedim, alias, detach): sizes and
/// strides change, no element is copied. reshape and flatten are not: they copy when the
/// strides do not allow a view.
bool is_view_op(std::string_view op);

/// True when `op`'s output may share storage with its first argument: views (view, reshape,
/// expand, t, transpose, permute, slice, select, (un)squeeze, ...), alias/detach, and the ops
/// that return their input itself when there is nothing to do (contiguous, to, type_as,
/// dropout with p = 0 on CPU). A write into the output is a write into the argument.
bool aliases_first_arg(std::string_view op);

/// The value whose storage `value` shares: `value` itself, or, through aliases_first_arg ops
/// and in-place ops (which return their first argument), the first value a compute node or
/// the caller made.
std::string storage_root(const graph::GraphIndex& g, const std::string& value);

/// Each pass: finds what it canonicalizes in w.graph and applies it.
void drop_assertions(Work& w);        // drop_assertions.cpp
void functional_inplace(Work& w);     // functional_inplace.cpp
void drop_aliases(Work& w);           // drop_aliases.cpp
void drop_noop_casts(Work& w);        // drop_noop_casts.cpp
void drop_identity_dropout(Work& w);  // drop_identity_dropout.cpp
void shape_only_readers(Work& w);     // shape_only_readers.cpp
void fold_scalar_constants(Work& w);  // fold_scalar_constants.cpp

}  // namespace fact::discover::canonical
