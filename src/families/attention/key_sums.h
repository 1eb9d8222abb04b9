// What the attention cost models count over every query block of a problem, in closed form:
// the key blocks and keys the tiles visit (attention_tile_keys), summed and maxed over the
// ceil(seq_q / block_m) query blocks without visiting each (a plan may hold seq_q up to
// 2^31 - 1, and every configuration of the space is estimated).
#pragma once

#include <cstdint>

#include "families/attention/problem.h"

namespace fact::realize {

struct AttentionKeySums {
  int64_t query_blocks = 0;  // ceil(seq_q / block_m): tiles a head
  int64_t blocks = 0;        // sum over the query blocks of attention_tile_keys(...).blocks(block_n)
  int64_t max_blocks = 0;    // the most any query block visits
  int64_t keys = 0;          // sum of end - begin: the K/V rows the tiles read
};

/// The sums for query blocks of `block_m` rows and key blocks of `block_n` (both > 0), equal
/// to visiting qb = 0 .. query_blocks - 1 with attention_tile_keys(p, qb * block_m, block_m,
/// block_n), in O(block_n) steps. How: a causal tile's key range is
/// [B(qb) * block_n, end(qb)) with end = min(seq_k, (qb + 1) * block_m) and B the block of the
/// first row's first key, capped at end's block (problem.h). Split where those minima and
/// maxima change sides (at most four runs of qb), each run's ceil(end / block_n) and B are
/// constants or floor((block_m * qb + c) / block_n), summed by the floor-sum recursion
/// (AtCoder Library's floor_sum). Within a run the blocks are monotone or periodic with
/// period block_n / gcd(block_m, block_n), so the maximum lies in its first or last period.
AttentionKeySums attention_key_sums(const AttentionProblem& p, int64_t block_m, int64_t block_n);

}  // namespace fact::realize
