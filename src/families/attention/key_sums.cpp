#include "families/attention/key_sums.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace fact::realize {

namespace {

using Wide = __int128;

// sum_{i=0}^{n-1} floor((a * i + b) / m) for n, a, b >= 0 and m > 0 (the floor-sum recursion:
// take the whole parts of a / m and b / m out, then swap the roles of the axes).
Wide floor_sum(Wide n, Wide m, Wide a, Wide b) {
  Wide sum = 0;
  while (n > 0) {
    if (a >= m) {
      sum += n * (n - 1) / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += n * (b / m);
      b %= m;
    }
    const Wide y_max = a * n + b;
    if (y_max < m) break;
    n = y_max / m;
    b = y_max % m;
    std::swap(m, a);
  }
  return sum;
}

}  // namespace

AttentionKeySums attention_key_sums(const AttentionProblem& p, int64_t block_m, int64_t block_n) {
  const Wide bm = block_m, bn = block_n, seq_k = p.seq_k, w = p.window;
  const int64_t n = (p.seq_q + block_m - 1) / block_m;
  AttentionKeySums s;
  s.query_blocks = n;
  if (p.mask != MaskKind::causal) {
    const int64_t blocks = attention_tile_keys(p, 0, block_m, block_n).blocks(block_n);
    s.blocks = n * blocks;
    s.max_blocks = blocks;
    s.keys = n * p.seq_k;
    return s;
  }
  const Wide last_block = (seq_k - 1) / bn;
  auto ceil_div = [](Wide a, Wide b) { return (a + b - 1) / b; };
  // From t_end on, end = seq_k; from t_window on, the first key q0 - w + 1 is past 0; from
  // t_cap on, its block is past seq_k's last and B is capped there (only once end = seq_k).
  const Wide t_end = std::max<Wide>(0, ceil_div(seq_k, bm) - 1);
  const Wide t_window = w > 0 ? ceil_div(w, bm) : Wide(n);
  const Wide t_cap = w > 0 ? ceil_div((last_block + 1) * bn + w - 1, bm) : Wide(n);
  std::vector<Wide> cuts{0, t_end, t_window, t_cap, Wide(n)};
  for (Wide& c : cuts) c = std::clamp<Wide>(c, 0, n);
  std::sort(cuts.begin(), cuts.end());

  Wide blocks = 0, keys = 0;
  int64_t max_blocks = 0;
  const Wide period = bn / std::gcd(block_m, block_n);
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const Wide lo = cuts[i], len = cuts[i + 1] - cuts[i];
    if (len == 0) continue;
    // sum over qb in [lo, lo + len) of ceil(end / bn), of end, and of B.
    Wide end_blocks, ends, first_blocks;
    if (lo < t_end) {  // end = (qb + 1) * bm
      end_blocks = floor_sum(len, bn, bm, bm * lo + bm + bn - 1);
      ends = bm * (len * lo + len * (len - 1) / 2 + len);
    } else {
      end_blocks = len * ceil_div(seq_k, bn);
      ends = len * seq_k;
    }
    if (lo >= t_cap) first_blocks = len * last_block;
    else if (lo >= t_window) first_blocks = floor_sum(len, bn, bm, bm * lo - w + 1);
    else first_blocks = 0;
    blocks += end_blocks - first_blocks;
    keys += ends - bn * first_blocks;
    // The run's first and last periods hold its largest count.
    auto visit = [&](Wide qb) {
      max_blocks = std::max(max_blocks, attention_tile_keys(p, int64_t(qb * bm), block_m, block_n).blocks(block_n));
    };
    for (Wide qb = lo; qb < lo + std::min(len, period); ++qb) visit(qb);
    for (Wide qb = std::max(lo, lo + len - period); qb < lo + len; ++qb) visit(qb);
  }
  s.blocks = int64_t(blocks);
  s.max_blocks = max_blocks;
  s.keys = int64_t(keys);
  return s;
}

}  // namespace fact::realize
